"""Playing a real text's region through the real engine, and what each question measures.

The player is the kit's (``benchmarks.kit.runtime.player``: the loopback model double as
narrator replays the text). Invariants:

- The region's units become its actions in order (``actions``): a unit longer than
  ``PIECE_TOKENS`` is cut at sentence ends into pieces that fit (a narrator's reply has a
  length limit: the settings' 200 tokens), never inside an evidence span. The first
  action is the opening; then each turn is two: the player's ``story`` action and the
  narrator's reply (the double is scripted with it). The memory worker runs to idle
  after every turn, so the bank is what production holds.
- Every evidence span is checked, once its action is saved, to be verbatim in the
  engine's action at the depth the question file gives.
- The questions are asked after the last turn, as dry runs (nothing is played), each
  measured by ``dense.play.measure`` (the product at top 5 and 10, the block baselines)
  and by ``sentence_share`` (the answering sentence, mostly, in one line) and the
  sentence-key baseline (``sentence_keys``) at the product's own token count.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from benchmarks.kit.play import PathAction, Turn, play_turn
from benchmarks.kit.runtime import Player
from benchmarks.recall.dense import baselines as bl
from benchmarks.recall.dense.generator import DenseProbe, Statement
from benchmarks.recall.dense.measure import words
from benchmarks.recall.dense.play import (
    Background,
    BlockCache,
    ProbeResult,
    idle_after_turn,
    measure,
)
from benchmarks.recall.real.questions import Question
from benchmarks.recall.real.texts import Region, region_units

from talekeeper.core.tokens import TokenCounter
from talekeeper.services.common.rendering import render
from talekeeper.services.memory.evidence import passages, sentences
from talekeeper.services.memory.terms import term_set
from talekeeper.services.story import adventures
from talekeeper.storage.db import session_scope

SENTENCE_SHARE = 0.6  # "the evidence sentence mostly there": this share of its terms in a line
PIECE_TOKENS = 160  # under the narrator's 200-token reply limit, whatever the double counts


@dataclass
class RealResult:
    region: str
    split: str
    id: str
    flags: dict[str, bool]
    probe: ProbeResult
    sentence: bool = False  # at top 5: each evidence span mostly in one line of the section
    sentence_keys: dict[int, bool] = field(default_factory=dict)  # baseline hit at top-k budget
    sentence_key_tokens: dict[int, int] = field(default_factory=dict)


def sentence_share(line: str, span: str) -> float:
    """The share of the span's distinct terms that ``line`` holds."""
    wanted = term_set(span)
    return len(wanted & term_set(line)) / len(wanted) if wanted else 0.0


def sentence_in(lines: list[str], spans: list[str]) -> bool:
    """Whether every span has ``SENTENCE_SHARE`` of its terms in a single line."""
    return bool(spans) and all(
        any(sentence_share(line, span) >= SENTENCE_SHARE for line in lines) for span in spans
    )


def _pieces(text: str, spans: list[str], counter: TokenCounter, limit: int) -> list[str]:
    """``text`` cut at sentence ends into pieces of at most ``limit`` tokens where it can
    be (a sentence longer than that stays whole), never inside one of ``spans``."""
    if counter.count(text) <= limit:
        return [text]
    covered = [(at, at + len(s)) for s in spans if (at := text.find(s)) >= 0]
    out: list[str] = []
    current, start, pos = "", 0, 0
    for sentence in sentences(text):
        at = text.find(sentence, pos)
        pos = at + len(sentence)
        joined = text[start:pos]
        cut_inside = any(a < at < b for a, b in covered)
        if current and not cut_inside and counter.count(joined) > limit:
            out.append(current)
            start, joined = at, text[at:pos]
        current = joined
    out.append(current)
    return out


def actions(
    units: tuple[str, ...], spans: dict[int, list[str]], counter: TokenCounter, limit: int
) -> list[tuple[int, str]]:
    """The region's actions in order, each (its unit's offset in the region, its text)."""
    return [
        (i, piece) for i, unit in enumerate(units)
        for piece in _pieces(unit, spans.get(i, []), counter, limit)
    ]  # fmt: skip


def _create(p: Player, region: Region, opening: str) -> tuple[int, PathAction]:
    data = {
        "title": region.title,
        "opening": opening,
        "persona": {"name": region.protagonist, "pronouns": "she/her"},
    }
    with session_scope(p.rt.sessions) as session:
        story = adventures.create(session, p.uid, data, p.rt.memory)
        for name in region.cast:  # the cards a player would keep: the named cast
            card = {"name": name, "type": "character", "keywords": [name.split()[-1]]}
            adventures.add_card(session, story.adventure, card | {"entry": f"{name}."})
        session.flush()
        head = story.head()
        assert head is not None
        return story.adventure.id, PathAction(head.id, head.depth, head.type, head.text)


@dataclass
class _Sentences:
    """The raw text's passages (``evidence.passages`` of each action) with their vectors."""

    texts: list[str] = field(default_factory=list)
    depths: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    vectors: list[np.ndarray] = field(default_factory=list)
    upto: int = -1  # the deepest action read


async def _sentence_keys(
    p: Player,
    path: dict[int, PathAction],
    limit: int,
    question: str,
    spans: list[Statement],
    budgets: dict[int, int],
    cache: _Sentences,
) -> tuple[dict[int, bool], dict[int, int]]:
    """The best raw sentences (hybrid score, as the block baseline) up to each budget."""
    counter = p.models.narrator.provider.token_counter(p.models.narrator.model)
    new = [(d, x.text) for d, x in sorted(path.items()) if cache.upto < d and d <= max(limit, 0)]
    if new:
        # One action at a time: ``passages`` keeps at most a memory's worth of keys per call.
        found = [s for d, t in new for s in passages([(d, render(path[d].type, t))])]
        vectors = await p.embed([s.text for s in found])
        for s, v in zip(found, vectors, strict=True):
            cache.texts.append(s.text)
            cache.depths.append(s.depth)
            cache.tokens.append(counter.count(s.text))
            cache.vectors.append(v)
        cache.upto = max(d for d, _ in new)
    keep = [i for i, d in enumerate(cache.depths) if d <= limit]
    [query] = await p.embed([question])
    matrix = np.stack([cache.vectors[i] for i in keep]).astype(np.float32)
    cos = bl.cosine(query, matrix)
    lex = bl.lexical(question, [cache.texts[i] for i in keep])
    ranked = bl.order(bl.hybrid(cos, lex))
    hits: dict[int, bool] = {}
    used: dict[int, int] = {}
    for k, budget in budgets.items():
        taken, spent = [], 0
        for i in ranked:
            cost = cache.tokens[keep[i]]
            if spent + cost > budget:
                break
            taken.append(words(cache.texts[keep[i]]))
            spent += cost
        hits[k] = all(any(set(s.answer) <= w for w in taken) for s in spans)
        used[k] = spent
    return hits, used


def _probe(q: Question, depth: int, depth_of: dict[str, int]) -> DenseProbe:
    statements = tuple(
        Statement(q.id, q.kind, depth_of[e.span], e.span, e.answer) for e in q.evidence
    )
    nearest = max(s.depth for s in statements)
    return DenseProbe(q.id, -1, depth, depth - nearest, q.kind, (q.asked_as, q.text), statements)


async def play_region(
    p: Player, folder: Path, region: Region, questions: list[Question]
) -> tuple[list[RealResult], Background]:
    """Play ``region``, then ask every question of it (module docstring)."""
    counter = p.models.narrator.provider.token_counter(p.models.narrator.model)
    by_unit: dict[int, list[str]] = {}
    for q in questions:
        for e in q.evidence:
            by_unit.setdefault(e.offset, []).append(e.span)
    texts = actions(region_units(folder, region), by_unit, counter, PIECE_TOKENS)
    if len(texts) % 2 == 0:
        texts.pop()  # whole turns only (the last piece is past every question's evidence)
    adventure_id, opening = await asyncio.to_thread(_create, p, region, texts[0][1])
    path = {0: opening}
    depth_of: dict[str, int] = {}  # evidence span -> its action's depth
    for depth, (unit, text) in enumerate(texts):
        for span in by_unit.get(unit, []):
            if span in text:
                depth_of[span] = depth
    background = Background()
    for i in range(1, len(texts) - 1, 2):
        turn = Turn(("story", texts[i][1]), texts[i + 1][1])
        saved = await play_turn(p, adventure_id, turn)
        for view in saved:
            action = path[view.depth] = PathAction.of(view)
            if action.text != texts[action.depth][1]:
                raise RuntimeError(f"{region.key}: action {action.depth} is not the text's")
        background.add(await idle_after_turn(p, adventure_id))
    named = (0, region.key, region.file.split("-")[0])
    blocks, raw = BlockCache(), _Sentences()
    out: list[RealResult] = []
    for q in questions:
        probe = _probe(q, max(path) + 1, depth_of)
        result = await measure(p, adventure_id, path, probe, blocks, named)
        limit = probe.depth - 1 - result.history_kept
        budgets = {k: r.tokens for k, r in result.product.items()}
        hits, used = await _sentence_keys(
            p, path, limit, q.text, list(probe.statements), budgets, raw
        )
        flags = {
            "paraphrased": q.paraphrased,
            "once_named": q.once_named,
            "two_passage": q.two_passage,
            "say": q.asked_as == "say",
        }
        out.append(
            RealResult(
                region.key, region.split.value, q.id, flags, result,
                sentence_in(result.injected, [e.span for e in q.evidence]), hits, used,
            )
        )  # fmt: skip
    return out, background
