"""Playing the generated world through the real engine and recording, per turn, what the
narrator had to evaluate.

A game is played on the kit's player (``benchmarks.kit.runtime.player``): a ``Runtime``
built as the app builds it on a migrated SQLite file in a temporary folder, the memory
worker started, the extractive summary and memory writer, the embedded MiniLM embedder by
default (``EMBEDDERS``), the context size and layout under test. Every turn goes through
``TurnRunner.begin``/``run`` (the world's rules, retrieval, the knowledge search, the
context, the prefix measure, the save with its Insights); after each, the memory worker's
passes (memories, summary, embeddings, eviction) run to the end before the next turn, as
they would between a player's turns.

The narrator (``Options.narrator``, see ``narrators``):

- ``scripted``: the kit's model double (an OpenAI-compatible server on loopback), scripted
  with the turn's narration: it answers at once, and the prompt is counted as an endpoint's
  (cl100k), so the figures are the product's counts alone;
- ``embedded``: the app's own in-process SmolLM2 (``TALEKEEPER_MODEL=embedded``);
- ``server``: the same model behind a ``llama_cpp.server`` started for the game, as the
  endpoint.

Each turn the narrator's provider is wrapped in a ``narrators.ScriptedReply``: the model is
asked, the reply stored is the script's. So every game plays the same story.

The adventure has Plot Essentials, a persona, an Author's Note, a story card for each
member of the cast and, when asked (``Options.knowledge``), the setting's bible attached
from the knowledge library (stored by ``services.library.store`` and embedded by the
runtime's own indexer before the first turn); each can be left out (``Options``). The story
is ``world.Script``'s, moving (the Current state section says something and changes now
and then) or still.

Per turn the record keeps the Insights' ``tokens.prompt_cached``/``prompt_evaluated`` (the
product's count, in the narrator's tokenizer; Insights' ``tokens.prompt`` is the provider's
own count where it gives one, kept as ``reported``), the same measured here on the prompt
text with the narrator's own tokenizer (``own``: a check on the product's count), the
budget, its ``timings`` (``first_token_ms`` among them), the turn's wall time, what the
context held, the first section that differs from the previous turn's context and every
section that does (``layout``), where the two prompts' texts first differ (a check on the
classifier), for each extra tokenizer the same prompts' figures counted with it, and for a
real narrator what llama.cpp says it evaluated.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from benchmarks.kit.runtime import EMBEDDERS, Player, player
from benchmarks.prefix import layout, world
from benchmarks.prefix.narrators import (
    NARRATORS,
    SERVER_ALIAS,
    EvalProbe,
    LlamaPerf,
    ScriptedReply,
    llama_server,
)

from talekeeper.core.errors import TalekeeperError
from talekeeper.core.tokens import BpeCounter, TokenCounter
from talekeeper.providers.embedded import EmbeddedProvider
from talekeeper.services.library import store
from talekeeper.services.prompt.insights.stored import Snapshot
from talekeeper.services.prompt.prefix import prompt_text, shared_prefix
from talekeeper.services.story import adventures
from talekeeper.settings import EMBEDDED
from talekeeper.storage.db import session_scope
from talekeeper.storage.models import Adventure
from talekeeper_testkit.double import ModelDouble

BIBLE_FILE = "lantern-coast-bible.md"
SEED = 19


@dataclass(frozen=True)
class Options:
    context_tokens: int
    turns: int
    seed: int = SEED
    embedder: str = "embedded"  # a key of ``benchmarks.kit.runtime.EMBEDDERS``
    cards: bool = True
    knowledge: bool = False  # the setting's bible attached from the knowledge library
    authors_note: bool = True
    memory_bank: bool = True
    tokenizers: tuple[str, ...] = ()  # extra tokenizers the same prompts are counted with
    layout: str | None = None  # the context layout setting; None: the product's default
    narrator: str = "scripted"  # one of ``narrators.NARRATORS``
    moving: bool = True  # the story changes the world (``world.Script``)


def make_counter(name: str) -> TokenCounter:
    """``cl100k`` or ``smollm2`` (the embedded narrator's own, vocabulary only)."""
    if name == "cl100k":
        return BpeCounter()
    if name == "smollm2":
        counter = EmbeddedProvider().token_counter(EMBEDDED)
        counter.count("a")  # loads it now, or fails here
        return counter
    raise ValueError(f"unknown tokenizer {name!r}: cl100k or smollm2")


@dataclass
class Count:
    """One prompt counted with one tokenizer against the previous prompt."""

    prompt: int
    cached: int
    evaluated: int


@dataclass
class TurnRecord:
    turn: int  # 1 for the first
    prompt: int  # the prompt as the product measured it: ``cached + evaluated``
    cached: int  # Insights ``tokens.prompt_cached``
    evaluated: int  # ``tokens.prompt_evaluated``
    own: Count  # the same, counted here on the prompt text with the narrator's tokenizer
    budget_used: int
    budget_available: int
    history_kept: int
    history_dropped: int
    history_cut: bool
    memories: int  # memories in the context
    cards: int  # story cards in the context
    passages: int  # knowledge passages in the context
    summary: bool  # a Story Summary in the context
    state: str  # the Current state section's text ("" when the world said nothing)
    tokens: dict[str, int]  # each section's tokens (Insights), the empty ones left out
    cause: str  # ``layout.first_break``
    changed: list[str]  # ``layout.changed``
    moved: list[str]  # ``layout.moved``
    text_break: list[str]  # the segments at the prompts' first differing character
    layout: str  # the context layout Insights names
    reported: int = 0  # Insights ``tokens.prompt``: the provider's count where it gives one
    narrator: str = "scripted"
    evaluated_by: str = "prefix"  # Insights ``tokens.prompt_evaluated_by``
    timings: dict[str, float] = field(default_factory=dict)  # Insights ``timings``
    first_token_ms: float | None = None  # Insights ``timings.first_token_ms``
    turn_ms: float = 0.0  # the turn's wall time: ``begin`` to the reply saved
    idle_ms: float = 0.0  # then the memory worker's passes, run to the end
    model_evaluated: int | None = None  # what llama.cpp says it evaluated (a real narrator)
    model_tokens: int | None = None  # what the model generated (its reply is not stored)
    others: dict[str, Count] = field(default_factory=dict)  # by extra tokenizer

    @property
    def overflowed(self) -> bool:
        return self.history_dropped > 0 or self.history_cut

    @property
    def agrees(self) -> bool:
        return agrees(self.cause, self.text_break)

    @property
    def share(self) -> float:
        return self.evaluated / self.prompt if self.prompt else 0.0

    @property
    def counted_alike(self) -> bool:
        """Whether the product's count is the one made here on the same prompt (only
        when the product counted it itself: a server's own figure is another count)."""
        return self.evaluated_by != "prefix" or (
            self.cached == self.own.cached and self.evaluated == self.own.evaluated
        )

    def public(self) -> dict[str, Any]:
        return asdict(self)


def first_difference(a: str, b: str) -> int:
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def _segment_at(lay: layout.Layout, spans: list[layout.Span], offset: int) -> str:
    """The segment at character ``offset`` (the next one when it falls on a marker between
    two; ``layout.APPENDED`` past the last)."""
    return next(
        (s.name for s, (_, end) in zip(lay, spans, strict=True) if offset < end), layout.APPENDED
    )


Placed = tuple[str, layout.Layout, list[layout.Span]]  # a prompt's text, layout and spans


def text_break(previous: Placed | None, current: Placed) -> list[str]:
    """Where the two prompts' texts first differ: the segment there in the previous prompt
    and in this one (``[first_turn]``, or ``[appended]`` when the previous is whole)."""
    if previous is None:
        return [layout.FIRST_TURN]
    offset = first_difference(previous[0], current[0])
    if offset >= len(previous[0]):
        return [layout.APPENDED]
    return [_segment_at(previous[1], previous[2], offset), _segment_at(*current[1:], offset)]


def agrees(cause: str, text_sections: list[str]) -> bool:
    """Whether the classifier's cause names a segment the texts first differ in."""
    if cause in (*layout.HISTORY_CAUSES, layout.ACTION):
        return any(name in layout.STORY for name in text_sections)
    return cause in text_sections


class Counted:
    """One tokenizer's count of each prompt against the one before it."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._last: list[int] | None = None

    def next(self, text: str) -> Count:
        ids = self.counter.tokens(text)
        cached = shared_prefix(self._last, ids) if self._last is not None else 0
        self._last = ids
        return Count(len(ids), cached, len(ids) - cached)


@dataclass
class Game:
    p: Player
    adventure_id: int
    others: dict[str, Counted]
    probe: EvalProbe | None = None  # what a real narrator says it evaluated
    kind: str = "scripted"  # the narrator's name in ``narrators.NARRATORS``
    records: list[TurnRecord] = field(default_factory=list)
    _own: Counted | None = None
    _previous: Placed | None = None

    async def play(self, turn: world.Turn) -> TurnRecord:
        p = self.p
        models = p.rt.models_for_user(p.uid)  # this turn's: its narrator is wrapped below
        if self.kind == "scripted":
            p.double.script(turn.narration)
        wrapped = ScriptedReply(models.narrator.provider, turn.narration)
        models.narrator.provider = wrapped
        runner = p.rt.turns
        started = time.perf_counter()
        pending = await asyncio.to_thread(
            runner.begin, self.adventure_id, p.uid, "do", turn.action, models
        )
        reply: dict[str, Any] | None = None
        async for event in runner.run(pending, models):
            if event.kind == "error":
                raise RuntimeError(f"turn failed: {event.data}")
            if event.kind == "reply":
                reply = event.data
        turn_ms = 1000 * (time.perf_counter() - started)
        request = wrapped.said.request
        assert reply is not None and request is not None
        assert reply["reply"].text == turn.narration, "the stored reply is not the script's"
        if self._own is None:
            self._own = Counted(models.narrator.provider.token_counter(models.narrator.model))
        snapshot = Snapshot.model_validate(reply["insights"])
        record = self._record(snapshot, prompt_text(request))
        record.narrator, record.turn_ms = self.kind, turn_ms
        done = wrapped.said.completion
        if self.kind != "scripted":
            record.model_tokens = done.tokens_out if done else None
            record.model_evaluated = self.probe.evaluated() if self.probe else None
        self.records.append(record)
        started = time.perf_counter()
        await p.memory.idle()
        record.idle_ms = 1000 * (time.perf_counter() - started)
        return record

    def _record(self, snapshot: Snapshot, text: str) -> TurnRecord:
        assert self._own is not None
        lay, spans = layout.from_prompt(snapshot, text)
        before = self._previous[1] if self._previous else None
        cause, _ = layout.first_break(before, lay)
        sections = {s.name: s for s in snapshot.sections}
        tokens, history = snapshot.tokens, snapshot.history
        knowledge = sections.get("knowledge")
        record = TurnRecord(
            turn=len(self.records) + 1,
            prompt=int(tokens.prompt_cached or 0) + int(tokens.prompt_evaluated or 0),
            cached=int(tokens.prompt_cached or 0),
            evaluated=int(tokens.prompt_evaluated or 0),
            own=self._own.next(text),
            reported=tokens.prompt,
            budget_used=snapshot.budget.used,
            budget_available=snapshot.budget.available,
            history_kept=history.kept,
            history_dropped=history.dropped,
            history_cut=history.cut_action_id is not None,
            memories=len(snapshot.memories.used),
            cards=len(snapshot.cards),
            passages=len(knowledge.passages or []) if knowledge else 0,
            summary=bool(sections["story_summary"].text) if "story_summary" in sections else False,
            state=sections["current_state"].text if "current_state" in sections else "",
            tokens={s.name: s.tokens for s in snapshot.sections if s.tokens},
            cause=cause,
            changed=layout.changed(before, lay),
            moved=layout.moved(before, lay),
            text_break=text_break(self._previous, (text, lay, spans)),
            layout=snapshot.layout.name,
            evaluated_by=tokens.prompt_evaluated_by or "prefix",
            first_token_ms=snapshot.timings.get("first_token_ms"),
            timings=dict(snapshot.timings),
            others={name: counted.next(text) for name, counted in self.others.items()},
        )
        self._previous = (text, lay, spans)
        return record


def _create(p: Player, options: Options) -> int:
    data: dict[str, Any] = {
        "title": world.TITLE,
        "opening": world.OPENING,
        "plot_essentials": world.PLOT_ESSENTIALS,
        "authors_note": world.AUTHORS_NOTE if options.authors_note else "",
        "persona": world.PERSONA,
        "memory_bank": options.memory_bank,
    }
    with session_scope(p.rt.sessions) as session:
        story = adventures.create(session, p.uid, data, p.rt.memory)
        if options.cards:
            adventures.add_cards(session, story.adventure, world.cards())
        return story.adventure.id


async def _attach_bible(p: Player, adventure_id: int, seed: int) -> None:
    """The bible stored as an upload is, then embedded by the runtime's indexer (run here,
    so it is searchable from the first turn)."""
    prepared = store.prepare(BIBLE_FILE, world.bible(seed).encode(), BpeCounter())
    embedding = p.models.embedding
    with session_scope(p.rt.sessions) as session:
        source = store.store(session, p.uid, prepared, embedding.model if embedding else None)
        adventure = session.get(Adventure, adventure_id)
        assert adventure is not None
        store.set_attached(session, adventure, [source.id])
        source_id = source.id
    assert p.rt.indexer is not None
    await p.rt.indexer.run(source_id)  # here, before the first turn (never asked for)


@asynccontextmanager
async def game(options: Options) -> AsyncIterator[Game]:
    """A fresh runtime and adventure for ``options``; nothing played yet.

    ``scripted``: the narrator is the kit's double at the runtime's endpoint. ``embedded``:
    the runtime's in-process provider (its context the size under test). ``server``: the
    endpoint is a ``llama_cpp.server`` started for this game (then the double serves
    nothing, and the embedder must be the in-process one). The memory writer and the
    summary stay extractive."""
    if options.narrator not in NARRATORS:
        raise ValueError(f"unknown narrator {options.narrator!r}: one of {', '.join(NARRATORS)}")
    if options.embedder not in EMBEDDERS:
        raise ValueError(f"unknown embedder {options.embedder!r}: one of {', '.join(EMBEDDERS)}")
    if options.narrator == "server" and options.embedder != "embedded":
        raise ValueError("the server narrator's endpoint embeds nothing: use --embedder embedded")
    others = {name: Counted(make_counter(name)) for name in options.tokenizers}
    async with AsyncExitStack() as stack:
        double = stack.enter_context(ModelDouble())
        extra: dict[str, str] = {}
        if options.layout is not None:
            extra["TALEKEEPER_CONTEXT_LAYOUT"] = options.layout
        probe: EvalProbe | None = None
        if options.narrator == "embedded":
            extra["TALEKEEPER_MODEL"] = EMBEDDED
        elif options.narrator == "server":
            server = await stack.enter_async_context(llama_server(options.context_tokens))
            extra |= {"TALEKEEPER_ENDPOINT_URL": server.url, "TALEKEEPER_MODEL": SERVER_ALIAS}
            probe = server.log
        p = await stack.enter_async_context(
            player(
                EMBEDDERS[options.embedder],
                double,
                context_tokens=options.context_tokens,
                extra=extra,
            )
        )
        if options.narrator == "embedded":
            built = p.rt.embedded
            assert isinstance(built, EmbeddedProvider)
            probe = LlamaPerf(built)
        adventure_id = await asyncio.to_thread(_create, p, options)
        if options.knowledge:
            await _attach_bible(p, adventure_id, options.seed)
        await p.memory.idle()  # the opening's passes, before the first turn
        yield Game(p, adventure_id, others, probe, options.narrator)


async def play(
    options: Options, progress: Callable[[TurnRecord], None] | None = None
) -> list[TurnRecord]:
    """Play ``options.turns`` turns of the script; the records, one per turn."""
    script = world.Script(options.seed, BpeCounter(), moving=options.moving)
    async with game(options) as g:
        for index in range(options.turns):
            try:
                record = await g.play(script.turn(index))
            except TalekeeperError as exc:
                raise RuntimeError(f"turn {index + 1}: {exc.message}") from exc
            if progress is not None:
                progress(record)
        return g.records
