"""Playing a dense adventure through the real engine, and what each probe measures there.

The player and its turns are the kit's (``benchmarks.kit.runtime.player``,
``benchmarks.kit.play.play_turn``: the reply checked against the script). Invariants:

- After every turn the memory worker runs to idle (``memory.idle()``), so the
  bank at a probe is what production would hold. The AI calls it made meanwhile
  (read from the AI-call records written after the turn) are its background
  cost: embedding calls, their time and tokens, and the memories written.
- Every statement is checked, once the adventure is played, to be verbatim in
  the engine's action at the depth the generator gave it (a script out of step stops
  the run).
- At a probe, before the probe is played as a normal turn: one dry run
  (``TurnRunner.dry_run``) per top-k in ``TOP_KS``, and every baseline ranking
  (``baselines``) over the raw text the history does not hold.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from benchmarks.kit.play import PathAction, create_adventure, play_turn
from benchmarks.kit.runtime import Player
from benchmarks.recall.dense import baselines as bl
from benchmarks.recall.dense.generator import DenseAdventure, DenseProbe, Statement
from benchmarks.recall.dense.measure import (
    covers,
    fact_in,
    in_one_piece,
    key_kinds,
    sections,
    source_ranges,
)
from sqlalchemy import func, select

from talekeeper.storage.db import session_scope
from talekeeper.storage.models import AiCall, Memory

TOP_KS = (5, 10)


@dataclass
class Reading:
    """The product at one top-k."""

    fact: bool  # the Memories section holds every statement
    one_line: bool  # ... each within one line
    summary: bool  # a sentence of the Story Summary holds each statement
    history: bool  # an action of the raw history holds each statement (must never)
    cover: bool  # injected memories' source ranges cover every stating depth
    tokens: int  # the Memories section's tokens
    injected: int  # memories injected
    top_score: float | None  # the first memory's final score
    keys: dict[str, int] = field(default_factory=dict)  # which key won, where the product says


@dataclass
class Ranked:
    """One baseline: hits and tokens at each top-k."""

    hits: dict[int, bool]
    tokens: dict[int, int]


@dataclass
class ProbeResult:
    embedder: str
    seed: int
    adventure: str
    style: str
    kind: str
    depth: int
    distance: int | None
    question: str
    statements: list[dict[str, Any]]
    history_kept: int
    product: dict[int, Reading] = field(default_factory=dict)
    baselines: dict[str, Ranked] = field(default_factory=dict)  # "cosine/6" -> ...
    injected: list[str] = field(default_factory=list)  # the Memories section at top 5


@dataclass
class Background:
    """The memory worker's work after every turn of one adventure."""

    turns: int = 0
    seconds: float = 0.0  # waiting for idle
    memories: int = 0  # memories written
    embed_calls: int = 0
    embed_ms: float = 0.0
    embed_tokens: int = 0

    def add(self, other: Background) -> None:
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


@dataclass
class BlockCache:
    """Per adventure: block vectors and token counts (a block's text never changes)."""

    vectors: dict[tuple[int, int], np.ndarray] = field(default_factory=dict)
    tokens: dict[tuple[int, int], int] = field(default_factory=dict)


def reading(snapshot: dict[str, Any], statements: list[Statement]) -> Reading:
    parts = sections(snapshot)
    memories, tokens = parts.get("memories", ("", 0))
    chosen = list(snapshot.get("memories", {}).get("used", []))
    return Reading(
        fact=fact_in(memories, statements),
        one_line=in_one_piece(memories, statements),
        summary=in_one_piece(parts.get("story_summary", ("", 0))[0], statements, "sentence"),
        history=in_one_piece(parts.get("history", ("", 0))[0], statements),
        cover=covers(source_ranges(chosen), [s.depth for s in statements]),
        tokens=tokens,
        injected=len(chosen),
        top_score=float(chosen[0]["final_score"]) if chosen else None,
        keys=dict(key_kinds(chosen)),
    )


async def _baselines(
    p: Player, path: dict[int, PathAction], limit: int, probe: DenseProbe, cache: BlockCache
) -> dict[str, Ranked]:
    actions = [(d, a.type, a.text) for d, a in sorted(path.items()) if d <= limit]
    counter = p.models.narrator.provider.token_counter(p.models.narrator.model)
    [query] = await p.embed([probe.question[1]])
    statements = list(probe.statements)
    out: dict[str, Ranked] = {}
    for size in bl.BLOCK_SIZES:
        chunks = bl.blocks(actions, size, limit)
        keys = [(size, b.start) for b in chunks]
        missing = [(k, b.text) for k, b in zip(keys, chunks, strict=True) if k not in cache.vectors]
        vectors = await p.embed([text for _, text in missing])
        for (k, text), v in zip(missing, vectors, strict=True):
            cache.vectors[k], cache.tokens[k] = v, counter.count(text)
        texts = [b.text for b in chunks]
        matrix = np.stack([cache.vectors[k] for k in keys]) if keys else np.zeros((0, 1))
        cos = bl.cosine(query, matrix.astype(np.float32))
        lex = bl.lexical(probe.question[1], texts)
        counts = [cache.tokens[k] for k in keys]
        for name, scores in (("cosine", cos), ("bm25", lex), ("hybrid", bl.hybrid(cos, lex))):
            ranked = bl.order(scores)
            out[f"{name}/{size}"] = Ranked(
                {k: bl.hit(ranked, texts, statements, k) for k in TOP_KS},
                {k: bl.tokens(ranked, counts, k) for k in TOP_KS},
            )
    return out


async def measure(
    p: Player,
    adventure_id: int,
    path: dict[int, PathAction],
    probe: DenseProbe,
    cache: BlockCache,
    named: tuple[int, str, str],
) -> ProbeResult:
    """``probe`` measured (module docstring); ``named``: the seed, adventure and style the
    result names."""
    kind, text = probe.question
    statements = list(probe.statements)
    result = ProbeResult(
        p.embedder.key,
        *named,
        probe.kind,
        probe.depth,
        probe.distance,
        text,
        [dataclasses.asdict(s) for s in statements],
        history_kept=0,
    )
    for k in TOP_KS:
        models = dataclasses.replace(p.models, memory_top_k=k)
        dry = await p.rt.turns.dry_run(adventure_id, p.uid, models, kind, text)
        snapshot: dict[str, Any] = dry.public()
        result.product[k] = reading(snapshot, statements)
        if k == TOP_KS[0]:
            result.history_kept = int(snapshot["history"]["kept"])
            result.injected = sections(snapshot).get("memories", ("", 0))[0].splitlines()
    limit = probe.depth - 1 - result.history_kept  # the newest action the history leaves out
    result.baselines = await _baselines(p, path, limit, probe, cache)
    return result


def _marks(p: Player) -> tuple[int, int]:
    with session_scope(p.rt.sessions) as session:
        call = session.scalar(select(func.max(AiCall.id))) or 0
        memory = session.scalar(select(func.max(Memory.id))) or 0
        return int(call), int(memory)


def _since(p: Player, adventure_id: int, marks: tuple[int, int]) -> Background:
    with session_scope(p.rt.sessions) as session:
        calls = session.scalars(
            select(AiCall).where(AiCall.id > marks[0], AiCall.kind == "embedding")
        ).all()
        memories = session.scalar(
            select(func.count(Memory.id)).where(
                Memory.id > marks[1], Memory.adventure_id == adventure_id
            )
        )
        return Background(
            memories=int(memories or 0),
            embed_calls=len(calls),
            embed_ms=sum(c.duration_ms for c in calls),
            embed_tokens=sum(c.tokens_in or 0 for c in calls),
        )


async def idle_after_turn(p: Player, adventure_id: int) -> Background:
    marks = await asyncio.to_thread(_marks, p)
    started = time.perf_counter()
    await p.memory.idle()
    took = time.perf_counter() - started
    got = await asyncio.to_thread(_since, p, adventure_id, marks)
    got.turns, got.seconds = 1, took
    return got


async def play(p: Player, adv: DenseAdventure, seed: int) -> tuple[list[ProbeResult], Background]:
    """Play ``adv`` (of the set of ``seed``); measure each probe just before it is played."""
    adventure_id, opening = await asyncio.to_thread(
        create_adventure, p, adv.title, adv.opening, adv.protagonist, adv.companions
    )
    path = {0: opening}
    probes = {q.op: q for q in adv.questions}
    cache, background, results = BlockCache(), Background(), []
    for index, op in enumerate(adv.ops):
        if index in probes:
            named = (seed, adv.key, adv.style)
            results.append(await measure(p, adventure_id, path, probes[index], cache, named))
        saved = await play_turn(p, adventure_id, op)
        for view in saved:
            path[view.depth] = PathAction.of(view)
        background.add(await idle_after_turn(p, adventure_id))
    for s in adv.statements:
        if s.sentence not in path[s.depth].text:
            raise RuntimeError(f"statement {s.fact} is not in the engine's action at {s.depth}")
    return results, background
