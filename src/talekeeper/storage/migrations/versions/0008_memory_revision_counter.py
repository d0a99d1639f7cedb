"""A memory's revision comes from its adventure's counter (``adventures.memory_revision``),
bumped under the adventure row's lock, and no two memories of an adventure share one (a
unique index). Taking ``max + 1`` of the memories raced between two writers that did not
see each other's rows, and a cache in a third process then missed one of the two memories.

Existing revisions are numbered again 1..n per adventure in their order (revision, id),
which removes the duplicates that a bulk change used to give, and each counter starts at
its adventure's n. A running process's cache sees the revisions go down and reads its
bank again.

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

INDEX = "ix_memories_adventure_id_revision"
BATCH = 5000  # rows renumbered per statement


def upgrade() -> None:
    op.add_column(
        "adventures",
        sa.Column("memory_revision", sa.Integer(), nullable=False, server_default="0"),
    )
    op.drop_index(INDEX, table_name="memories")
    bind = op.get_bind()
    rows = bind.execute(
        sa.text("SELECT id, adventure_id FROM memories ORDER BY adventure_id, revision, id")
    ).all()
    counts: dict[int, int] = {}
    changes: list[dict[str, int]] = []
    for memory_id, adventure_id in rows:
        counts[adventure_id] = counts.get(adventure_id, 0) + 1
        changes.append({"id": memory_id, "revision": counts[adventure_id]})
    renumber = sa.text("UPDATE memories SET revision = :revision WHERE id = :id")
    for start in range(0, len(changes), BATCH):
        bind.execute(renumber, changes[start : start + BATCH])
    counter = sa.text("UPDATE adventures SET memory_revision = :top WHERE id = :id")
    if counts:
        bind.execute(counter, [{"id": a, "top": top} for a, top in counts.items()])
    op.create_index(INDEX, "memories", ["adventure_id", "revision"], unique=True)


def downgrade() -> None:
    op.drop_index(INDEX, table_name="memories")
    op.create_index(INDEX, "memories", ["adventure_id", "revision"], unique=False)
    # Native ALTER TABLE (SQLite 3.35+): a batch copy of ``adventures`` would drop the
    # table, and with foreign keys on that drop cascades to its whole story.
    op.drop_column("adventures", "memory_revision")
