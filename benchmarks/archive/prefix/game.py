"""Playing the generated world through the real engine and recording, per turn, what the
narrator had to evaluate.

A game is played on its own ``Runtime``, built as the app builds it (``Runtime.build`` on a
migrated SQLite file in a temporary data dir, default settings: the in-process narrator and
embedder, the extractive summary and memory writer) with one change: the in-process
provider is the harness's ``BenchProvider``. Its narrator answers at once with the script's
narration and reports the prompt's tokens as a server does (its ``token_counter`` is a real
tokenizer, cl100k by default); its embeddings are the embedded MiniLM's (``minilm``) or
hashed words (``hashed``, deterministic and instant, for the tests). So every turn goes
through ``TurnRunner.begin``/``run`` (retrieval, the knowledge search, the context, the
prefix measure, the save with its Insights), and after each the memory worker's passes
(memories, summary, embeddings, eviction) run to the end before the next turn, as they would
between a player's turns.

The adventure has Plot Essentials, a persona, an Author's Note, a story card for each
member of the cast and the setting's bible attached from the knowledge library (stored by
``services.library.store`` and embedded by the runtime's own indexer before the first turn);
each can be left out (``Options``).

The narrator (``Options.narrator``, see ``narrators``) is that scripted one, or a real model
(the app's embedded SmolLM2, or the same model behind ``llama_cpp.server``) that is asked
every turn while the reply stored is still the script's: the same world and turns in every
game, the model's prompt evaluation and first token real.

Per turn the record keeps the Insights' ``tokens.prompt_cached``/``prompt_evaluated`` (the
prompt is their sum: the product's count, in the narrator's tokenizer; Insights'
``tokens.prompt`` is the provider's own count where it gives one, kept as ``reported``) and
budget, its ``timings`` (``first_token_ms`` among them), the turn's wall time, what the
context held, the first section that differs from the previous turn's context and every
section that does (``layout``), where the two prompts' texts first differ (a check on the
classifier), for each extra tokenizer the same prompts' figures counted with it, and for a
real narrator what llama.cpp says it evaluated.
"""

from __future__ import annotations

import asyncio
import math
import tempfile
import time
import zlib
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from benchmarks.prefix import layout, world
from benchmarks.prefix.narrators import (
    NARRATORS,
    SERVER_ALIAS,
    EvalProbe,
    LlamaPerf,
    ScriptedReply,
    llama_server,
)

from talekeeper.bootstrap import Runtime
from talekeeper.core.errors import TalekeeperError
from talekeeper.core.tokens import BpeCounter, TokenCounter
from talekeeper.providers.base import (
    Chunk,
    Completion,
    CompletionRequest,
    Embeddings,
    Provider,
    ProviderInfo,
)
from talekeeper.services.story import adventures
from talekeeper.services.library import store
from talekeeper.services.memory.service import MemorySystem
from talekeeper.services.prompt.prefix import prompt_text, shared_prefix
from talekeeper.settings import EXTRACTIVE, REGISTRY, load_settings
from talekeeper.storage.db import session_scope
from talekeeper.storage.models import Adventure

EMBEDDERS = ("minilm", "hashed")
HASHED_DIMS = 256
STREAM_PIECES = 4  # a reply arrives in a few chunks, as a stream does
BIBLE_FILE = "lantern-coast-bible.md"
LAYOUT_SETTING = "context_layout"


@dataclass(frozen=True)
class Options:
    context_tokens: int
    turns: int
    seed: int = 19
    embedder: str = "minilm"
    cards: bool = True
    knowledge: bool = True
    authors_note: bool = True
    memory_bank: bool = True
    tokenizers: tuple[str, ...] = ()  # extra tokenizers the same prompts are counted with
    layout: str | None = None  # the context layout setting; None: the product's default
    narrator: str = "scripted"  # one of ``narrators.NARRATORS``


class Embedder(Protocol):
    async def embed(self, texts: list[str], model: str) -> Embeddings: ...

    async def aclose(self) -> None: ...


class HashedEmbedder:
    """Bag of lower-cased words hashed into ``HASHED_DIMS``, L2-normalised: deterministic,
    instant, and texts that share names are near one another."""

    async def embed(self, texts: list[str], model: str) -> Embeddings:
        return Embeddings([self.vector(t) for t in texts], model)

    @staticmethod
    def vector(text: str) -> list[float]:
        out = [0.0] * HASHED_DIMS
        for word in text.lower().split():
            word = word.strip(".,;:!?\"'()[]")
            if word:
                out[zlib.crc32(word.encode()) % HASHED_DIMS] += 1.0
        norm = math.sqrt(sum(v * v for v in out)) or 1.0
        return [v / norm for v in out]

    async def aclose(self) -> None:
        return None


def make_embedder(name: str) -> Embedder:
    if name == "hashed":
        return HashedEmbedder()
    if name == "minilm":
        from talekeeper.providers.embedded import EmbeddedProvider

        return EmbeddedProvider()  # only its embedder is used: MiniLM, loaded on first use
    raise ValueError(f"unknown embedder {name!r}: one of {', '.join(EMBEDDERS)}")


def make_counter(name: str) -> TokenCounter:
    """``cl100k`` or ``smollm2`` (the embedded narrator's own, vocabulary only)."""
    if name == "cl100k":
        return BpeCounter()
    if name == "smollm2":
        from talekeeper.providers.embedded import EmbeddedProvider

        counter = EmbeddedProvider().token_counter("embedded")
        counter.count("a")  # loads it now, or fails here
        return counter
    raise ValueError(f"unknown tokenizer {name!r}: cl100k or smollm2")


class BenchProvider:
    """The runtime's in-process provider, replaced: a scripted narrator that answers at once
    and reports the prompt's tokens, and the chosen embedder."""

    def __init__(self, counter: TokenCounter, embedder: Embedder) -> None:
        self.info = ProviderInfo(name="prefix-bench")
        self.counter = counter
        self.embedder = embedder
        self.reply = ""
        self.last: CompletionRequest | None = None  # the last request the narrator got

    def script(self, reply: str) -> None:
        self.reply = reply

    def _completion(self, request: CompletionRequest) -> Completion:
        tokens_in = self.counter.count(prompt_text(request))  # what a server reports
        return Completion(
            self.reply, request.model, "stop", tokens_in, self.counter.count(self.reply)
        )

    async def complete(self, request: CompletionRequest) -> Completion:
        self.last = request
        return self._completion(request)

    async def stream(self, request: CompletionRequest) -> AsyncIterator[Chunk]:
        self.last = request
        step = max(1, math.ceil(len(self.reply) / STREAM_PIECES))
        for start in range(0, len(self.reply), step):
            yield Chunk(self.reply[start : start + step])
        yield Chunk("", done=self._completion(request))

    async def embed(self, texts: list[str], model: str) -> Embeddings:
        return await self.embedder.embed(texts, model)

    async def list_models(self) -> list[str]:
        return ["embedded"]

    def token_counter(self, model: str) -> TokenCounter:
        return self.counter

    async def aclose(self) -> None:
        await self.embedder.aclose()


@dataclass
class TurnRecord:
    turn: int  # 1 for the first
    prompt: int  # the prompt as the product measured it: ``cached + evaluated``
    cached: int  # Insights ``tokens.prompt_cached``
    evaluated: int  # ``tokens.prompt_evaluated``
    budget_used: int
    budget_available: int
    history_kept: int
    history_dropped: int
    history_cut: bool
    memories: int  # memories in the context
    cards: int  # story cards in the context
    passages: int  # knowledge passages in the context
    summary: bool  # a Story Summary in the context
    tokens: dict[str, int]  # each section's tokens (Insights), the empty ones left out
    cause: str  # ``layout.first_break``
    changed: list[str]  # ``layout.changed``
    moved: list[str]  # ``layout.moved``
    text_break: list[str]  # the segments at the prompts' first differing character
    layout: str  # the context layout Insights names ("classic" before there was a choice)
    reported: int = 0  # Insights ``tokens.prompt``: the provider's count where it gives one
    narrator: str = "scripted"
    evaluated_by: str = "prefix"  # Insights ``tokens.prompt_evaluated_by``
    timings: dict[str, float] = field(default_factory=dict)  # Insights ``timings``
    first_token_ms: float | None = None  # Insights ``timings.first_token_ms``
    turn_ms: float = 0.0  # the turn's wall time: ``begin`` to the reply saved
    idle_ms: float = 0.0  # then the memory worker's passes, run to the end
    model_evaluated: int | None = None  # what llama.cpp says it evaluated (a real narrator)
    model_tokens: int | None = None  # what the model generated (its reply is not stored)
    others: dict[str, dict[str, int]] = field(default_factory=dict)  # by extra tokenizer

    @property
    def overflowed(self) -> bool:
        return self.history_dropped > 0 or self.history_cut

    @property
    def agrees(self) -> bool:
        return agrees(self.cause, self.text_break)

    @property
    def share(self) -> float:
        return self.evaluated / self.prompt if self.prompt else 0.0

    def public(self) -> dict[str, Any]:
        return asdict(self)


def _section(sections: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(s for s in sections if s["name"] == name)


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
    return [_segment_at(*previous[1:], offset), _segment_at(*current[1:], offset)]


def agrees(cause: str, text_sections: list[str]) -> bool:
    """Whether the classifier's cause names a segment the texts first differ in."""
    if cause in (*layout.HISTORY_CAUSES, layout.ACTION):
        return any(name in layout.STORY for name in text_sections)
    return cause in text_sections


@dataclass
class Game:
    rt: Runtime
    provider: BenchProvider
    uid: int
    adventure_id: int
    others: dict[str, TokenCounter]
    narrator: Provider | None = None  # a real narrator's provider, wrapped each turn
    probe: EvalProbe | None = None  # what it says it evaluated
    kind: str = "scripted"  # the narrator's name in ``narrators.NARRATORS``
    records: list[TurnRecord] = field(default_factory=list)
    _previous: Placed | None = None
    _other_tokens: dict[str, list[int]] = field(default_factory=dict)

    @property
    def memory(self) -> MemorySystem:
        assert isinstance(self.rt.memory, MemorySystem)
        return self.rt.memory

    async def play(self, turn: world.Turn) -> TurnRecord:
        models = self.rt.models_for_user(self.uid)
        wrapped: ScriptedReply | None = None
        if self.narrator is None:
            self.provider.script(turn.narration)
        else:  # the turn's narrator, the product's own model, answers with the script
            wrapped = ScriptedReply(self.narrator, turn.narration)
            models.narrator.provider = wrapped
        runner = self.rt.turns
        started = time.perf_counter()
        pending = await asyncio.to_thread(
            runner.begin, self.adventure_id, self.uid, "do", turn.action, models
        )
        reply: dict[str, Any] | None = None
        async for event in runner.run(pending, models):
            if event.kind == "error":
                raise RuntimeError(f"turn failed: {event.data}")
            if event.kind == "reply":
                reply = event.data
        turn_ms = 1000 * (time.perf_counter() - started)
        request = self.provider.last if wrapped is None else wrapped.said.request
        assert reply is not None and request is not None
        assert reply["reply"]["text"] == turn.narration, "the stored reply is not the script's"
        record = self._record(reply["insights"], prompt_text(request))
        record.narrator, record.turn_ms = self.kind, turn_ms
        if wrapped is not None:
            done = wrapped.said.completion
            record.model_tokens = done.tokens_out if done else None
            record.model_evaluated = self.probe.evaluated() if self.probe else None
        self.records.append(record)
        started = time.perf_counter()
        await self.memory.idle()
        record.idle_ms = 1000 * (time.perf_counter() - started)
        return record

    def _record(self, insights: dict[str, Any], text: str) -> TurnRecord:
        lay, spans = layout.from_prompt(insights, text)
        before = self._previous[1] if self._previous else None
        cause, _ = layout.first_break(before, lay)
        sections = insights["sections"]
        tokens, budget, history = insights["tokens"], insights["budget"], insights["history"]
        others = {}
        for name, counter in self.others.items():
            ids = counter.tokens(text)
            last = self._other_tokens.get(name)
            cached = shared_prefix(last, ids) if last is not None else 0
            self._other_tokens[name] = ids
            others[name] = {"prompt": len(ids), "cached": cached, "evaluated": len(ids) - cached}
        record = TurnRecord(
            turn=len(self.records) + 1,
            prompt=int(tokens["prompt_cached"]) + int(tokens["prompt_evaluated"]),
            cached=int(tokens["prompt_cached"]),
            evaluated=int(tokens["prompt_evaluated"]),
            reported=int(tokens["prompt"]),
            budget_used=int(budget["used"]),
            budget_available=int(budget["available"]),
            history_kept=int(history["kept"]),
            history_dropped=int(history["dropped"]),
            history_cut=history["cut_action_id"] is not None,
            memories=len(insights["memories"]["used"]),
            cards=len(insights["cards"]),
            passages=len(_section(sections, "knowledge").get("passages", [])),
            summary=bool(_section(sections, "story_summary")["text"]),
            tokens={s["name"]: int(s["tokens"]) for s in sections if s["tokens"]},
            cause=cause,
            changed=layout.changed(before, lay),
            moved=layout.moved(before, lay),
            text_break=text_break(self._previous, (text, lay, spans)),
            layout=str(insights.get("layout", {}).get("name", "classic")),
            evaluated_by=str(tokens.get("prompt_evaluated_by") or "prefix"),
            first_token_ms=insights.get("timings", {}).get("first_token_ms"),
            timings=dict(insights.get("timings", {})),
            others=others,
        )
        self._previous = (text, lay, spans)
        return record


def _create(rt: Runtime, uid: int, options: Options) -> int:
    data: dict[str, Any] = {
        "title": world.TITLE,
        "opening": world.OPENING,
        "plot_essentials": world.PLOT_ESSENTIALS,
        "authors_note": world.AUTHORS_NOTE if options.authors_note else "",
        "persona": world.PERSONA,
        "memory_bank": options.memory_bank,
    }
    with session_scope(rt.sessions) as session:
        story = adventures.create(session, uid, data, rt.memory)
        if options.cards:
            adventures.add_cards(session, story.adventure, world.cards())
        return story.adventure.id


async def _attach_bible(rt: Runtime, uid: int, adventure_id: int, seed: int) -> None:
    """The bible stored as an upload is, then embedded by the runtime's indexer (stepped
    here, so it is searchable from the first turn)."""
    counter = BpeCounter()
    prepared = store.prepare(BIBLE_FILE, world.bible(seed).encode(), counter)
    embedding = rt.models_for_user(uid).embedding
    with session_scope(rt.sessions) as session:
        source = store.store(session, uid, prepared, embedding.model if embedding else None)
        adventure = session.get(Adventure, adventure_id)
        assert adventure is not None
        store.set_attached(session, adventure, [source.id])
    assert rt.indexer is not None
    await rt.indexer.run(source.id)  # here, before the first turn (never asked for)


@asynccontextmanager
async def game(options: Options) -> AsyncIterator[Game]:
    """A fresh runtime and adventure for ``options``; nothing played yet.

    The runtime's in-process provider is the harness's ``BenchProvider`` whatever the
    narrator: it embeds (with ``options.embedder``) and, for ``scripted``, narrates. A real
    narrator is the product's own provider, wrapped by ``Game.play`` each turn: for
    ``embedded`` the ``EmbeddedProvider`` the runtime built (its context the size under
    test), for ``server`` the runtime's endpoint provider, pointed at a ``llama_cpp.server``
    started for this game (the memory writer and summary stay extractive)."""
    if options.narrator not in NARRATORS:
        raise ValueError(f"unknown narrator {options.narrator!r}: one of {', '.join(NARRATORS)}")
    others = {name: make_counter(name) for name in options.tokenizers}
    provider = BenchProvider(BpeCounter(), make_embedder(options.embedder))
    async with AsyncExitStack() as stack:
        root = stack.enter_context(tempfile.TemporaryDirectory(prefix="talekeeper-prefix-"))
        environ = {
            "TALEKEEPER_DATA_DIR": str(Path(root) / "data"),
            "TALEKEEPER_CONTEXT_TOKENS": str(options.context_tokens),
        }
        if options.layout is not None:
            if not any(s.key == LAYOUT_SETTING for s in REGISTRY):
                raise ValueError("this version of Talekeeper has no choice of context layout")
            environ["TALEKEEPER_" + LAYOUT_SETTING.upper()] = options.layout
        probe: EvalProbe | None = None
        if options.narrator == "server":
            server = await stack.enter_async_context(llama_server(options.context_tokens))
            environ |= {
                "TALEKEEPER_ENDPOINT_URL": server.url,
                "TALEKEEPER_MODEL": SERVER_ALIAS,
                "TALEKEEPER_SUMMARY_MODEL": EXTRACTIVE,
            }
            probe = server.log
        settings = load_settings(environ)
        rt = Runtime.build(settings)
        built = rt.embedded
        rt.embedded = provider  # type: ignore[assignment]  # the app's in-process provider, replaced
        narrator: Provider | None = None
        if options.narrator == "embedded":
            narrator, probe = built, LlamaPerf(built)
        elif options.narrator == "server":
            narrator = rt.endpoint_provider(settings)
        try:
            await rt.start()
            uid = rt.local_user_id()
            adventure_id = await asyncio.to_thread(_create, rt, uid, options)
            if options.knowledge:
                await _attach_bible(rt, uid, adventure_id, options.seed)
            yield Game(rt, provider, uid, adventure_id, others, narrator, probe, options.narrator)
        finally:
            await rt.aclose()
            await built.aclose()


async def play(
    options: Options, progress: Callable[[TurnRecord], None] | None = None
) -> list[TurnRecord]:
    """Play ``options.turns`` turns of the script; the records, one per turn."""
    script = world.Script(options.seed, BpeCounter())
    async with game(options) as g:
        for index in range(options.turns):
            try:
                record = await g.play(script.turn(index))
            except TalekeeperError as exc:
                raise RuntimeError(f"turn {index + 1}: {exc.message}") from exc
            if progress is not None:
                progress(record)
        return g.records
