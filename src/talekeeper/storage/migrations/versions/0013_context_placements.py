"""What a reply's prompt leaves for the next turn gets a table of its own
(``context_placements``): where the ``cache`` layout put what may change between turns, and
which cards the Story Cards section held. The next turn read it back from the reply's
Insights snapshot, a display format with no schema; it reads this table instead.

Each existing snapshot that recorded a ``cache`` placement gives its row, read as the turn
read it (the layout named ``cache``, a history start that is a depth or none, a
``floating`` object whose entries with a depth and a digest count, the held cards when the
snapshot listed them). A snapshot that is not JSON, is not an object, or has no such layout
gives none: its next turn places everything anew, as it would have. The snapshots
themselves are left as they are.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-09
"""

import json
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Row ids: BIGINT on PostgreSQL; on SQLite INTEGER, whose key is the 64-bit rowid.
ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
VERSION = 1  # ``services.prompt.placement.PLACEMENT_VERSION`` when this was written
PAGE = 500  # snapshots read per statement: a snapshot can be tens of kilobytes
DEPTH_MAX = 2**31 - 1  # depths are 32-bit columns
DIGEST_MAX = 64


def upgrade() -> None:
    op.create_table(
        "context_placements",
        sa.Column("action_id", ID, nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("history_start", sa.Integer(), nullable=True),
        sa.Column("top_digest", sa.String(length=DIGEST_MAX), nullable=False),
        sa.Column("floating", sa.Text(), nullable=False),
        sa.Column("cards_held", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["action_id"],
            ["actions.id"],
            name=op.f("fk_context_placements_action_id_actions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("action_id", name=op.f("pk_context_placements")),
    )
    bind = op.get_bind()
    page = sa.text(
        "SELECT action_id, data FROM insights WHERE action_id > :after "
        "ORDER BY action_id LIMIT :page"
    )
    insert = sa.text(
        "INSERT INTO context_placements "
        "(action_id, version, history_start, top_digest, floating, cards_held) "
        "VALUES (:action_id, :version, :history_start, :top_digest, :floating, :cards_held)"
    )
    after = 0
    while True:
        rows = bind.execute(page, {"after": after, "page": PAGE}).all()
        if not rows:
            return
        found = [row for row in (placement(a, d) for a, d in rows) if row is not None]
        if found:
            bind.execute(insert, found)
        after = rows[-1][0]


def placement(action_id: int, data: str) -> dict[str, object] | None:
    """The row a snapshot's ``layout`` gives, or None; never raises on odd data."""
    try:
        snapshot = json.loads(data)
    except ValueError:
        return None
    layout = snapshot.get("layout") if isinstance(snapshot, dict) else None
    if not isinstance(layout, dict) or layout.get("name") != "cache":
        return None
    start, spots = layout.get("history_start_depth"), layout.get("floating")
    if not (start is None or _depth(start)) or not isinstance(spots, dict):
        return None
    floating = {
        str(name): [spot["at_depth"], spot["digest"]]
        for name, spot in spots.items()
        if isinstance(spot, dict)
        and _depth(spot.get("at_depth"))
        and isinstance(spot.get("digest"), str)
    }
    top = layout.get("top_digest")
    top = top if isinstance(top, str) and len(top) <= DIGEST_MAX else ""
    held = layout.get("cards_held")
    cards = None
    if isinstance(held, list):
        cards = [c for c in held if isinstance(c, int) and not isinstance(c, bool)]
    return {
        "action_id": action_id,
        "version": VERSION,
        "history_start": start,
        "top_digest": top,
        "floating": json.dumps(floating, ensure_ascii=False, separators=(",", ":")),
        "cards_held": None if cards is None else json.dumps(cards, separators=(",", ":")),
    }


def _depth(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= DEPTH_MAX


def downgrade() -> None:
    op.drop_table("context_placements")
