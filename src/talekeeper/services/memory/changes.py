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

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from talekeeper.core.lineage import lineage_of, on_lineage
from talekeeper.services.memory.bank import BankCache, drop_keys, set_status
from talekeeper.services.memory.base import StoryChange
from talekeeper.services.memory.writer import memory_lineage, upto
from talekeeper.storage.models import Action, Memory, SummaryVersion
from talekeeper.storage.repositories.memory import COVERING
from talekeeper.storage.repositories.story import StoryRepository
from talekeeper.storage.vocabulary import ActionState, MemoryOrigin, MemoryStatus, SummaryTrigger


def apply(session: Session, change: StoryChange, cache: BankCache | None) -> bool:
    """Follow ``change``; returns whether derived work must be redone in the background."""
    if change.depth is None:
        return False
    if change.kind in ("undo", "retry", "switch_take"):
        _withdraw(session, change, deeper=True, cache=cache)
        return False
    if change.kind == "delete":
        if _slot_active(session, change.branch_id, change.depth):
            return False  # a take that was not in the story
        _withdraw(session, change, deeper=False, cache=cache)
        return _mark_stale(session, change, cache)
    if change.kind == "edit":
        row = session.get(Action, change.action_ids[0]) if change.action_ids else None
        if row is None or row.state != ActionState.ACTIVE:
            return False  # a take's text: no memory was written from it
        return _mark_stale(session, change, cache)
    return False


def _slot_active(session: Session, branch_id: int, depth: int) -> bool:
    query = select(Action.id).where(
        Action.branch_id == branch_id, Action.depth == depth, Action.state == ActionState.ACTIVE
    )
    return session.scalar(query.limit(1)) is not None


def _withdraw(
    session: Session, change: StoryChange, *, deeper: bool, cache: BankCache | None
) -> None:
    assert change.depth is not None
    query = select(Memory).where(
        Memory.adventure_id == change.adventure_id,
        Memory.branch_id == change.branch_id,
        Memory.origin == MemoryOrigin.AUTO,
        Memory.status.in_(COVERING),
        Memory.depth >= change.depth if deeper else Memory.depth == change.depth,
    )
    rows = list(session.scalars(query).all())
    if rows:
        set_status(session, rows, MemoryStatus.WITHDRAWN, cache)


def _mark_stale(session: Session, change: StoryChange, cache: BankCache | None) -> bool:
    assert change.depth is not None
    depth = change.depth
    links = StoryRepository(session).links(change.adventure_id)
    query = select(Memory).where(
        Memory.adventure_id == change.adventure_id,
        Memory.origin == MemoryOrigin.AUTO,
        Memory.status.in_(COVERING),
        Memory.source_start <= depth,
        Memory.source_end >= depth,
    )
    marked = False
    for memory in session.scalars(query).all():
        if on_lineage(memory_lineage(links, memory), change.branch_id, depth):
            memory.stale = True
            # Its evidence quoted the text before the edit: it goes now, not when re-derived.
            drop_keys(session, memory, cache)
            marked = True
    versions = select(SummaryVersion).where(
        SummaryVersion.adventure_id == change.adventure_id,
        SummaryVersion.trigger == SummaryTrigger.INTERVAL,
        SummaryVersion.covers_to >= depth,
    )
    stale_ids = []
    for version in session.scalars(versions).all():
        lineage = upto(lineage_of(links, version.branch_id), version.depth)
        if on_lineage(lineage, change.branch_id, depth):
            stale_ids.append(version.id)
    if stale_ids:
        session.execute(
            update(SummaryVersion).where(SummaryVersion.id.in_(stale_ids)).values(stale=True)
        )
        marked = True
    session.flush()
    return marked
