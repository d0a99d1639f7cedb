"""Keeping memories true when the story changes (docs/memory.md §6), in the change's transaction.

Invariants:

- Undo, retry and take switching at (branch, depth) withdraw the automatic
  memories of that branch attached at that depth or deeper: their blocks end
  on a node that is no longer in the story. Their actions become uncovered,
  which rewinds the memory cursor to just before the earliest withdrawn
  memory's ``source_start``. Summary versions need nothing: a version whose
  anchor action is no longer active is out of force by the lineage rule, and
  the summary cursor falls back with it.
- Delete of an active action withdraws the memories attached to its node and
  marks stale those whose source range still spans it; deleting a take (not
  in the story) changes nothing.
- Editing an action's text marks stale every automatic memory whose source
  range covers it on a path through it, and every automatic summary version
  covering it; the background run re-derives them (stale until then).
- Hand-written memories have no source range and are never withdrawn or
  marked stale by any of this; nothing here ever deletes a row.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from talekeeper.core.lineage import lineage_of, on_lineage
from talekeeper.services.memory.bank import drop_keys, set_status
from talekeeper.services.memory.base import StoryChange
from talekeeper.services.memory.cache import BankCache
from talekeeper.services.memory.writer import memory_lineage, upto
from talekeeper.storage.repositories.memory import MemoryRepository
from talekeeper.storage.repositories.story import StoryRepository
from talekeeper.storage.vocabulary import ActionState, MemoryStatus


def apply(session: Session, change: StoryChange, cache: BankCache | None) -> bool:
    """Follow ``change``; returns whether derived work must be redone in the background."""
    if change.depth is None:
        return False
    if change.kind in ("undo", "retry", "switch_take"):
        _withdraw(session, change, deeper=True, cache=cache)
        return False
    if change.kind == "delete":
        if StoryRepository(session).slot_is_active(change.branch_id, change.depth):
            return False  # a take that was not in the story
        _withdraw(session, change, deeper=False, cache=cache)
        return _mark_stale(session, change, cache)
    if change.kind == "edit":
        row = StoryRepository(session).action(change.action_ids[0]) if change.action_ids else None
        if row is None or row.state != ActionState.ACTIVE:
            return False  # a take's text: no memory was written from it
        return _mark_stale(session, change, cache)
    return False


def _withdraw(
    session: Session, change: StoryChange, *, deeper: bool, cache: BankCache | None
) -> None:
    assert change.depth is not None
    rows = MemoryRepository(session).covering_at(
        change.adventure_id, change.branch_id, change.depth, deeper=deeper
    )
    if rows:
        set_status(session, rows, MemoryStatus.WITHDRAWN, cache)


def _mark_stale(session: Session, change: StoryChange, cache: BankCache | None) -> bool:
    assert change.depth is not None
    depth = change.depth
    links = StoryRepository(session).links(change.adventure_id)
    repo = MemoryRepository(session)
    marked = False
    for memory in repo.covering_spanning(change.adventure_id, depth):
        if on_lineage(memory_lineage(links, memory), change.branch_id, depth):
            memory.stale = True
            # Its evidence quoted the text before the edit: it goes now, not when re-derived.
            drop_keys(session, memory, cache)
            marked = True
    stale_ids = []
    for version in repo.interval_versions_covering(change.adventure_id, depth):
        lineage = upto(lineage_of(links, version.branch_id), version.depth)
        if on_lineage(lineage, change.branch_id, depth):
            stale_ids.append(version.id)
    if stale_ids:
        repo.mark_versions_stale(stale_ids)
        marked = True
    session.flush()
    return marked
