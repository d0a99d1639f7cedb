"""An adventure's own section budgets (docs/context.md, "Section budgets"):
``adventures.section_budgets`` holds the shares and ceilings the player set for the
Memories, Story Cards, Knowledge and Current state, as JSON (``services.prompt.budgets``
checks it); NULL, as every adventure starts, is the documented defaults.

Native ALTER TABLE only: a batch "move and copy" of ``adventures`` would drop the table,
and with foreign keys on that drop cascades to every row that refers to it.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-07
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from talekeeper.storage.sqlite import require_native_alter

revision: str = "0020"
down_revision: str | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("adventures", sa.Column("section_budgets", sa.Text(), nullable=True))


def downgrade() -> None:
    require_native_alter(op.get_bind(), "downgrade")
    op.drop_column("adventures", "section_budgets")
