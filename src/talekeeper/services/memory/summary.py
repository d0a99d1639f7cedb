"""The Story Summary (docs/memory.md §3): versions anchored to nodes, rewritten every 15 actions.

Here: the rules of the cursor and of the version in force, and the player's side (view,
edit). The background pass that writes a version is ``passes.summarize``.

Invariants:

- The version in force is the newest (by id) version whose anchor is on the
  current path: an automatic version needs its anchor action active (an undo or
  a retry of that node takes it out of force, a redo brings it back); the
  player's version has no anchor action and stays in force on its branch
  through undo and redo. Versions are never deleted.
- The summary cursor is the in-force version's ``covers_to``: a pass runs once
  ``SUMMARY_EVERY`` actions of the path lie past it, and the new version is
  anchored to the newest node that existed when the pass started.
- The base of a rewrite is the version in force at the head (never a version of
  a branch the player left). A version the player wrote is the base of the next
  rewrite and stays in the history: its facts are carried into the new text
  (the extractive writer keeps it whole; the model is told to keep them).
- Input: the memories past the cursor, in story order, plus the raw text of the
  few newest actions no memory covers yet; when memory writing has fallen
  behind (no memory past the cursor, or more than a block plus its slack
  uncovered), the raw text of the actions past the cursor (the newest
  ``passes.summarize.RAW_TOKENS``) instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from talekeeper.services.common import limits
from talekeeper.services.memory.source import PathInfo, path_of
from talekeeper.storage.models import Adventure, SummaryVersion
from talekeeper.storage.repositories.memory import MemoryRepository
from talekeeper.storage.repositories.story import StoryRepository
from talekeeper.storage.vocabulary import SummaryTrigger

SUMMARY_EVERY = 15  # actions past the cursor before a rewrite: about seven turns of play
SUMMARY_MAX = 20000  # characters of a summary the player writes (a plot component's limit)


def text_in_force(session: Session, adventure: Adventure) -> str:
    """The text of the version in force on the current path ("" before the first)."""
    current = MemoryRepository(session).summary_in_force(
        adventure.id, path_of(session, adventure).lineage
    )
    return current.text if current else ""


# -- the player's side ----------------------------------------------------------------


@dataclass(frozen=True)
class SummaryVersionView:
    """One version of the Story Summary, in force or not."""

    id: int
    text: str
    trigger: str  # a ``SummaryTrigger``
    writer: str  # who wrote it: "player" for the player's version, "" when unknown
    created_at: datetime
    branch_id: int
    depth: int
    action_id: int | None  # the node it is anchored to (none for the player's version)
    covers_to: int
    base_id: int | None
    refreshes_id: int | None
    stale: bool


@dataclass(frozen=True)
class SummaryView:
    """The Story Summary of the current path: the version in force (its text, or "" and a
    ``covers_to`` of -1 before the first), when the next rewrite is due, and every version
    of the adventure, oldest first."""

    adventure_id: int
    text: str
    current_version_id: int | None
    stale: bool
    covers_to: int
    next_at: int
    versions: tuple[SummaryVersionView, ...]


def version_view(row: SummaryVersion) -> SummaryVersionView:
    return SummaryVersionView(
        id=row.id,
        text=row.text,
        trigger=row.trigger,
        writer=row.writer or ("player" if row.trigger == SummaryTrigger.USER else ""),
        created_at=row.created_at,
        branch_id=row.branch_id,
        depth=row.depth,
        action_id=row.action_id,
        covers_to=row.covers_to,
        base_id=row.base_id,
        refreshes_id=row.refreshes_id,
        stale=row.stale,
    )


def summary_view(session: Session, adventure: Adventure) -> SummaryView:
    repo = MemoryRepository(session)
    current = repo.summary_in_force(adventure.id, path_of(session, adventure).lineage)
    versions = repo.summary_versions(adventure.id)
    covers_to = current.covers_to if current else -1
    return SummaryView(
        adventure_id=adventure.id,
        text=current.text if current else "",
        current_version_id=current.id if current else None,
        stale=bool(current and current.stale),
        covers_to=covers_to,
        next_at=covers_to + SUMMARY_EVERY,
        versions=tuple(version_view(v) for v in versions),
    )


def edit_summary(session: Session, adventure: Adventure, text: str) -> SummaryVersion:
    """The player's version: in force on this branch from now on (through undo and redo),
    covering what the version it replaces covered, and the base of the next rewrite."""
    clean = limits.text_field(text, "text", SUMMARY_MAX)
    path = path_of(session, adventure)
    current = MemoryRepository(session).summary_in_force(adventure.id, path.lineage)
    head = StoryRepository(session).head(path.lineage)
    row = SummaryVersion(
        adventure_id=adventure.id,
        branch_id=path.branch_id,
        depth=head.depth if head and head.branch_id == path.branch_id else _own_floor(path),
        action_id=None,
        covers_to=current.covers_to if current else -1,
        text=clean,
        trigger=SummaryTrigger.USER,
        writer="",
        base_id=current.id if current else None,
    )
    session.add(row)
    session.flush()
    return row


def _own_floor(path: PathInfo) -> int:
    """The depth just before the current branch's own actions: a version anchored there is
    on this branch and on branches forked from it, not on its parent's other paths."""
    return path.links[path.branch_id].fork_depth - 1
