"""The lore clerk's card proposals (docs/world.md, "The lore clerk"): ``card_proposals``,
one row per entity the story suggested a card for, with its draft, the sentences it rests
on and the player's decision; ``adventures.auto_accept_cards``, whether they become cards
without asking (off, as every adventure starts). Nothing is derived here: an existing
story's proposals are found by the clerk's pass after its next turn.

Native ALTER TABLE only: a batch "move and copy" of ``adventures`` would drop the table,
and with foreign keys on that drop cascades to every row that refers to it.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-07
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from talekeeper.storage.sqlite import require_native_alter

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Row ids: BIGINT on PostgreSQL; on SQLite INTEGER, whose key is the 64-bit rowid.
ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "card_proposals",
        sa.Column("id", ID, nullable=False),
        sa.Column("adventure_id", ID, nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("state", sa.String(length=12), nullable=False),
        sa.Column("key", sa.String(length=120), nullable=False),
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("keys", sa.Text(), nullable=False),
        sa.Column("entry", sa.Text(), nullable=False),
        sa.Column("evidence", sa.Text(), nullable=False),
        sa.Column("drafter", sa.String(length=255), nullable=True),
        sa.Column("card_id", ID, nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["adventure_id"],
            ["adventures.id"],
            name=op.f("fk_card_proposals_adventure_id_adventures"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["card_id"],
            ["story_cards.id"],
            name=op.f("fk_card_proposals_card_id_story_cards"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_card_proposals")),
    )
    op.create_index(
        op.f("ix_card_proposals_adventure_id"), "card_proposals", ["adventure_id"], unique=False
    )
    op.add_column(
        "adventures",
        sa.Column("auto_accept_cards", sa.Boolean(), server_default=sa.false(), nullable=False),
    )


def downgrade() -> None:
    require_native_alter(op.get_bind(), "downgrade")
    op.drop_column("adventures", "auto_accept_cards")
    op.drop_index(op.f("ix_card_proposals_adventure_id"), table_name="card_proposals")
    op.drop_table("card_proposals")
