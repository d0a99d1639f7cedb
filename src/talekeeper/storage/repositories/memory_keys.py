"""Memory keys: the evidence passages memories are also retrieved by. Never commits.

Invariants:

- The bank's read of keys (``bank_keys``) never loads their text: ids, owner, depth,
  vector and terms only, in (memory, position) order so each memory's keys are one
  contiguous run.
- Keys are only ever written with their memory (``services.memory.bank`` bumps the
  memory's revision in the same transaction), so a cache that re-reads a memory whose
  revision moved re-reads its keys with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from sqlalchemy import delete, or_, select, update
from sqlalchemy.orm import Session

from talekeeper.storage.models import Memory, MemoryKey
from talekeeper.storage.vocabulary import MemoryOrigin, MemoryStatus

_IN_CHUNK = 900  # ids per IN (...): under every SQLite build's variable limit


class KeyRow(NamedTuple):
    id: int
    memory_id: int
    depth: int
    vector: bytes | None
    vector_model: str | None
    terms: str
    names: str


class KeyRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def unkeyed(self, adventure_id: int, limit: int) -> list[Memory]:
        """Active automatic memories whose keys are not read from their source yet."""
        query = select(Memory).where(
            Memory.adventure_id == adventure_id,
            Memory.status == MemoryStatus.ACTIVE,
            Memory.origin == MemoryOrigin.AUTO,
            Memory.keyed.is_(False),
            Memory.stale.is_(False),  # re-derived first: that would drop the keys again
            Memory.source_start.is_not(None),
        )
        return list(self.session.scalars(query.order_by(Memory.id).limit(limit)).all())

    def unembedded(self, adventure_id: int, limit: int) -> list[MemoryKey]:
        """Keys without a vector of active memories, oldest memory first."""
        query = (
            select(MemoryKey)
            .join(Memory, Memory.id == MemoryKey.memory_id)
            .where(
                MemoryKey.adventure_id == adventure_id,
                MemoryKey.vector.is_(None),
                Memory.status == MemoryStatus.ACTIVE,
            )
            .order_by(MemoryKey.memory_id, MemoryKey.position)
        )
        return list(self.session.scalars(query.limit(limit)).all())

    def of(self, memory_id: int) -> list[MemoryKey]:
        query = select(MemoryKey).where(MemoryKey.memory_id == memory_id)
        return list(self.session.scalars(query.order_by(MemoryKey.position)).all())

    def delete_of(self, memory_id: int) -> None:
        self.session.execute(delete(MemoryKey).where(MemoryKey.memory_id == memory_id))

    def bank_keys(
        self, *, adventure_id: int | None = None, memory_ids: Sequence[int] = ()
    ) -> list[KeyRow]:
        """The keys of an adventure's memories, or of ``memory_ids``, in memory order."""
        columns = (
            MemoryKey.id,
            MemoryKey.memory_id,
            MemoryKey.depth,
            MemoryKey.vector,
            MemoryKey.vector_model,
            MemoryKey.terms,
            MemoryKey.names,
        )
        order = (MemoryKey.memory_id, MemoryKey.position)
        connection = self.session.connection()  # plain rows: this can be the whole bank
        if adventure_id is not None:
            query = select(*columns).where(MemoryKey.adventure_id == adventure_id)
            return [KeyRow._make(r) for r in connection.execute(query.order_by(*order)).all()]
        out: list[KeyRow] = []
        ids = sorted(set(memory_ids))
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start : start + _IN_CHUNK]
            query = select(*columns).where(MemoryKey.memory_id.in_(chunk)).order_by(*order)
            out += [KeyRow._make(r) for r in connection.execute(query).all()]
        return out

    def depth_terms(self, memory_ids: Sequence[int]) -> dict[int, list[tuple[int, str]]]:
        """Each memory's keys as (depth, terms as stored), in story order."""
        out: dict[int, list[tuple[int, str]]] = {i: [] for i in memory_ids}
        ids = sorted(set(memory_ids))
        for start in range(0, len(ids), _IN_CHUNK):
            query = (
                select(MemoryKey.memory_id, MemoryKey.depth, MemoryKey.terms)
                .where(MemoryKey.memory_id.in_(ids[start : start + _IN_CHUNK]))
                .order_by(MemoryKey.memory_id, MemoryKey.position)
            )
            for memory_id, depth, terms in self.session.execute(query).all():
                out[memory_id].append((depth, terms))
        return out

    def texts(self, key_ids: Sequence[int]) -> dict[int, tuple[str, int]]:
        """(text, depth) of each key."""
        if not key_ids:
            return {}
        query = select(MemoryKey.id, MemoryKey.text, MemoryKey.depth).where(
            MemoryKey.id.in_(list(key_ids))
        )
        return {i: (text, depth) for i, text, depth in self.session.execute(query).all()}

    def other_model_owners(self, adventure_id: int, model: str) -> list[int]:
        """Memories with a key vector of another model."""
        query = (
            select(MemoryKey.memory_id)
            .where(
                MemoryKey.adventure_id == adventure_id,
                MemoryKey.vector.is_not(None),
                or_(MemoryKey.vector_model.is_(None), MemoryKey.vector_model != model),
            )
            .distinct()
        )
        return list(self.session.scalars(query).all())

    def clear_vectors(self, memory_ids: Sequence[int]) -> None:
        for start in range(0, len(memory_ids), _IN_CHUNK):
            chunk = list(memory_ids[start : start + _IN_CHUNK])
            self.session.execute(
                update(MemoryKey)
                .where(MemoryKey.memory_id.in_(chunk))
                .values(vector=None, vector_model=None)
                .execution_options(synchronize_session=False)
            )
