"""The bank's upkeep after each run: embedding new memories, then capacity (memory.md §4).

Invariants:

- Memories without a vector are embedded in batches of ``EMBED_BATCH``, at
  most ``EMBED_BATCHES_PER_RUN`` batches a run; each batch is one call and one
  commit. A change of embedding model first clears every vector of another
  model, so the bank never mixes two models' vectors.
- Capacity counts the active memories on the current path (what retrieval can
  see); the overflow is marked forgotten in the order ``eviction`` chooses.
  Forgotten memories stay listed and are never retrieved; pinned ones are
  never forgotten.
"""

from __future__ import annotations

import asyncio

from talekeeper.services.memory.bank import clear_other_models, set_status, set_vector
from talekeeper.services.memory.eviction import EvictionCandidate, choose_evictions
from talekeeper.services.memory.work import Work, path_of
from talekeeper.storage.db import session_scope
from talekeeper.storage.models import Adventure, Memory
from talekeeper.storage.repositories.memory import ACTIVE, FORGOTTEN, MemoryRepository

EMBED_BATCH = 32  # one request: small enough for any endpoint's batch limit
EMBED_BATCHES_PER_RUN = 8  # 256 memories a run: a model change re-embeds over a few turns


async def embedding_pass(work: Work) -> bool:
    model = work.models.embedding
    if model is None:
        return False
    done = False
    for _ in range(EMBED_BATCHES_PER_RUN):
        batch = await asyncio.to_thread(_read_batch, work, model.model)
        if not batch:
            break
        result = await model.embed([text for _, text in batch], adventure_id=work.adventure_id)
        await asyncio.to_thread(_save_batch, work, model.model, batch, result.vectors)
        done = True
        if len(batch) < EMBED_BATCH:
            break
    return done


def _read_batch(work: Work, model: str) -> list[tuple[int, str]]:
    with session_scope(work.sessions) as session:
        adventure = session.get(Adventure, work.adventure_id)
        if adventure is None or not adventure.memory_bank:
            return []
        clear_other_models(session, adventure.id, model, work.cache)
        rows = MemoryRepository(session).unembedded(adventure.id, EMBED_BATCH)
        return [(m.id, m.text) for m in rows]


def _save_batch(
    work: Work, model: str, batch: list[tuple[int, str]], vectors: list[list[float]]
) -> None:
    with session_scope(work.sessions) as session:
        repo = MemoryRepository(session)
        for (memory_id, text), vector in zip(batch, vectors, strict=True):
            memory = repo.memory(memory_id)
            if memory is not None and memory.text == text and memory.vector is None:
                set_vector(session, memory, vector, model, work.cache)


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
