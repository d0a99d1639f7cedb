"""What happens at a probe: the product's dry run, every method's ranking, the outcomes.

At a probe the story stands still (the worker is idle), and:

1. ``TurnRunner.dry_run`` gives the Insights of the turn as if the probe were
   sent: the memories injected (the product's top ``memory_top_k``), the query
   texts, and every section of the context (history, Story Summary, ...).
2. The bank is read through the product's own ``BankCache`` and lineage mask;
   the query texts are embedded by the same provider; ``methods`` ranks.
3. A hit is, for a planted fact, a memory whose source range covers the
   planted action's depth (on this path: every candidate is), a message at that
   depth, or a chunk holding at least half of the fact's sentence; for an
   undone or forked fact, anything whose text states it (``facts.states``);
   for a fact never planted, nothing.

Invariant checked on every probe: the product's full ranking begins with
exactly the memories the dry run injected (``dry_run_agrees``).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from benchmarks.recall.dense.frames import capture
from benchmarks.recall.facts import Fact, states
from benchmarks.recall.generator import Adventure, Probe
from benchmarks.recall.methods import (
    MemoryQuery,
    chunk_spans,
    cosine_ranking,
    memory_rankings,
    overlap,
    tail,
    textdb_ranking,
    weight_rankings,
)
from benchmarks.recall.metrics import Outcome, outcome
from benchmarks.recall.play import PathAction, Player
from sqlalchemy import select

from talekeeper.core.lineage import on_lineage
from talekeeper.services.memory.ranking import lineage_mask
from talekeeper.services.memory.terms import terms
from talekeeper.services.common.rendering import NARRATION, render
from talekeeper.services.story.tree import Story
from talekeeper.storage.db import session_scope
from talekeeper.storage.models import Memory


@dataclass
class ProbeResult:
    embedder: str
    adventure: str
    fact: str
    kind: str
    role: str  # "planted", "never", "undone", "forked"
    depth: int
    distance: int | None
    cast: bool = False  # a companion takes part in the fact's sentence
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    considered: int = 0  # memories the product ranked
    covered: bool = False  # a candidate memory covers the planted action
    covering_states: bool = False  # ... and its text states the fact
    candidates_stating: int = 0  # candidate memories that state the fact
    in_history: bool = False  # the raw history of the context states it
    in_summary: bool = False  # the Story Summary in force states it
    in_context: bool = False  # any section of the context states it
    dry_run_agrees: bool = True
    history_kept: int = 0
    # For reading a run's --json: the probe, what the covering memory says, what was injected.
    question: str = ""
    sentence: str = ""  # the fact's statement
    covering_text: str = ""
    injected_texts: list[str] = field(default_factory=list)
    # The product's ranking under other weights (``methods.WEIGHT_GRID``): name -> outcome.
    grid: dict[str, Outcome] = field(default_factory=dict)


@dataclass(frozen=True)
class Leaving:
    """Before the undo or the fork: memories on the path that state the fact to be left."""

    embedder: str
    adventure: str
    role: str
    stating: int


@dataclass(frozen=True)
class BankView:
    query: MemoryQuery
    ids: list[int]
    texts: list[str]
    ranges: list[tuple[int | None, int | None]]


def _read_bank(p: Player, adventure_id: int) -> tuple[Any, Any, list[Memory]]:
    assert p.models.embedding is not None
    with session_scope(p.rt.sessions) as session:
        lineage = Story.load(session, adventure_id, p.uid, p.rt.memory).lineage()
        bank = p.memory.cache.bank(session, adventure_id, p.models.embedding.model)
        mask = lineage_mask(bank, lineage)
        ids = [int(i) for i in bank.ids[mask]]
        rows = {m.id: m for m in session.scalars(select(Memory).where(Memory.id.in_(ids)))}
        session.expunge_all()
        return bank, mask, [rows[i] for i in ids]


async def _bank_view(
    p: Player, adventure_id: int, query: dict[str, Any], narration: str
) -> BankView:
    bank, mask, rows = await asyncio.to_thread(_read_bank, p, adventure_id)
    texts = [query["input"], query["context"], narration]
    wanted = [i for i, t in enumerate(texts) if t.strip()]
    vectors: list[np.ndarray | None] = [None, None, None]
    for i, v in zip(wanted, await p.embed([texts[i] for i in wanted]), strict=True):
        vectors[i] = v
    mq = MemoryQuery(
        bank,
        mask,
        vectors[0],
        vectors[1],
        vectors[2],
        terms(query["input"]),
        p.models.memory_top_k,
    )
    return BankView(
        mq,
        [m.id for m in rows],
        [m.text for m in rows],
        [(m.source_start, m.source_end) for m in rows],
    )


def _covers(span: tuple[int | None, int | None], depth: int) -> bool:
    start, end = span
    return start is not None and end is not None and start <= depth <= end


async def _memory_outcomes(
    p: Player,
    adventure_id: int,
    fact: Fact,
    planted: int | None,
    snapshot: dict[str, Any],
    narration: str,
    result: ProbeResult,
) -> None:
    view = await _bank_view(p, adventure_id, snapshot["memories"]["query"], narration)
    if planted is not None and fact.role == "planted":
        hits = [_covers(r, planted) for r in view.ranges]
    else:
        hits = [fact.role != "never" and states(t, fact) for t in view.texts]
    stating = [states(t, fact) for t in view.texts]
    rankings = memory_rankings(view.query, view.ids, view.texts)
    for name, ranked in rankings.items():
        result.outcomes[name] = outcome(ranked, hits, stating, [len(t) for t in view.texts])
    for name, ranked in weight_rankings(view.query, view.ids).items():
        result.grid[name] = outcome(ranked, hits, stating, [len(t) for t in view.texts])
    used = [u["id"] for u in snapshot["memories"]["used"]]
    product = rankings["talekeeper"]
    result.dry_run_agrees = used == [view.ids[i] for i in product.order[: product.inject]]
    result.considered = len(view.ids)
    result.candidates_stating = sum(stating)
    if planted is not None:
        covering = [i for i, r in enumerate(view.ranges) if _covers(r, planted)]
        result.covered = bool(covering)
        result.covering_states = any(stating[i] for i in covering)
        result.covering_text = " | ".join(view.texts[i] for i in covering)
    result.injected_texts = [view.texts[i] for i in product.order[: product.inject]]
    if p.frames is not None and planted is not None and fact.role == "planted":
        info = (0, result.adventure, fact.kind, result.question)
        frame = await capture(p, adventure_id, snapshot, info)
        frame.hits = frozenset(view.ids[i] for i, hit in enumerate(hits) if hit)
        frame.planted, frame.product_fact = True, bool(set(used[: view.query.top_k]) & frame.hits)
        p.frames.append(frame)


def _outside_window(adv: Adventure, path: dict[int, PathAction], probe: Probe) -> list[PathAction]:
    limit = probe.depth - adv.window - 1
    return [path[d] for d in sorted(path) if d <= limit]


async def _chunk_outcomes(
    p: Player,
    adv: Adventure,
    path: dict[int, PathAction],
    probe: Probe,
    fact: Fact,
    planted: int | None,
    narration: str,
    result: ProbeResult,
) -> None:
    messages = _outside_window(adv, path, probe)
    missing = [m for m in messages if m.id not in p.vectors]
    for m, v in zip(missing, await p.embed([m.text for m in missing]), strict=True):
        p.vectors[m.id] = v
    kind, text = fact.question
    [query] = await p.embed([f"{narration}\n{text}"])  # the last two messages, as stored
    matrix = np.stack([p.vectors[m.id] for m in messages]) if messages else np.zeros((0, 1))
    ranked = cosine_ranking(query, matrix.astype(np.float32), [m.depth for m in messages])
    role_hit = fact.role in ("undone", "forked")
    hits = [
        (m.depth == planted) if fact.role == "planted" else role_hit and states(m.text, fact)
        for m in messages
    ]
    result.outcomes["sillytavern"] = outcome(
        ranked, hits, [states(m.text, fact) for m in messages], [len(m.text) for m in messages]
    )
    story, spans = _story_text(messages)
    chunks = chunk_spans(story)
    chunk_texts = [story[a:b] for a, b in chunks]
    target = _sentence_span(story, spans, fact, planted)
    if fact.role == "planted":
        hits = [
            target is not None and 2 * overlap(c, target) >= target[1] - target[0] for c in chunks
        ]
    else:
        hits = [role_hit and states(t, fact) for t in chunk_texts]
    query_text = tail(f"{narration}\n\n{render(kind, text)}")  # the end of the context
    db = textdb_ranking(terms(query_text), [terms(t) for t in chunk_texts])
    result.outcomes["textdb"] = outcome(
        db, hits, [states(t, fact) for t in chunk_texts], [len(t) for t in chunk_texts]
    )


def _story_text(messages: list[PathAction]) -> tuple[str, dict[int, tuple[int, int]]]:
    """The story as the player reads it, and each action's span in it, by depth."""
    parts: list[str] = []
    spans: dict[int, tuple[int, int]] = {}
    at = 0
    for m in messages:
        shown = render(m.type, m.text)
        spans[m.depth] = (at, at + len(shown))
        parts.append(shown)
        at += len(shown) + 2
    return "\n\n".join(parts), spans


def _sentence_span(
    story: str, spans: dict[int, tuple[int, int]], fact: Fact, planted: int | None
) -> tuple[int, int] | None:
    if planted is None or planted not in spans:
        return None
    start, end = spans[planted]
    found = story.find(fact.sentence, start, end)
    return (found, found + len(fact.sentence)) if found >= 0 else (start, end)


async def measure(
    p: Player, adv: Adventure, adventure_id: int, path: dict[int, PathAction], probe: Probe
) -> ProbeResult:
    fact = adv.facts[probe.fact]
    kind, text = fact.question
    snapshot = await p.rt.turns.dry_run(adventure_id, p.uid, p.models, kind, text)
    planted = adv.planted.get(fact.key)
    narration = next(path[d].text for d in sorted(path, reverse=True) if path[d].type == NARRATION)
    result = ProbeResult(
        p.embedder.key,
        adv.key,
        fact.key,
        fact.kind,
        fact.role,
        probe.depth,
        probe.distance,
        fact.cast,
        question=text,
        sentence=fact.sentence,
    )
    sections = {s["name"]: s["text"] for s in snapshot["sections"]}
    result.in_history = states(sections.get("history", ""), fact)
    result.in_summary = states(sections.get("story_summary", ""), fact)
    # Line by line: the Memories section carries passages from several stretches, and the
    # answer words of a fact gathered from two of them state nothing.
    result.in_context = any(states(line, fact) for t in sections.values() for line in t.split("\n"))
    result.history_kept = snapshot["history"]["kept"]
    await _memory_outcomes(p, adventure_id, fact, planted, snapshot, narration, result)
    await _chunk_outcomes(p, adv, path, probe, fact, planted, narration, result)
    return result


def _stating_on_path(p: Player, adventure_id: int, fact: Fact) -> int:
    with session_scope(p.rt.sessions) as session:
        lineage = Story.load(session, adventure_id, p.uid, p.rt.memory).lineage()
        rows = session.scalars(
            select(Memory).where(Memory.adventure_id == adventure_id, Memory.status == "active")
        )
        return sum(
            1 for m in rows if on_lineage(lineage, m.branch_id, m.depth) and states(m.text, fact)
        )


async def leaving(p: Player, adv: Adventure, adventure_id: int, role: str) -> Leaving:
    count = await asyncio.to_thread(_stating_on_path, p, adventure_id, adv.facts[role])
    return Leaving(p.embedder.key, adv.key, role, count)
