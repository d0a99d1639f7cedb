"""The summary pass: a new Story Summary version when the path is due one, or a stale
version in force rewritten over the same stretch (the rules are ``summary``'s).

Invariants:

- The read decides everything the version is written from: its base, the memories
  past the cursor (or the raw actions when memory writing lags), and the anchor (the
  newest node when the pass started). A memory past the cursor that awaits its
  rewrite makes the pass wait: summarizing it now would keep its old text.
- The save re-checks that the anchor and every raw action read are still active with
  the text that was read, that every memory read still has that text (not stale, in
  the bank or forgotten), and that the version in force is still the one the rewrite
  was based on (the player did not write one meanwhile); otherwise nothing is written
  and the next run decides again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from talekeeper.services.memory import extractive
from talekeeper.services.memory.passes.work import Work
from talekeeper.services.memory.prompts import clean_summary, summary_request
from talekeeper.services.memory.source import Material, material, path_of, still_there
from talekeeper.services.memory.summary import SUMMARY_EVERY
from talekeeper.services.memory.writer import BLOCK_ACTIONS, SETTLE_SLACK, block_text
from talekeeper.storage.models import Adventure, SummaryVersion
from talekeeper.storage.repositories.memory import MemoryRepository, PathRow
from talekeeper.storage.vocabulary import MemoryOrigin, MemoryStatus, SummaryTrigger

RAW_TOKENS = 2000  # raw text handed over when memories lag: the newest part, like a block


@dataclass
class Rewrite:
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


class Summarize:
    name = "summary"

    def __init__(self, work: Work) -> None:
        self.work = work

    def read(self, session: Session, adventure: Adventure) -> list[Rewrite]:
        if not adventure.auto_summarize:
            return []
        facts = material(session, adventure)
        repo = MemoryRepository(session)
        current = repo.summary_in_force(adventure.id, facts.lineage)
        if current is not None and current.stale and current.trigger == SummaryTrigger.INTERVAL:
            plan = _refresh_plan(session, facts, current)
        else:
            cursor = current.covers_to if current else -1
            past = repo.path_rows(facts.lineage, after_depth=cursor)
            plan = _plan(session, facts, current, past) if len(past) >= SUMMARY_EVERY else None
        return [] if plan is None else [plan]

    async def generate(self, plan: Rewrite) -> str:
        work = self.work
        model = work.models.summary
        if model is None:
            return _extractive(plan)
        counter = work.counter()
        parts = [f"- {m}" for m in plan.memories]
        raw_text = block_text(plan.raw, plan.facts.lead)
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
        return await work.ask(request, "summary", clean_summary, "Story Summary")

    def save(self, session: Session, adventure: Adventure, plan: Rewrite, text: str) -> bool:
        if not still_there(session, [plan.anchor, *plan.raw]) or not _same_memories(
            session, plan.sources
        ):
            return False  # an edit, undo or rewrite landed during the call: the next run redoes it
        repo = MemoryRepository(session)
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
                trigger=SummaryTrigger.INTERVAL,
                writer=self.work.writer,
                base_id=plan.base.id if plan.base else None,
                refreshes_id=plan.refreshes.id if plan.refreshes else None,
            )
        )
        session.flush()
        return True


def _plan(
    session: Session,
    facts: Material,
    base: SummaryVersion | None,
    past: list[PathRow],
    refreshes: SummaryVersion | None = None,
) -> Rewrite | None:
    anchor = past[-1]
    repo = MemoryRepository(session)
    cursor = past[0].depth - 1
    memories = repo.memories(
        facts.adventure_id,
        facts.lineage,
        (MemoryStatus.ACTIVE, MemoryStatus.FORGOTTEN),
        origin=MemoryOrigin.AUTO,
        within=(cursor + 1, anchor.depth),
    )
    if any(m.stale for m in memories):
        return None  # a memory awaits its rewrite: summarizing it now would keep old text
    covered_to = max((m.source_end or cursor for m in memories), default=cursor)
    tail = [r for r in past if r.depth > covered_to]
    behind = not memories or len(tail) > BLOCK_ACTIONS + SETTLE_SLACK
    return Rewrite(
        facts=facts,
        base=base,
        base_text=base.text if base else "",
        base_by_user=bool(base and base.trigger == SummaryTrigger.USER),
        memories=[] if behind else [m.text for m in memories],
        raw=past if behind else tail,
        behind=behind,
        anchor=anchor,
        refreshes=refreshes,
        sources=[] if behind else [(m.id, m.text) for m in memories],
    )


def _refresh_plan(session: Session, facts: Material, stale: SummaryVersion) -> Rewrite | None:
    """Rewrite a stale version over the same stretch of story, from its nearest base that is
    not stale itself (a stale base still holds the edited-away text)."""
    repo = MemoryRepository(session)
    base = repo.summary_version(stale.base_id) if stale.base_id else None
    while base is not None and base.stale and base.trigger == SummaryTrigger.INTERVAL:
        base = repo.summary_version(base.base_id) if base.base_id else None
    cursor = base.covers_to if base else -1
    past = [
        r for r in repo.path_rows(facts.lineage, after_depth=cursor) if r.depth <= stale.covers_to
    ]
    if not past:
        return None
    return _plan(session, facts, base, past, refreshes=stale)


def _extractive(plan: Rewrite) -> str:
    """The version by the extractive writer: the base, the memories, and a memory of each
    block of raw actions (only the newest ``RAW_TOKENS`` words of them when behind)."""
    events = list(plan.memories)
    raw = _last_tokens(plan.raw) if plan.behind else plan.raw
    for i in range(0, len(raw), BLOCK_ACTIONS):
        block = block_text(raw[i : i + BLOCK_ACTIONS], plan.facts.lead)
        events.append(extractive.write_memory(block, plan.facts.protagonist, plan.facts.salient()))
    return extractive.write_summary(plan.base_text, plan.base_by_user, events)


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


def _same_memories(session: Session, sources: list[tuple[int, str]]) -> bool:
    rows = MemoryRepository(session).texts([i for i, _ in sources])
    return all(
        i in rows
        and rows[i].text == text
        and not rows[i].stale
        and rows[i].status in (MemoryStatus.ACTIVE, MemoryStatus.FORGOTTEN)
        for i, text in sources
    )
