"""Secrets on cards and events (docs/world.md, "Who knows what"): ``story_cards.known_by``
and ``world_events.known_by`` make a card or an event a secret of the characters they
name (a JSON list of names; NULL, as every card and event starts, for none), as
``memories.known_by`` does for a memory since 0018.

Native ALTER TABLE only, as in 0018: a batch "move and copy" of ``world_events`` or
``story_cards`` would drop the table, and other rows refer to both.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-06
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("story_cards", "world_events")


def upgrade() -> None:
    for table in TABLES:
        op.add_column(table, sa.Column("known_by", sa.Text(), nullable=True))


def downgrade() -> None:
    _require_native_drop()
    for table in reversed(TABLES):
        op.drop_column(table, "known_by")


def _require_native_drop() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    found = str(bind.exec_driver_sql("select sqlite_version()").scalar() or "0")
    version = tuple(int(p) for p in found.split("."))
    if version < (3, 35, 0):
        raise RuntimeError(
            f"Talekeeper needs SQLite 3.35 or newer to downgrade this database (this Python "
            f"has {found}): use a Python built with a newer SQLite."
        )
