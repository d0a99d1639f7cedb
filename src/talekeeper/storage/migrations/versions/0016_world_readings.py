"""A world model's reading of a reply (docs/world.md): ``world_readings`` holds one row per
reply the adventure's world model has read, so each reply costs at most one extraction
call; an edit of the reply or of the action it answers deletes its row, and the reply is
read again.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Row ids: BIGINT on PostgreSQL; on SQLite INTEGER, whose key is the 64-bit rowid.
ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "world_readings",
        sa.Column("action_id", ID, nullable=False),
        sa.Column("adventure_id", ID, nullable=False),
        sa.Column("model", sa.String(length=255), nullable=False),
        sa.Column("found", sa.Integer(), nullable=False),
        sa.Column("kept", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["action_id"],
            ["actions.id"],
            name=op.f("fk_world_readings_action_id_actions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["adventure_id"],
            ["adventures.id"],
            name=op.f("fk_world_readings_adventure_id_adventures"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("action_id", name=op.f("pk_world_readings")),
    )
    op.create_index(
        op.f("ix_world_readings_adventure_id"), "world_readings", ["adventure_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_world_readings_adventure_id"), table_name="world_readings")
    op.drop_table("world_readings")
