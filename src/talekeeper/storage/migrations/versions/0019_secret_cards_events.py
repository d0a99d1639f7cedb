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

from talekeeper.storage.sqlite import require_native_alter

revision: str = "0019"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("story_cards", "world_events")


def upgrade() -> None:
    for table in TABLES:
        op.add_column(table, sa.Column("known_by", sa.Text(), nullable=True))


def downgrade() -> None:
    require_native_alter(op.get_bind(), "downgrade")
    for table in reversed(TABLES):
        op.drop_column(table, "known_by")
