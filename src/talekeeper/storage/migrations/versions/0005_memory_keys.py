"""Memories keep their evidence: ``memory_keys`` holds the source passages each memory is
also retrieved by, and ``memories.keyed`` says whether they were read from the source as
it stands. Existing memories start unkeyed; the embedding pass reads their keys over the
following turns.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Row ids: BIGINT on PostgreSQL; on SQLite INTEGER, whose key is the 64-bit rowid.
ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    # Native ALTER TABLE: a batch copy of ``memories`` would drop the table, and its
    # foreign keys would cascade the drop to every use record.
    op.add_column(
        "memories",
        sa.Column("keyed", sa.Boolean(), nullable=False, server_default=sa.false()),
    )
    op.create_table(
        "memory_keys",
        sa.Column("id", ID, nullable=False),
        sa.Column("memory_id", ID, nullable=False),
        sa.Column("adventure_id", ID, nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("depth", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("terms", sa.Text(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=True),
        sa.Column("vector_model", sa.String(length=255), nullable=True),
        sa.ForeignKeyConstraint(
            ["memory_id"],
            ["memories.id"],
            name=op.f("fk_memory_keys_memory_id_memories"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["adventure_id"],
            ["adventures.id"],
            name=op.f("fk_memory_keys_adventure_id_adventures"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_memory_keys")),
    )
    op.create_index(
        "ix_memory_keys_memory_id_position", "memory_keys", ["memory_id", "position"], unique=False
    )
    op.create_index(
        op.f("ix_memory_keys_adventure_id"), "memory_keys", ["adventure_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_memory_keys_adventure_id"), table_name="memory_keys")
    op.drop_index("ix_memory_keys_memory_id_position", table_name="memory_keys")
    op.drop_table("memory_keys")
    op.drop_column("memories", "keyed")
