"""The world of a story from before the world was kept (docs/world.md): ``world_backlog``
lists each adventure that has no world yet, one row each, so that the start of background
work reads its whole story with the rules once (``services.exchange.backlog``), as an
import of an older file does, and deletes its row. An adventure made after this revision
is read action by action as it is written, and gets no row; one that already has a world
(entities or events) is not listed.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-09
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Row ids: BIGINT on PostgreSQL; on SQLite INTEGER, whose key is the 64-bit rowid.
ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "world_backlog",
        sa.Column("adventure_id", ID, nullable=False),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("last_failure_at", sa.DateTime(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["adventure_id"],
            ["adventures.id"],
            name=op.f("fk_world_backlog_adventure_id_adventures"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("adventure_id", name=op.f("pk_world_backlog")),
    )
    now = datetime.now(UTC).replace(tzinfo=None)  # stored as naive UTC, as every time is
    op.execute(
        sa.text(
            "INSERT INTO world_backlog (adventure_id, failures, created_at) "
            "SELECT id, 0, :now FROM adventures a "
            "WHERE NOT EXISTS (SELECT 1 FROM world_events e WHERE e.adventure_id = a.id) "
            "AND NOT EXISTS (SELECT 1 FROM world_entities w WHERE w.adventure_id = a.id)"
        ).bindparams(sa.bindparam("now", now, type_=sa.DateTime()))
    )


def downgrade() -> None:
    op.drop_table("world_backlog")
