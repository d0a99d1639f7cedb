"""The capacity pass: beyond the bank's capacity, memories are forgotten (docs/memory.md §4).

Invariants:

- Capacity counts the active memories on the current path (what retrieval can see);
  the overflow is marked forgotten in the order ``eviction.choose_evictions`` gives.
  Forgotten memories stay listed and are never retrieved; pinned ones are never
  forgotten.
- Nothing is generated: the read only tells whether the path is over capacity (no
  write lock is taken when it is not), and the save chooses again from what is there
  under the write lock, so a pin, a turn or an undo that landed after the read is
  always part of the choice.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from talekeeper.core.lineage import Lineage
from talekeeper.services.memory.bank import set_status
from talekeeper.services.memory.eviction import EvictionCandidate, choose_evictions
from talekeeper.services.memory.passes.work import Work
from talekeeper.services.memory.source import path_of
from talekeeper.storage.models import Adventure, Memory
from talekeeper.storage.repositories.memory import MemoryRepository
from talekeeper.storage.vocabulary import MemoryStatus


class Evict:
    name = "eviction"

    def __init__(self, work: Work) -> None:
        self.work = work

    def read(self, session: Session, adventure: Adventure) -> list[int]:
        return [] if self._over(session, adventure) is None else [adventure.id]

    async def generate(self, adventure_id: int) -> None:
        return None

    def save(self, session: Session, adventure: Adventure, due: int, result: None) -> bool:
        lineage = self._over(session, adventure)
        if lineage is None:
            return False
        active = MemoryRepository(session).memories(adventure.id, lineage, (MemoryStatus.ACTIVE,))
        chosen = choose_evictions([_candidate(m) for m in active], self.work.models.bank_capacity)
        by_id = {m.id: m for m in active}
        set_status(session, [by_id[i] for i in chosen], MemoryStatus.FORGOTTEN, self.work.cache)
        return bool(chosen)

    def _over(self, session: Session, adventure: Adventure) -> Lineage | None:
        """The current path, when it holds more active memories than the capacity."""
        lineage = path_of(session, adventure).lineage
        count = MemoryRepository(session).count_memories(adventure.id, lineage, MemoryStatus.ACTIVE)
        return lineage if count > self.work.models.bank_capacity else None


def _candidate(memory: Memory) -> EvictionCandidate:
    return EvictionCandidate(
        id=memory.id,
        source_start=memory.source_start,
        source_end=memory.source_end,
        pinned=memory.pinned,
        use_count=memory.use_count,
        last_used=memory.last_used_at.timestamp() if memory.last_used_at else None,
        created=memory.created_at.timestamp(),
    )
