"""Playing together (docs/sharing.md): ``turn_queue``, one row per turn waiting for or
holding its adventure's turn (turns one at a time, in arrival order);
``adventures.turn_order`` (``free``, every adventure's until its host says otherwise, or
``round_robin``); and ``adventure_presence``, who has an adventure open and who is
writing. New tables and a column with a default: no row is moved.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-07
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from talekeeper.storage.sqlite import require_native_alter

revision: str = "0025"
down_revision: str | None = "0024"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "turn_queue",
        sa.Column("id", ID, nullable=False),
        sa.Column("adventure_id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("seen_at", sa.DateTime(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("reply_so_far", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["adventure_id"],
            ["adventures.id"],
            name=op.f("fk_turn_queue_adventure_id_adventures"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_turn_queue_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_turn_queue")),
    )
    op.create_index(
        op.f("ix_turn_queue_adventure_id"), "turn_queue", ["adventure_id"], unique=False
    )
    op.create_table(
        "adventure_presence",
        sa.Column("id", ID, nullable=False),
        sa.Column("adventure_id", ID, nullable=False),
        sa.Column("user_id", ID, nullable=False),
        sa.Column("seen_at", sa.DateTime(), nullable=False),
        sa.Column("writing_at", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["adventure_id"],
            ["adventures.id"],
            name=op.f("fk_adventure_presence_adventure_id_adventures"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_adventure_presence_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_adventure_presence")),
        sa.UniqueConstraint(
            "adventure_id", "user_id", name=op.f("uq_adventure_presence_adventure_id_user_id")
        ),
    )
    op.create_index(
        op.f("ix_adventure_presence_adventure_id"),
        "adventure_presence",
        ["adventure_id"],
        unique=False,
    )
    op.add_column(
        "adventures",
        sa.Column("turn_order", sa.String(12), nullable=False, server_default="free"),
    )


def downgrade() -> None:
    require_native_alter(op.get_bind(), "downgrade")
    op.drop_column("adventures", "turn_order")
    op.drop_index(op.f("ix_adventure_presence_adventure_id"), table_name="adventure_presence")
    op.drop_table("adventure_presence")
    op.drop_index(op.f("ix_turn_queue_adventure_id"), table_name="turn_queue")
    op.drop_table("turn_queue")
