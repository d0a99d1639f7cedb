"""The Story Summary (memory.md §3): versions anchored to nodes, rewritten every 15 actions.

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
  uncovered), the raw text of the actions past the cursor (last
  ``RAW_TOKENS``) instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from talekeeper.services import limits
from talekeeper.services.memory import extractive
from talekeeper.services.memory.prompts import clean_summary, summary_request
from talekeeper.services.memory.work import (
    Material,
    PathInfo,
    Work,
    ask,
    block_text,
    material,
    path_of,
    still_there,
)
from talekeeper.services.memory.writer import BLOCK_ACTIONS, SETTLE_SLACK
from talekeeper.storage.db import read_scope, session_scope
from talekeeper.storage.models import Adventure, SummaryVersion
from talekeeper.storage.repositories.memory import (
    ACTIVE,
    AUTO,
    FORGOTTEN,
    MemoryRepository,
    PathRow,
)
from talekeeper.storage.repositories.story import StoryRepository

SUMMARY_EVERY = 15  # actions past the cursor before a rewrite: about seven turns of play
RAW_TOKENS = 2000  # raw text handed over when memories lag: the newest part, like a block
INTERVAL = "interval"
USER = "user"
SUMMARY_MAX = 20000  # characters of a summary the player writes (a plot component's limit)


@dataclass
class _Plan:
    facts: Material
    base: SummaryVersion | None
    base_text: str
    base_by_user: bool
    memories: list[str]
    raw: list[PathRow]  # raw actions handed over (the uncovered tail, or all when behind)
    behind: bool
    anchor: PathRow
    refreshes: SummaryVersion | None = None
    sources: list[tuple[int, str]] = field(default_factory=list)  # (memory id, text) read


def text_in_force(session: Session, adventure: Adventure) -> str:
    """The text of the version in force on the current path ("" before the first)."""
    current = MemoryRepository(session).summary_in_force(
        adventure.id, path_of(session, adventure).lineage
    )
    return current.text if current else ""


async def summary_pass(work: Work) -> bool:
    """Write a new version if the path is due one, or refresh a stale version in force."""
    plan = await asyncio.to_thread(_read_plan, work)
    if plan is None:
        return False
    text = await _write(work, plan)
    return await asyncio.to_thread(_save, work, plan, text)


def _read_plan(work: Work) -> _Plan | None:
    with read_scope(work.sessions) as session:
        adventure = session.get(Adventure, work.adventure_id)
        if adventure is None or not adventure.auto_summarize:
            return None
        facts = material(session, adventure)
        repo = MemoryRepository(session)
        current = repo.summary_in_force(adventure.id, facts.lineage)
        if current is not None and current.stale and current.trigger == INTERVAL:
            return _refresh_plan(session, facts, current)
        cursor = current.covers_to if current else -1
        past = repo.path_rows(facts.lineage, after_depth=cursor)
        if len(past) < SUMMARY_EVERY:
            return None
        return _plan(session, facts, current, past)


def _plan(
    session: Session,
    facts: Material,
    base: SummaryVersion | None,
    past: list[PathRow],
    refreshes: SummaryVersion | None = None,
) -> _Plan | None:
    anchor = past[-1]
    repo = MemoryRepository(session)
    cursor = past[0].depth - 1
    memories = repo.memories(
        facts.adventure_id,
        facts.lineage,
        (ACTIVE, FORGOTTEN),
        origin=AUTO,
        within=(cursor + 1, anchor.depth),
    )
    if any(m.stale for m in memories):
        return None  # a memory awaits its rewrite: summarizing it now would keep old text
    covered_to = max((m.source_end or cursor for m in memories), default=cursor)
    tail = [r for r in past if r.depth > covered_to]
    behind = not memories or len(tail) > BLOCK_ACTIONS + SETTLE_SLACK
    return _Plan(
        facts=facts,
        base=base,
        base_text=base.text if base else "",
        base_by_user=bool(base and base.trigger == USER),
        memories=[] if behind else [m.text for m in memories],
        raw=past if behind else tail,
        behind=behind,
        anchor=anchor,
        refreshes=refreshes,
        sources=[] if behind else [(m.id, m.text) for m in memories],
    )


def _refresh_plan(session: Session, facts: Material, stale: SummaryVersion) -> _Plan | None:
    """Rewrite a stale version over the same stretch of story, from its nearest base that is
    not stale itself (a stale base still holds the edited-away text)."""
    repo = MemoryRepository(session)
    base = repo.summary_version(stale.base_id) if stale.base_id else None
    while base is not None and base.stale and base.trigger == INTERVAL:
        base = repo.summary_version(base.base_id) if base.base_id else None
    cursor = base.covers_to if base else -1
    past = [
        r for r in repo.path_rows(facts.lineage, after_depth=cursor) if r.depth <= stale.covers_to
    ]
    if not past:
        return None
    return _plan(session, facts, base, past, refreshes=stale)


async def _write(work: Work, plan: _Plan) -> str:
    model = work.models.summary
    if model is None:
        events = list(plan.memories)
        raw = plan.raw
        if plan.behind:
            raw = _last_tokens(raw)
        for i in range(0, len(raw), BLOCK_ACTIONS):
            block = block_text(raw[i : i + BLOCK_ACTIONS])
            events.append(
                extractive.write_memory(block, plan.facts.protagonist, plan.facts.salient())
            )
        return extractive.write_summary(plan.base_text, plan.base_by_user, events)
    counter = work.counter()
    parts = [f"- {m}" for m in plan.memories]
    raw_text = block_text(plan.raw)
    if raw_text:
        parts.append(counter.tail(raw_text, RAW_TOKENS))
    told = "\n".join(parts)
    request = summary_request(
        plan.base_text,
        plan.base_by_user,
        told,
        plan.facts.cast(told, counter),
        model=model.model,
        mode=work.models.mode,
    )
    return await ask(work, request, "summary", clean_summary, "Story Summary")


def _last_tokens(rows: Sequence[PathRow]) -> list[PathRow]:
    """The newest rows whose text fits ``RAW_TOKENS`` (by words, as the extractive writer
    counts), at least one."""
    out: list[PathRow] = []
    words = 0
    for row in reversed(rows):
        words += len(row.text.split())
        if out and words > RAW_TOKENS:
            break
        out.append(row)
    return out[::-1]


def _save(work: Work, plan: _Plan, text: str) -> bool:
    with session_scope(work.sessions) as session:
        if not still_there(session, [plan.anchor, *plan.raw]) or not _same_memories(
            session, plan.sources
        ):
            return False  # an edit, undo or rewrite landed during the call: the next run redoes it
        repo = MemoryRepository(session)
        adventure = session.get(Adventure, work.adventure_id)
        if adventure is None:
            return False
        current = repo.summary_in_force(adventure.id, path_of(session, adventure).lineage)
        expected = plan.refreshes or plan.base
        if (current.id if current else None) != (expected.id if expected else None):
            return False  # the player edited it, or the story moved: the next run decides
        session.add(
            SummaryVersion(
                adventure_id=adventure.id,
                branch_id=plan.anchor.branch_id,
                depth=plan.anchor.depth,
                action_id=plan.anchor.id,
                covers_to=plan.refreshes.covers_to if plan.refreshes else plan.anchor.depth,
                text=text,
                trigger=INTERVAL,
                writer=work.writer,
                base_id=plan.base.id if plan.base else None,
                refreshes_id=plan.refreshes.id if plan.refreshes else None,
            )
        )
        session.flush()
        return True


def _same_memories(session: Session, sources: list[tuple[int, str]]) -> bool:
    rows = MemoryRepository(session).texts([i for i, _ in sources])
    return all(
        i in rows
        and rows[i].text == text
        and not rows[i].stale
        and rows[i].status in (ACTIVE, FORGOTTEN)
        for i, text in sources
    )


# -- the player's side ----------------------------------------------------------------


def version_view(row: SummaryVersion) -> dict[str, Any]:
    return {
        "id": row.id,
        "text": row.text,
        "trigger": row.trigger,
        "writer": row.writer or ("player" if row.trigger == USER else ""),
        "created_at": row.created_at.isoformat(),
        "branch_id": row.branch_id,
        "depth": row.depth,
        "action_id": row.action_id,
        "covers_to": row.covers_to,
        "base_id": row.base_id,
        "refreshes_id": row.refreshes_id,
        "stale": row.stale,
    }


def summary_view(session: Session, adventure: Adventure) -> dict[str, Any]:
    repo = MemoryRepository(session)
    current = repo.summary_in_force(adventure.id, path_of(session, adventure).lineage)
    versions = repo.summary_versions(adventure.id)
    return {
        "adventure_id": adventure.id,
        "text": current.text if current else "",
        "current_version_id": current.id if current else None,
        "stale": bool(current and current.stale),
        "covers_to": current.covers_to if current else -1,
        "next_at": (current.covers_to if current else -1) + SUMMARY_EVERY,
        "versions": [version_view(v) for v in versions],
    }


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
        trigger=USER,
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
