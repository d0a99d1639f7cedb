"""The prompt-prefix benchmark: its generated story (a moving world the rules read, a still
one they do not), the layout classifier on hand-made prompts, the report on hand-made turns,
and a few turns of a real game through the engine (the loopback double narrating and
embedding, on the kit's own temporary SQLite file)."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest
from benchmarks.kit.report import write_section
from benchmarks.prefix import layout, report, world
from benchmarks.prefix.game import Count, Options, TurnRecord, play
from benchmarks.prefix.run import TURNS, summarize

from talekeeper.core.tokens import BpeCounter
from talekeeper.services.world.rules import derive
from talekeeper.storage.vocabulary import EventKind

pytestmark = pytest.mark.no_database


# -- the story -------------------------------------------------------------------------------


def test_a_seed_gives_the_same_script_twice() -> None:
    one, two = world.Script(19, BpeCounter()), world.Script(19, BpeCounter())
    assert [one.turn(i) for i in range(20)] == [two.turn(i) for i in range(20)]
    assert world.Script(20, BpeCounter()).turn(3) != one.turn(3)


def test_a_moving_world_changes_what_the_rules_read_and_a_still_one_nothing() -> None:
    counter = BpeCounter()
    moving, still = world.Script(19, counter), world.Script(19, counter, moving=False)
    kinds: Counter[EventKind] = Counter()
    changing = 0
    for index in range(TURNS):
        m, s = moving.turn(index), still.turn(index)
        # The same story: the still one's narration is the moving one's without its changes.
        assert m.narration == " ".join([*m.world, s.narration])
        assert "\n\n" not in m.narration and s.world == ()
        # Nothing the state shows: a telling ("tell Maren what I saw") changes no field of it.
        read = derive("narration", s.narration) + derive("do", s.action)
        assert [e for e in read if e.kind is not EventKind.LEARNED] == []
        for sentence in m.world:
            events = derive("narration", sentence)
            assert len(events) == 1, sentence  # each change sentence states one change
            kinds[events[0].kind] += 1
        changing += bool(m.world)
    assert 0.3 <= changing / TURNS <= 0.8  # now and then, not every turn
    assert {EventKind.MOVED, EventKind.ARRIVED, EventKind.TOOK, EventKind.LEFT} <= set(kinds)
    assert {EventKind.TIME} <= set(kinds) and kinds[EventKind.DROPPED] + kinds[EventKind.GAVE]
    # The player says where they go when a scene starts, as a player would.
    assert any(derive("do", moving.turn(i).action) for i in range(TURNS))


# -- the layout ------------------------------------------------------------------------------


def test_the_first_break_names_what_changed_first() -> None:
    fixed = {"memories": "[Memories]\n- one", "story_cards": "[Cards]\nMaren"}
    before = layout.classic(fixed, ["a1", "r1"], action="a2")
    appended = layout.classic(fixed, ["a1", "r1", "a2", "r2"], action="a3")
    assert layout.first_break(None, before) == (layout.FIRST_TURN, 0)
    assert layout.first_break(before, appended)[0] == layout.APPENDED
    other = {**fixed, "memories": "[Memories]\n- two"}
    changed = layout.classic(other, ["a1", "r1", "a2", "r2"], action="a3")
    assert layout.first_break(before, changed)[0] == "memories"
    assert layout.changed(before, changed) == ["memories"]
    dropped = layout.classic(fixed, ["a2", "r2"], action="a3")
    assert layout.first_break(before, dropped)[0] == layout.DROPPED


# -- the report ------------------------------------------------------------------------------


def _turn(n: int, evaluated: int, cause: str, *, dropped: int = 0) -> TurnRecord:
    return TurnRecord(
        turn=n,
        prompt=1000,
        cached=1000 - evaluated,
        evaluated=evaluated,
        own=Count(1000, 1000 - evaluated, evaluated),
        budget_used=1000,
        budget_available=1200,
        history_kept=6,
        history_dropped=dropped,
        history_cut=False,
        memories=5,
        cards=2,
        passages=0,
        summary=True,
        state="Location: Hollow Fen",
        tokens={"memories": 300, "current_state": 12},
        cause=cause,
        changed=[cause],
        moved=[],
        text_break=[cause],
        layout="cache",
        others={"smollm2": Count(1100, 1100 - evaluated, evaluated)},
    )


def test_the_report_gives_the_share_by_world_and_keeps_the_history() -> None:
    records = [_turn(1, 1000, layout.FIRST_TURN), _turn(2, 900, "story_cards", dropped=2)]
    records += [_turn(n, 200 + 10 * n, "memories") for n in range(3, 10)]
    options = Options(context_tokens=4096, turns=9, layout="cache")
    s = summarize(records, options, 1.0)
    assert s.first_overflow == 2 and s.steady == 7 and s.world == "moving"
    assert s.share.median == pytest.approx(0.26) and s.counted_alike == 7
    assert s.held["current_state"] == 1.0
    run = {
        "seed": 19,
        "turns": 9,
        "embedder": "hashed words",
        "tokenizers": ["smollm2"],
        "narrators": ["scripted"],
        "footer": "On a test machine.",
    }
    text = report.markdown([s], run)
    assert "| scripted cache 4,096 | 26% | 24% |" in text  # Insights, then smollm2
    assert "7/7 (scripted cache 4,096, moving) steady turns." in text
    assert report.HISTORY in text and "`1156e19`" in text
    assert "evaluates at most 25% of the prompt (median, Insights' count): scripted 26%" in text
    assert "**not met**" in text


# -- a real game -----------------------------------------------------------------------------


def test_a_few_turns_through_the_engine_measure_what_the_product_measures(
    tmp_path: Path,
) -> None:
    options = Options(context_tokens=2048, turns=6, embedder="double", layout="cache")
    records = asyncio.run(play(options))
    assert [r.turn for r in records] == list(range(1, 7))
    # Insights' count is the one made on the prompt sent, and the cache kept something.
    assert all(r.counted_alike for r in records)
    assert any(r.cached > 0 for r in records[1:])
    assert all(r.agrees for r in records)  # the classifier names where the texts differ
    # The world moved: the Current state section said where the player is from the start.
    assert all(r.state.startswith("[Current state]\nLocation: ") for r in records)
    assert len({r.state for r in records}) > 1
    s = summarize(records, options)
    assert s.layout == "cache" and 0 < s.share.median < 1
    doc = tmp_path / "benchmarks.md"
    body = report.markdown([s], {"seed": 19, "turns": 6, "embedder": "double", "footer": "."})
    write_section(doc, report.SECTION, report.TITLE, body)
    assert "## Prompt prefix" in doc.read_text()
