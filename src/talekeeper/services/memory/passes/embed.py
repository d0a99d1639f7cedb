"""The embedding passes: a new model's vectors replace the old one's, memories get their
evidence keys, then memories and keys get vectors (docs/memory.md §4, §5).

Run only when the adventure has an embedding model, in this order, each through the
seam; nothing is done while the adventure's Memory Bank is off.

Invariants:

- ``RetireVectors``: a change of embedding model clears every vector of another model,
  keys included, in one statement (``bank.clear_other_models``, which decides under the
  write lock), so the bank never mixes two models' vectors.
- ``KeyMemories``: active automatic memories whose evidence keys are not read yet get
  them (``evidence.passages`` over their source block as it stands), at most
  ``KEY_MEMORIES_PER_RUN`` a run, in one commit. A memory's keys are saved only if the
  memory did not change since it was read (same revision, still unkeyed, not stale, in
  the bank) and its source still reads the same.
- ``Embed``: memories without a vector, then keys without one, in batches of
  ``EMBED_BATCH``, at most ``EMBED_BATCHES_PER_RUN`` batches a run; each batch is one
  call and one commit. A vector is saved only if its memory's text (or the key) is
  still the one embedded.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import NamedTuple

from sqlalchemy.orm import Session

from talekeeper.services.memory.bank import (
    clear_other_models,
    set_key_vectors,
    set_keys,
    set_vector,
)
from talekeeper.services.memory.evidence import Passage, passages
from talekeeper.services.memory.passes.work import Work
from talekeeper.services.memory.source import lead_of, source_rows, still_there
from talekeeper.services.memory.writer import read_as
from talekeeper.storage.models import Adventure
from talekeeper.storage.repositories.memory import MemoryRepository, PathRow
from talekeeper.storage.repositories.memory_keys import KeyRepository
from talekeeper.storage.vocabulary import MemoryStatus

EMBED_BATCH = 32  # one request: small enough for any endpoint's batch limit
EMBED_BATCHES_PER_RUN = 8  # 256 texts a run: a model change re-embeds over a few turns
KEY_MEMORIES_PER_RUN = 64  # memories keyed a run: an imported or migrated bank over a few turns


class RetireVectors:
    name = "vectors of another model"

    def __init__(self, work: Work, model: str) -> None:
        self.work = work
        self.model = model

    def read(self, session: Session, adventure: Adventure) -> list[str]:
        if not adventure.memory_bank:
            return []
        others = MemoryRepository(session).other_model_vectors(adventure.id, self.model)
        owners = others or KeyRepository(session).other_model_owners(adventure.id, self.model)
        return [self.model] if owners else []

    async def generate(self, model: str) -> None:
        return None

    def save(self, session: Session, adventure: Adventure, model: str, result: None) -> bool:
        clear_other_models(session, adventure.id, model, self.work.cache)
        return True


@dataclass(frozen=True)
class Unkeyed:
    memory_id: int
    revision: int
    rows: list[PathRow]  # its source block as read
    lead: str | None = None  # the host's character where several play (``Material.lead``)


class KeyMemories:
    name = "evidence keys"

    def __init__(self, work: Work) -> None:
        self.work = work

    def read(self, session: Session, adventure: Adventure) -> list[list[Unkeyed]]:
        if not adventure.memory_bank:
            return []
        todo = KeyRepository(session).unkeyed(adventure.id, KEY_MEMORIES_PER_RUN)
        lead = lead_of(session, adventure) if todo else None
        found = [Unkeyed(m.id, m.revision, source_rows(session, m), lead) for m in todo]
        return [found] if found else []

    async def generate(self, todo: list[Unkeyed]) -> list[list[Passage]]:
        return await asyncio.to_thread(_passages, todo)

    def save(
        self,
        session: Session,
        adventure: Adventure,
        todo: list[Unkeyed],
        keys: list[list[Passage]],
    ) -> bool:
        repo = MemoryRepository(session)
        keyed = False
        for item, found in zip(todo, keys, strict=True):
            memory = repo.memory(item.memory_id)
            if (
                memory is None
                or memory.revision != item.revision
                or memory.keyed
                or memory.stale
                or memory.status != MemoryStatus.ACTIVE
                or not still_there(session, item.rows)
            ):
                continue  # changed since the read: the next run keys it from what it is then
            set_keys(session, memory, found, self.work.cache)
            keyed = True
        return keyed


def _passages(todo: list[Unkeyed]) -> list[list[Passage]]:
    return [passages([(r.depth, read_as(r, item.lead)) for r in item.rows]) for item in todo]


class Item(NamedTuple):
    memory_id: int
    key_id: int | None  # None: the memory's own text
    text: str


class Embed:
    name = "embedding"

    def __init__(self, work: Work, model: str) -> None:
        self.work = work
        self.model = model

    def read(self, session: Session, adventure: Adventure) -> list[list[Item]]:
        if not adventure.memory_bank:
            return []
        most = EMBED_BATCH * EMBED_BATCHES_PER_RUN
        rows = MemoryRepository(session).unembedded(adventure.id, most)
        items = [Item(m.id, None, m.text) for m in rows]
        if len(items) < most:
            keys = KeyRepository(session).unembedded(adventure.id, most - len(items))
            items += [Item(k.memory_id, k.id, k.text) for k in keys]
        return [items[i : i + EMBED_BATCH] for i in range(0, len(items), EMBED_BATCH)]

    async def generate(self, batch: list[Item]) -> list[list[float]]:
        model = self.work.models.embedding
        assert model is not None
        result = await model.embed([i.text for i in batch], adventure_id=self.work.adventure_id)
        return result.vectors

    def save(
        self,
        session: Session,
        adventure: Adventure,
        batch: list[Item],
        vectors: list[list[float]],
    ) -> bool:
        repo = MemoryRepository(session)
        cache = self.work.cache
        saved = False
        by_memory: dict[int, dict[int, list[float]]] = {}
        for item, vector in zip(batch, vectors, strict=True):
            if item.key_id is not None:
                by_memory.setdefault(item.memory_id, {})[item.key_id] = vector
                continue
            memory = repo.memory(item.memory_id)
            if memory is not None and memory.text == item.text and memory.vector is None:
                set_vector(session, memory, vector, self.model, cache)
                saved = True
        for memory_id, key_vectors in by_memory.items():
            memory = repo.memory(memory_id)
            if memory is not None:  # keys dropped meanwhile are simply not found
                set_key_vectors(session, memory, key_vectors, self.model, cache)
                saved = True
        return saved
