"""Background-work claims belong to a process; adventures keep their count of action rows.

``derived_jobs.claimed_by`` records which worker holds a claim (a claim from before
this revision has none, and the next worker to start releases it, as every start
did then). ``adventures.action_rows`` is filled from the rows each adventure has.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from talekeeper.storage.sqlite import require_native_alter

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Native ALTER TABLE only: a batch "move and copy" of ``adventures`` would drop it, and
    # with foreign keys on that drop cascades to every branch, action and memory.
    op.add_column("derived_jobs", sa.Column("claimed_by", sa.String(length=64), nullable=True))
    op.add_column("adventures", sa.Column("action_rows", sa.Integer(), nullable=True))
    op.execute(
        "UPDATE adventures SET action_rows = "
        "(SELECT count(*) FROM actions WHERE actions.adventure_id = adventures.id)"
    )


def downgrade() -> None:
    require_native_alter(op.get_bind(), "downgrade")
    op.drop_column("adventures", "action_rows")
    op.drop_column("derived_jobs", "claimed_by")
