"""The stale refresh: re-derives memories whose source text was edited (docs/memory.md §6).

Invariants:

- At most ``STALE_PER_RUN`` automatic stale memories a run, the current path's first
  (the summary waits for them, see ``summary``), picked from the oldest
  ``STALE_SCAN``.
- A stale memory whose source is gone (no action of its range is on its branch any
  more) is withdrawn, with no model call.
- The new text is saved only if the memory is still stale, every action it was
  written from is still active with the text that was read, and its range still reads
  the same actions (a gap joined to it meanwhile means the next run rewrites it
  whole); otherwise nothing is written and the memory stays stale for the next run.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from talekeeper.core.lineage import on_lineage
from talekeeper.services.memory.bank import set_status, set_text
from talekeeper.services.memory.passes.work import Work
from talekeeper.services.memory.source import (
    Material,
    material,
    source_block,
    source_rows,
    still_there,
)
from talekeeper.services.memory.writer import block_text
from talekeeper.storage.models import Adventure
from talekeeper.storage.repositories.memory import COVERING, MemoryRepository, PathRow
from talekeeper.storage.vocabulary import MemoryOrigin, MemoryStatus

STALE_PER_RUN = 5  # re-derivations of edited memories per run
STALE_SCAN = 200  # stale rows looked at to pick the current path's first


@dataclass(frozen=True)
class Stale:
    memory_id: int
    rows: list[PathRow]  # its source as it stands; empty: the source is gone
    lead: str
    facts: Material


class RefreshStale:
    name = "stale refresh"

    def __init__(self, work: Work) -> None:
        self.work = work

    def read(self, session: Session, adventure: Adventure) -> list[Stale]:
        facts = material(session, adventure)
        stale = MemoryRepository(session).stale_memories(adventure.id, STALE_SCAN)
        # The current path's first: the summary waits for them (see ``summary``).
        stale.sort(key=lambda m: (not on_lineage(facts.lineage, m.branch_id, m.depth), m.id))
        chosen = [m for m in stale if m.origin == MemoryOrigin.AUTO][:STALE_PER_RUN]
        return [Stale(m.id, *source_block(session, m, facts.lead), facts) for m in chosen]

    async def generate(self, stale: Stale) -> str | None:
        if not stale.rows:
            return None  # nothing to write from: the save withdraws it
        return await self.work.memory_text(
            stale.facts, block_text(stale.rows, stale.facts.lead), stale.lead
        )

    def save(self, session: Session, adventure: Adventure, stale: Stale, text: str | None) -> bool:
        memory = MemoryRepository(session).memory(stale.memory_id)
        if text is None:
            if memory is not None and memory.status in COVERING:
                set_status(session, [memory], MemoryStatus.WITHDRAWN, self.work.cache)
            return True
        if memory is None or not memory.stale or not still_there(session, stale.rows):
            return False
        if [r.id for r in source_rows(session, memory)] != [r.id for r in stale.rows]:
            return False  # a gap joined it during the call: the next run rewrites it whole
        memory.writer = self.work.writer
        set_text(session, memory, text, self.work.cache)
        return True
