"""Who knows what (docs/world.md, "Who knows what"): ``adventures.witness_mode`` says what
a turn does with a memory the character the player addresses did not witness: ``label``
it (every adventure, old ones included, starts here), leave it out (``strict``), or
nothing (``off``). ``memories.known_by`` makes a memory a secret of the characters it
names (a JSON list of names; NULL, as every memory starts, for none).

Native ALTER TABLE only: a batch "move and copy" of ``adventures`` or ``memories`` would
drop the table, and with foreign keys on that drop cascades to every row that refers to it.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from talekeeper.storage.sqlite import require_native_alter

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "adventures",
        sa.Column("witness_mode", sa.String(8), nullable=False, server_default="label"),
    )
    op.add_column("memories", sa.Column("known_by", sa.Text(), nullable=True))


def downgrade() -> None:
    require_native_alter(op.get_bind(), "downgrade")
    op.drop_column("memories", "known_by")
    op.drop_column("adventures", "witness_mode")
