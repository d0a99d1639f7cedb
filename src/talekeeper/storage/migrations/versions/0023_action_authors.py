"""Who wrote each player's action (docs/sharing.md): ``actions.author_id`` and
``actions.author_name`` (the persona at the time), NULL for every row written before.
Native ALTER TABLE only (nullable columns): no row is moved.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-07
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from talekeeper.storage.sqlite import require_native_alter

revision: str = "0023"
down_revision: str | None = "0022"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.add_column("actions", sa.Column("author_id", ID, nullable=True))
    op.add_column("actions", sa.Column("author_name", sa.String(length=120), nullable=True))


def downgrade() -> None:
    require_native_alter(op.get_bind(), "downgrade")
    op.drop_column("actions", "author_name")
    op.drop_column("actions", "author_id")
