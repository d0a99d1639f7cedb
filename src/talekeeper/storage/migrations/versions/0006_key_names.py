"""Evidence keys keep their names (the terms of their capitalised words), which a question
that names no one reaches a second key through. Keys are derived from the story, so the
existing ones are dropped and their memories marked unkeyed: the embedding pass reads them
again, names included, over the following turns (until then those memories rank by their
own text, as before keys existed).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("memory_keys", sa.Column("names", sa.Text(), nullable=False, server_default=""))
    op.execute(sa.text("DELETE FROM memory_keys"))
    op.execute(sa.text("UPDATE memories SET keyed = :no").bindparams(no=False))


def downgrade() -> None:
    op.drop_column("memory_keys", "names")
