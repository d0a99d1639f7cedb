"""The bank's upkeep after each run: embedding new memories, then capacity (memory.md §4).

Invariants:

- Active automatic memories whose evidence keys are not read yet are keyed first
  (``evidence.passages`` over their source block as it stands, ``KEY_MEMORIES_PER_RUN``
  a run), in one commit.
- Memories without a vector, then keys without one, are embedded in batches of
  ``EMBED_BATCH``, at most ``EMBED_BATCHES_PER_RUN`` batches a run; each batch is one
  call and one commit. A vector is saved only if its memory's text (or the key) is
  still the one embedded. A change of embedding model first clears every vector of
  another model, keys included, so the bank never mixes two models' vectors.
- Capacity counts the active memories on the current path (what retrieval can
  see); the overflow is marked forgotten in the order ``eviction`` chooses.
  Forgotten memories stay listed and are never retrieved; pinned ones are
  never forgotten.
"""

from __future__ import annotations

import asyncio
from typing import NamedTuple

from talekeeper.services.memory.bank import (
    clear_other_models,
    set_key_vectors,
    set_keys,
    set_status,
    set_vector,
)
from talekeeper.services.memory.eviction import EvictionCandidate, choose_evictions
from talekeeper.services.memory.evidence import passages
from talekeeper.services.memory.work import Work, path_of, source_rows
from talekeeper.services.rendering import render
from talekeeper.storage.db import session_scope
from talekeeper.storage.models import Adventure, Memory
from talekeeper.storage.repositories.memory import ACTIVE, FORGOTTEN, MemoryRepository
from talekeeper.storage.repositories.memory_keys import KeyRepository

EMBED_BATCH = 32  # one request: small enough for any endpoint's batch limit
EMBED_BATCHES_PER_RUN = 8  # 256 texts a run: a model change re-embeds over a few turns
KEY_MEMORIES_PER_RUN = 64  # memories keyed a run: an imported or migrated bank over a few turns


class _Item(NamedTuple):
    memory_id: int
    key_id: int | None  # None: the memory's own text
    text: str


async def embedding_pass(work: Work) -> bool:
    model = work.models.embedding
    if model is None:
        return False
    done = await asyncio.to_thread(_key_memories, work)
    for _ in range(EMBED_BATCHES_PER_RUN):
        batch = await asyncio.to_thread(_read_batch, work, model.model)
        if not batch:
            break
        result = await model.embed([i.text for i in batch], adventure_id=work.adventure_id)
        await asyncio.to_thread(_save_batch, work, model.model, batch, result.vectors)
        done = True
        if len(batch) < EMBED_BATCH:
            break
    return done


def _key_memories(work: Work) -> bool:
    """Read the evidence keys of memories that have none yet from their source."""
    with session_scope(work.sessions) as session:
        adventure = session.get(Adventure, work.adventure_id)
        if adventure is None or not adventure.memory_bank:
            return False
        todo = KeyRepository(session).unkeyed(adventure.id, KEY_MEMORIES_PER_RUN)
        for memory in todo:
            rows = [(r.depth, render(r.type, r.text)) for r in source_rows(session, memory)]
            set_keys(session, memory, passages(rows), work.cache)
        return bool(todo)


def _read_batch(work: Work, model: str) -> list[_Item]:
    with session_scope(work.sessions) as session:
        adventure = session.get(Adventure, work.adventure_id)
        if adventure is None or not adventure.memory_bank:
            return []
        clear_other_models(session, adventure.id, model, work.cache)
        rows = MemoryRepository(session).unembedded(adventure.id, EMBED_BATCH)
        items = [_Item(m.id, None, m.text) for m in rows]
        if len(items) < EMBED_BATCH:
            keys = KeyRepository(session).unembedded(adventure.id, EMBED_BATCH - len(items))
            items += [_Item(k.memory_id, k.id, k.text) for k in keys]
        return items


def _save_batch(work: Work, model: str, batch: list[_Item], vectors: list[list[float]]) -> None:
    with session_scope(work.sessions) as session:
        repo = MemoryRepository(session)
        by_memory: dict[int, dict[int, list[float]]] = {}
        for item, vector in zip(batch, vectors, strict=True):
            if item.key_id is not None:
                by_memory.setdefault(item.memory_id, {})[item.key_id] = vector
                continue
            memory = repo.memory(item.memory_id)
            if memory is not None and memory.text == item.text and memory.vector is None:
                set_vector(session, memory, vector, model, work.cache)
        for memory_id, key_vectors in by_memory.items():
            memory = repo.memory(memory_id)
            if memory is not None:  # keys dropped meanwhile are simply not found
                set_key_vectors(session, memory, key_vectors, model, work.cache)


async def eviction_pass(work: Work) -> bool:
    return await asyncio.to_thread(_evict, work)


def _evict(work: Work) -> bool:
    with session_scope(work.sessions) as session:
        adventure = session.get(Adventure, work.adventure_id)
        if adventure is None:
            return False
        lineage = path_of(session, adventure).lineage
        repo = MemoryRepository(session)
        if repo.count_memories(adventure.id, lineage, ACTIVE) <= work.models.bank_capacity:
            return False
        active = repo.memories(adventure.id, lineage, (ACTIVE,))
        chosen = choose_evictions([_candidate(m) for m in active], work.models.bank_capacity)
        by_id = {m.id: m for m in active}
        set_status(session, [by_id[i] for i in chosen], FORGOTTEN, work.cache)
        return bool(chosen)


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
