"""The prompt-prefix harness: its classifier on hand-made pairs of contexts, its reading of
a rendered prompt, short games through the real engine whose figures must add up, the
wrapper that lets a real narrator play the script, and the report it writes."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from benchmarks.prefix import layout, narrators, report, world
from benchmarks.prefix.game import Options, TurnRecord, agrees, game, play, text_break
from benchmarks.prefix.layout import Segment, changed, classic, first_break, from_prompt, moved
from benchmarks.prefix.narrators import REPLY_CAP, ScriptedReply, ServerLog
from benchmarks.prefix.report import markdown
from benchmarks.prefix.run import Figures, main, steady_turns, summarize

from talekeeper.core.tokens import BpeCounter, CharCounter, TokenCounter
from talekeeper.providers.base import (
    Chunk,
    Completion,
    CompletionRequest,
    Embeddings,
    Message,
    ProviderInfo,
)
from talekeeper.services.context import SEPARATOR, HistoryEntry, Section, build_context
from talekeeper.services.prefix import prompt_text
from talekeeper.storage.db import read_scope
from talekeeper.storage.models import Action

AI = "You are the narrator."
PLOT = "[Plot Essentials]\nThe lamps are going dark."
SUMMARY = "[Story Summary]\nYou arrived at the quay."
MEMORIES = "[Memories]\n- Maren mends nets."
CARDS = "[World]\nMaren Tull (character): a net-mender."
KNOWLEDGE = "[Knowledge]\nThe Tidestone is never covered."
STORY = [
    f"> You do thing {i}." if i % 2 else f"Narration {i}. The tide turns {i} times. Gulls cry {i}."
    for i in range(9)
]


def fixed(**changes: str) -> dict[str, str]:
    base = {
        "ai_instructions": AI,
        "plot_essentials": PLOT,
        "story_summary": SUMMARY,
        "memories": MEMORIES,
        "story_cards": CARDS,
        "knowledge": KNOWLEDGE,
    }
    return {k: v for k, v in (base | changes).items() if v}


def turn(start: int, end: int, note: str = "", **changes: str) -> layout.Layout:
    """The classic context of a turn: STORY[start:end] as history, STORY[end] the action."""
    return classic(fixed(**changes), STORY[start:end], note, STORY[end])


# -- the classifier on hand-made pairs ---------------------------------------------------------


def test_the_first_turn_and_a_turn_that_only_appends() -> None:
    assert first_break(None, turn(0, 3)) == (layout.FIRST_TURN, 0)
    before, after = turn(0, 3), turn(0, 5)
    assert first_break(before, after) == (layout.APPENDED, len(before))
    assert changed(before, after) == [] and moved(before, after) == []


@pytest.mark.parametrize(
    "name", ["story_summary", "memories", "story_cards", "knowledge", "plot_essentials"]
)
def test_a_fixed_section_whose_text_changed_is_named(name: str) -> None:
    after = turn(0, 5, **{name: f"[{name}]\nsomething else"})
    cause, index = first_break(turn(0, 3), after)
    assert cause == name and after[index].name == name
    assert changed(turn(0, 3), after) == [name]


def test_a_section_that_appears_or_vanishes_is_named_not_the_one_after_it() -> None:
    without = turn(0, 3, memories="")
    assert first_break(without, turn(0, 5))[0] == "memories"  # appeared before the cards
    assert first_break(turn(0, 3), turn(0, 5, memories=""))[0] == "memories"  # vanished
    assert first_break(turn(0, 3, knowledge=""), turn(0, 5))[0] == "knowledge"  # before history


def test_the_earliest_change_in_the_prompt_wins() -> None:
    after = turn(0, 5, story_summary="[Story Summary]\nNew.", memories="[Memories]\n- New.")
    assert first_break(turn(0, 3), after)[0] == "story_summary"
    assert changed(turn(0, 3), after) == ["story_summary", "memories"]


def test_the_oldest_actions_dropped_or_cut_elsewhere() -> None:
    assert first_break(turn(0, 3), turn(2, 5))[0] == layout.DROPPED
    cut = classic(fixed(), ["The tide turns 0 times. Gulls cry 0.", *STORY[1:3]], "", STORY[3])
    assert first_break(turn(0, 3), cut)[0] == layout.CUT  # the same action, fewer sentences
    assert first_break(cut, turn(0, 3))[0] == layout.CUT  # and more again
    further = classic(fixed(), ["Gulls cry 2.", *STORY[3:5]], "", STORY[5])
    assert first_break(turn(0, 3), further)[0] == layout.DROPPED  # dropped, then cut
    assert changed(turn(0, 3), turn(2, 5)) == [layout.DROPPED]


def test_a_history_newer_than_everything_the_last_prompt_held_is_a_drop() -> None:
    before = classic(fixed(), STORY[0:1], "", STORY[1])
    after = classic(fixed(), ["Gulls cry 2."], "", STORY[3])  # a cut of STORY[2]
    assert first_break(before, after)[0] == layout.DROPPED


def test_a_history_that_reaches_further_back_grew() -> None:
    """The sections above it shrank: older actions fit again, before the old first one."""
    before = classic(fixed(), ["Gulls cry 2.", *STORY[3:5]], "", STORY[5])
    after = classic(fixed(memories=""), STORY[1:7], "", STORY[7])
    assert first_break(before, after)[0] == "memories"  # the section comes first
    assert changed(before, after) == ["memories", layout.GREW]
    assert first_break(before, classic(fixed(), STORY[1:7], "", STORY[7]))[0] == layout.GREW


def test_the_authors_note_that_moves_breaks_the_prefix_where_it_was() -> None:
    before, after = turn(0, 5, "Be quiet."), turn(0, 7, "Be quiet.")
    cause, index = first_break(before, after)
    assert cause == layout.NOTE and before[index].name == layout.NOTE
    assert changed(before, after) == [] and moved(before, after) == [layout.NOTE]
    # Fewer actions than its depth: it stays first, and the prompt only appends.
    short = classic(fixed(), STORY[:1], "Be quiet.", STORY[1])
    assert first_break(short, turn(0, 3, "Be quiet."))[0] == layout.APPENDED


def test_sections_placed_among_the_actions() -> None:
    """A layout that floats sections in the history: one left in place lets the prompt
    only append; one whose text changed breaks it where it was."""
    stable = [Segment("ai_instructions", AI), Segment("plot_essentials", PLOT)]
    story = [Segment(layout.HISTORY, t) for t in STORY]
    memories = Segment("memories", MEMORIES)
    before = (*stable, *story[:3], memories, Segment(layout.ACTION, STORY[3]))
    kept = (*stable, *story[:3], memories, *story[3:5], Segment(layout.ACTION, STORY[5]))
    assert first_break(before, kept)[0] == layout.APPENDED
    assert moved(before, kept) == []
    other = Segment("memories", "[Memories]\n- Other.")
    redone = (*stable, *story[:5], other, Segment(layout.ACTION, STORY[5]))
    cause, index = first_break(before, redone)
    assert cause == "memories" and before[index] == memories
    same_text_moved = (*stable, *story[:5], memories, Segment(layout.ACTION, STORY[5]))
    assert first_break(before, same_text_moved)[0] == "memories"
    assert moved(before, same_text_moved) == ["memories"]


# -- reading a rendered prompt -----------------------------------------------------------------


def built_prompt(history: list[str], note: str, action: str) -> tuple[dict[str, Any], str]:
    """A context built by the product's builder and rendered as chat messages, with the
    parts of an Insights snapshot the harness reads."""
    sections = [Section(n, t.split("\n", 1)[-1]) for n, t in fixed().items()]
    entries = [
        HistoryEntry(i, "player" if t.startswith(">") else "narrator", t)
        for i, t in enumerate(history)
    ]
    built = build_context(
        sections, entries, note, action, budget=100_000, counter=CharCounter(), entry_overhead=8
    )
    messages = tuple(Message(m["role"], m["content"]) for m in built.messages())  # type: ignore[arg-type]
    request = CompletionRequest(model="m", mode="chat", messages=messages)
    snapshot: dict[str, Any] = {
        "sections": [{"name": s.name, "text": s.text} for s in built.report.sections],
        "history": {"kept": len(built.report.history_kept)},
    }
    return snapshot, prompt_text(request)


def test_a_rendered_prompt_reads_back_as_its_layout() -> None:
    snapshot, text = built_prompt(STORY[:5], "Be quiet.", STORY[5])
    lay, spans = from_prompt(snapshot, text)
    assert lay == turn(0, 5, "Be quiet.")
    assert all(text[a:b] == s.text for s, (a, b) in zip(lay, spans, strict=True))
    assert [a for a, _ in spans] == sorted(a for a, _ in spans)


def test_where_the_texts_first_differ_agrees_with_the_classifier() -> None:
    before = built_prompt(STORY[:5], "Be quiet.", STORY[5])
    after = built_prompt(STORY[:7], "Be quiet.", STORY[7])
    placed = [(text, *from_prompt(snapshot, text)) for snapshot, text in (before, after)]
    cause, _ = first_break(placed[0][1], placed[1][1])
    where = text_break(placed[0], placed[1])
    assert cause == layout.NOTE and layout.NOTE in where and agrees(cause, where)
    assert text_break(None, placed[0]) == [layout.FIRST_TURN]


def test_an_action_with_a_blank_line_is_refused() -> None:
    snapshot, text = built_prompt(["One.\n\nTwo."], "", "> You wait.")
    with pytest.raises(ValueError, match="blank line"):
        from_prompt(snapshot, text)


# -- the world ---------------------------------------------------------------------------------


def test_the_script_is_seeded_sized_and_splits_back_into_actions() -> None:
    counter = BpeCounter()
    a, b = world.Script(3, counter), world.Script(3, counter)
    turns = [a.turn(i) for i in range(12)]
    assert turns == [b.turn(i) for i in range(12)]
    for t in turns:
        assert SEPARATOR not in t.narration and SEPARATOR not in t.action
        low, high = world.NARRATION_TOKENS
        assert low <= counter.count(t.narration) <= high + 60  # the last sentence overshoots
    named = {e.name for e in world.CAST if any(e.name in t.narration for t in turns)}
    assert len(named) >= 8  # the scenes move through the cast, so the cards change


# -- short games through the engine ------------------------------------------------------------


def check_sums(records: list[TurnRecord]) -> None:
    assert records[0].cause == layout.FIRST_TURN and records[0].cached == 0
    assert records[0].evaluated == records[0].prompt
    for r in records:
        assert r.cached + r.evaluated == r.prompt
        assert r.reported == r.prompt  # the scripted narrator counts as the product does
        assert r.prompt > 0 and r.budget_used <= r.budget_available
        assert r.agrees, (r.turn, r.cause, r.text_break)


def test_a_short_game_with_everything_adds_up() -> None:
    options = Options(2048, 12, embedder="hashed")
    records = asyncio.run(play(options))
    check_sums(records)
    first, steady = steady_turns(records)
    assert first is not None and steady  # the history overflowed within the game
    assert all(r.cards and r.passages for r in steady)  # cards fire, the bible is searched
    assert any(r.memories for r in steady) and any(r.summary for r in steady)
    summary = summarize(records, 2048, 1.0)
    assert sum(c.turns for c in summary.causes.values()) == summary.steady
    assert "Why the prefix broke" in markdown(
        [summary],
        {"turns": 12, "seed": 19, "embedder": "hashed", "tokenizers": [], "machine": "test",
         "seconds": 1.0},
    )  # fmt: skip


def test_a_turn_that_only_appends_evaluates_only_what_it_appended() -> None:
    """No cards, library or Author's Note, and a context too large to overflow: until the
    first memory is written, each turn's prompt is the last one plus the new actions."""
    options = Options(8192, 5, embedder="hashed", cards=False, knowledge=False, authors_note=False)
    records = asyncio.run(play(options))
    check_sums(records)
    appended = [r for r in records if r.cause == layout.APPENDED]
    assert appended, [r.cause for r in records]
    for r in appended:
        previous = records[r.turn - 2]
        assert r.cached == previous.prompt
        assert r.evaluated == r.prompt - previous.prompt


# -- a real narrator playing the script ----------------------------------------------------------


class FakeModel:
    """A model's provider that says something of its own, a token at a time, and logs what
    it was asked and when each token went out (``events``, shared with the reader)."""

    def __init__(self, events: list[str] | None = None) -> None:
        self.info = ProviderInfo(name="fake-model", reserved_tokens=7)
        self.requests: list[CompletionRequest] = []
        self.events = events if events is not None else []
        self.counter = BpeCounter()

    async def stream(self, request: CompletionRequest) -> AsyncIterator[Chunk]:
        self.requests.append(request)
        said = ["The ", "model's ", "own ", "words."]
        for piece in said:
            self.events.append(f"model {piece.strip()}")
            yield Chunk(piece)
        yield Chunk("", done=Completion("".join(said), request.model, "length", 50, 4, 12))

    async def complete(self, request: CompletionRequest) -> Completion:
        self.requests.append(request)
        return Completion("Its own words.", request.model, "stop", 50, 4, 12)

    async def embed(self, texts: list[str], model: str) -> Embeddings:
        raise AssertionError("a narrator's wrapper is not asked for embeddings here")

    async def list_models(self) -> list[str]:
        return ["fake"]

    def token_counter(self, model: str) -> TokenCounter:
        return self.counter

    async def aclose(self) -> None:
        return None


REPLY = "Fog lies on the quay. Maren Tull mends a net and will not look at you."


def test_the_wrapper_asks_the_model_and_answers_with_the_script() -> None:
    events: list[str] = []
    model = FakeModel(events)
    wrapped = ScriptedReply(model, REPLY)
    request = CompletionRequest(model="m", messages=(Message("user", "Go on."),), max_tokens=200)

    async def read() -> list[Chunk]:
        out = []
        async for chunk in wrapped.stream(request):
            events.append("out" if chunk.done is None else "done")
            out.append(chunk)
        return out

    chunks = asyncio.run(read())
    assert "".join(c.text for c in chunks) == REPLY  # the script's reply, whole
    done = chunks[-1].done
    assert done is not None and done.text == REPLY
    assert (done.tokens_in, done.tokens_out, done.tokens_evaluated) == (50, 4, 12)  # the model's
    assert [r.max_tokens for r in model.requests] == [REPLY_CAP]  # asked, its reply capped
    assert model.requests[0].messages == request.messages
    assert wrapped.said.text == "The model's own words." and wrapped.said.request == request
    # The reply starts the moment the model's first token comes, and ends after its last.
    assert events[:2] == ["model The", "out"]
    assert events.index("model words.") < len(events) - 1 - events[::-1].index("out")
    assert events[-1] == "done"
    assert wrapped.info is model.info and wrapped.token_counter("m") is model.counter
    plain = asyncio.run(wrapped.complete(request))
    assert plain.text == REPLY and model.requests[-1].max_tokens == REPLY_CAP


def test_a_model_that_says_nothing_still_gets_the_scripts_reply() -> None:
    class Silent(FakeModel):
        async def stream(self, request: CompletionRequest) -> AsyncIterator[Chunk]:
            self.requests.append(request)
            yield Chunk("", done=Completion("", request.model, "stop", 50, 0, 50))

    async def read() -> list[Chunk]:
        return [c async for c in ScriptedReply(Silent(), REPLY).stream(CHAT)]

    chunks = asyncio.run(read())
    assert "".join(c.text for c in chunks) == REPLY and chunks[-1].done is not None


CHAT = CompletionRequest(model="m", messages=(Message("user", "Go on."),))


def test_a_game_with_a_real_narrator_stores_the_scripts_replies() -> None:
    """Through the engine: the turn's narrator is the model, wrapped; the narration saved is
    the script's, and the Insights carry the model's first token."""
    options = Options(2048, 3, embedder="hashed", knowledge=False)
    script = world.Script(options.seed, BpeCounter())

    async def go() -> tuple[FakeModel, list[TurnRecord], list[str]]:
        model = FakeModel()
        async with game(options) as g:
            g.narrator = model
            for index in range(options.turns):
                await g.play(script.turn(index))
            with read_scope(g.rt.sessions) as session:
                rows = session.query(Action).filter(Action.type == "narration").all()
                stored = [row.text for row in sorted(rows, key=lambda r: r.depth)]
            return model, g.records, stored

    model, records, stored = asyncio.run(go())
    assert len(model.requests) == options.turns
    assert all(r.max_tokens == REPLY_CAP for r in model.requests)
    assert stored[-options.turns :] == [script.turn(i).narration for i in range(options.turns)]
    for r in records:
        assert r.first_token_ms is not None and r.turn_ms >= r.first_token_ms
        assert r.model_tokens == 4 and r.model_evaluated is None  # no probe on a fake model
        assert r.evaluated_by == "provider" and r.evaluated == 12  # the model's own figure
    last = prompt_of(model.requests[-1])
    assert script.turn(1).narration in last  # the history holds the script, not the model


def prompt_of(request: CompletionRequest) -> str:
    return "\n".join(m.content for m in request.messages)


def test_the_servers_log_gives_the_last_generations_prompt_evaluation(tmp_path: Path) -> None:
    path = tmp_path / "server.log"
    line = "llama_perf_context_print: prompt eval time = {} ms / {:5d} tokens (...)\n"
    path.write_text(line.format("0.07", 112))
    log = ServerLog(path)
    assert log.evaluated() == 112
    assert log.evaluated() is None  # nothing new since
    with path.open("a") as f:
        f.write("Llama.generate: 105 prefix-match hit, remaining 7 prompt tokens to eval\n")
        f.write(line.format("478.38", 7))
    assert log.evaluated() == 7


# -- the report ---------------------------------------------------------------------------------

OTHER = "<!-- bench:other -->\n## Another benchmark\n\nIts figures.\n<!-- /bench:other -->"


def test_write_replaces_only_its_own_section(tmp_path: Path) -> None:
    doc = tmp_path / "benchmarks.md"
    old = "<!-- bench:prefix -->\n## Prompt prefix\n\nOld figures.\n<!-- /bench:prefix -->"
    doc.write_text(f"# Benchmarks\n\n{OTHER}\n\n{old}\n\n{OTHER.replace('other', 'last')}\n")
    argv = ["--turns", "3", "--contexts", "2048", "--layouts", "classic", "cache"]
    argv += ["--embedder", "hashed", "--tokenizers", "--no-knowledge", "--write", str(doc)]
    argv += ["--json", str(tmp_path / "run.json")]
    assert main(argv) == 0
    text = doc.read_text()
    assert "Old figures." not in text and text.count("<!-- bench:prefix -->") == 1
    assert OTHER in text and OTHER.replace("other", "last") in text  # the others untouched
    section = text.split("<!-- bench:prefix -->")[1].split("<!-- /bench:prefix -->")[0]
    assert "## Prompt prefix" in section and "Why the prefix broke" in section
    assert "scripted classic 2,048" in section and "scripted cache 2,048" in section
    assert "Before (`classic`) → after (`cache`)" in section and "| scripted 2,048 | " in section
    assert "--write" in section and "cores" in section  # the command line, the machine
    assert (tmp_path / "benchmarks" / report.PLOT).stat().st_size > 0
    assert f"](benchmarks/{report.PLOT})" in section
    data = json.loads((tmp_path / "run.json").read_text())
    assert [r["summary"]["layout"] for r in data["results"]] == ["classic", "cache"]
    assert data["run"]["narrators"] == ["scripted"]


def test_a_game_with_a_library_is_compared_only_with_its_own_before() -> None:
    """``--full`` plays the instant narrator with and without a library: each after is set
    against the before of the same game, and the row says which one it is."""
    blank = summarize([], 2048, 0.0)
    games = [
        dataclasses.replace(
            blank, narrator="scripted", layout=lay, library=library, evaluated=Figures.of([n])
        )
        for lay, library, n in (
            ("classic", False, 1000),
            ("classic", True, 3000),
            ("cache", False, 250),
            ("cache", True, 900),
        )
    ]
    text = markdown(
        games,
        {
            "seed": 1,
            "turns": 3,
            "embedder": "hashed",
            "seconds": 1.0,
            "machine": "test",
            "knowledge": [False, True],
            "tokenizers": [],
        },
    )
    assert "| scripted 2,048 | 1,000 → 250 (-75%) |" in text
    assert "| scripted 2,048 + library | 3,000 → 900 (-70%) |" in text
    assert "| scripted cache 2,048 + library |" in text  # the per-game rows say it too
    assert "rows marked `+ library`" in text


def test_full_is_every_narrator_context_and_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    played: list[Options] = []

    async def fake_run_all(options: list[Options]) -> tuple[list[Any], list[Any]]:
        played.extend(options)
        return [], []

    monkeypatch.setattr("benchmarks.prefix.run.run_all", fake_run_all)
    assert main(["--full", "--tokenizers"]) == 0
    assert {(o.narrator, o.context_tokens, o.layout, o.turns, o.knowledge) for o in played} == {
        (n, c, lay, 60, library)
        for n in narrators.NARRATORS
        for c in (2048, 4096)
        for lay in ("classic", "cache")
        for library in ([False] if n in narrators.REAL else [False, True])
    }
    assert all(o.cards and o.memory_bank for o in played)  # the done-when's game


@pytest.mark.model
def test_the_embedded_narrator_plays_two_turns(tmp_path: Path) -> None:
    """The app's own SmolLM2 really asked: its first token timed, llama.cpp's count read."""
    out = tmp_path / "run.json"
    argv = ["--narrator", "embedded", "--turns", "2", "--contexts", "2048", "--embedder"]
    argv += ["hashed", "--tokenizers", "--no-knowledge", "--no-cards", "--json", str(out)]
    assert main(argv) == 0
    turns = json.loads(out.read_text())["results"][0]["turns"]
    assert [t["narrator"] for t in turns] == ["embedded", "embedded"]
    for t in turns:
        assert t["first_token_ms"] > 0 and t["model_tokens"] and t["model_evaluated"]
    assert turns[0]["model_evaluated"] >= turns[0]["evaluated"]  # the example turn too
    assert turns[1]["model_evaluated"] < turns[1]["prompt"]  # its cache kept a prefix
