"""The Memory Bank: the one place memories change (the rows ranking reads of them are
cached by ``cache``).

Invariants:

- ``set_vector`` is the only function that changes a memory's vector; it bumps
  the memory's revision and drops the memory from the in-process cache, so no
  cached vector or term set outlives the row it came from.
- Every other change that ranking must see (text and so terms and authority,
  status, pin) goes through ``set_text``, ``set_status`` or ``set_pinned``,
  which bump the revision too. Use counts do not: ranking never reads them.
- A memory's evidence keys (``evidence``) change only through ``set_keys``,
  ``drop_keys`` and ``set_key_vectors``, each of which bumps the memory's revision:
  the cache re-reads a memory's keys whenever it re-reads the memory. ``set_text``
  drops the keys (the next embedding pass reads them again from the source), and so
  does every change of a memory's source (``drop_keys``, called by whoever changes it).

What the cache holds and how it refreshes: ``cache``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import flag_modified

from talekeeper.services.memory.authority import classify
from talekeeper.services.memory.cache import BankCache, pack
from talekeeper.services.memory.evidence import Passage
from talekeeper.services.memory.terms import term_set
from talekeeper.storage.models import Memory, MemoryKey
from talekeeper.storage.repositories.memory import MemoryRepository
from talekeeper.storage.repositories.memory_keys import KeyRepository
from talekeeper.storage.vocabulary import MemoryStatus


def _bump(session: Session, memory: Memory) -> None:
    memory.revision = MemoryRepository(session).next_revision(memory.adventure_id)


def _changed(session: Session, memory: Memory, cache: BankCache | None) -> None:
    """A change ranking must see: a new revision, flushed, and the cached copy dropped."""
    _bump(session, memory)
    session.flush()
    if cache is not None:
        cache.invalidate(memory.adventure_id, memory.id)


def set_vector(
    session: Session,
    memory: Memory,
    vector: Sequence[float] | None,
    model: str | None,
    cache: BankCache | None,
) -> None:
    """Store (or clear) a memory's vector; the cached copy goes with it."""
    memory.vector = pack(vector) if vector is not None else None
    memory.vector_model = model if vector is not None else None
    # Embedding is not an edit: ``updated_at`` says when the player or a pass changed what
    # the memory says (written as it is, so the column's on-update default stays out).
    flag_modified(memory, "updated_at")
    _changed(session, memory, cache)


def terms_of(text: str) -> str:
    """A memory's lexical terms as stored: distinct, sorted, space-separated."""
    return " ".join(sorted(term_set(text)))


def new_memory(session: Session, adventure_id: int, text: str, **fields: Any) -> Memory:
    """A new active memory (flushed), its authority and terms taken from its text and its
    revision the adventure's next."""
    memory = Memory(
        adventure_id=adventure_id,
        text=text,
        authority=classify(text),
        status=MemoryStatus.ACTIVE,
        terms=terms_of(text),
        revision=MemoryRepository(session).next_revision(adventure_id),
        **fields,
    )
    session.add(memory)
    session.flush()
    return memory


def set_text(session: Session, memory: Memory, text: str, cache: BankCache | None) -> None:
    """New text: new terms and authority, not stale, and a cleared vector (re-embedded)."""
    memory.text = text
    memory.terms = terms_of(text)
    memory.authority = classify(text)
    memory.stale = False
    drop_keys(session, memory, None)
    set_vector(session, memory, None, None, cache)


def drop_keys(session: Session, memory: Memory, cache: BankCache | None) -> None:
    """The memory's text or source changed: its keys go, to be read again from the source."""
    KeyRepository(session).delete_of(memory.id)
    memory.keyed = False
    _changed(session, memory, cache)


def set_keys(
    session: Session, memory: Memory, passages: Sequence[Passage], cache: BankCache | None
) -> None:
    """The memory's keys, as read from its source now (any earlier ones replaced)."""
    KeyRepository(session).delete_of(memory.id)
    session.add_all(
        MemoryKey(
            memory_id=memory.id,
            adventure_id=memory.adventure_id,
            position=i,
            depth=p.depth,
            text=p.text,
            terms=" ".join(sorted(p.terms)),
            names=" ".join(sorted(p.names)),
        )
        for i, p in enumerate(passages)
    )
    memory.keyed = True
    _changed(session, memory, cache)


def set_key_vectors(
    session: Session,
    memory: Memory,
    vectors: Mapping[int, Sequence[float]],
    model: str,
    cache: BankCache | None,
) -> None:
    """Store vectors of some of the memory's keys (by key id)."""
    for key in KeyRepository(session).of(memory.id):
        if key.id in vectors:
            key.vector = pack(vectors[key.id])
            key.vector_model = model
    _changed(session, memory, cache)


def set_status(
    session: Session, memories: Sequence[Memory], status: MemoryStatus, cache: BankCache | None
) -> None:
    for memory in memories:
        memory.status = status
        _changed(session, memory, cache)


def set_pinned(session: Session, memory: Memory, pinned: bool, cache: BankCache | None) -> None:
    memory.pinned = pinned
    if pinned and memory.status != MemoryStatus.ACTIVE:
        memory.status = (
            MemoryStatus.ACTIVE
        )  # pinning a forgotten memory brings it back into the bank
    _changed(session, memory, cache)


def clear_other_models(
    session: Session, adventure_id: int, model: str, cache: BankCache | None
) -> int:
    """The embedding model changed: every vector of another model is cleared (the bank
    re-embeds itself over the following runs), each changed memory given a revision."""
    repo = MemoryRepository(session)
    stale = repo.other_model_vectors(adventure_id, model)
    keys = KeyRepository(session)
    owners = keys.other_model_owners(adventure_id, model)
    if not stale and not owners:
        return 0
    changed = sorted({m.id for m in stale} | set(owners))
    if owners:
        keys.clear_vectors(owners)
    if stale:
        repo.clear_vectors([m.id for m in stale])
    # Each changed memory its own revision (no two memories of an adventure share one).
    repo.set_revisions(
        dict(zip(changed, repo.next_revisions(adventure_id, len(changed)), strict=True))
    )
    for memory in stale:  # a bulk update by key leaves loaded rows as they were read
        session.expire(memory, ["revision"])
    if cache is not None:
        cache.invalidate(adventure_id)
    return len(stale)
