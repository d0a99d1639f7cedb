"""The feed of a shared adventure (docs/sharing.md): ``adventure_feed``, one row per change
of its story or its members, written with the change, read by its members' pages from the
last one they saw. A new table only: no row is moved.

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-07
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024"
down_revision: str | None = "0023"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "adventure_feed",
        sa.Column("id", ID, nullable=False),
        sa.Column("adventure_id", ID, nullable=False),
        sa.Column("kind", sa.String(length=12), nullable=False),
        sa.Column("data", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["adventure_id"],
            ["adventures.id"],
            name=op.f("fk_adventure_feed_adventure_id_adventures"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_adventure_feed")),
    )
    op.create_index(
        op.f("ix_adventure_feed_adventure_id"), "adventure_feed", ["adventure_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_adventure_feed_adventure_id"), table_name="adventure_feed")
    op.drop_table("adventure_feed")
