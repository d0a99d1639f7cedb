"""The world-state benchmark's generator and measures: seeded stories whose ground truth follows
their own timeline, in varied wording (the tuned, fresh and unseen sets alike), and measures
that count right on hand-made cases. Pure: no engine, no database."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from benchmarks.kit.report import Clock
from benchmarks.state import wording as w
from benchmarks.state.generator import (
    WORDINGS,
    Change,
    StateStory,
    Timeline,
    Truth,
    fields_of,
    forward,
    generate,
)
from benchmarks.state.measure import Counts, Observed, Resolver, Score, key, score_turn
from benchmarks.state.report import Run, markdown
from benchmarks.state.run import HELD_OUT, TUNE_SEED, story_set, wordings
from benchmarks.state.wording_unseen import UNSEEN

pytestmark = pytest.mark.no_database

SEEDS = (TUNE_SEED, *HELD_OUT)
# The sets written after the tuned one, each with the sets written before it.
LATER = {"fresh": ("tuned",), "unseen": ("tuned", "fresh")}


@pytest.fixture(scope="module", params=list(WORDINGS))
def stories(request: pytest.FixtureRequest) -> list[StateStory]:
    """Every seed's stories, in each set of wording: the invariants hold in all of them."""
    return [s for seed in SEEDS for s in story_set(seed, wording=request.param)]


def replay(story: StateStory) -> list[Truth]:
    """The truth after each turn, from the story's changes alone."""
    timeline = Timeline()
    timeline.apply(Change("move", what=story.start.location))
    out = []
    for turn in story.turns:
        for change in turn.changes:
            timeline.apply(change)
        out.append(timeline.truth(any(c.kind == "time" for c in turn.changes)))
    return out


def test_a_seed_gives_the_same_story_twice_and_another_seed_another() -> None:
    assert generate(5, 30) == generate(5, 30)
    assert generate(5, 30).turns != generate(6, 30).turns
    assert generate(5, 30, wording="fresh") == generate(5, 30, wording="fresh")
    assert generate(5, 30, wording="unseen") == generate(5, 30, wording="unseen")


def test_the_default_wording_is_the_tuned_set() -> None:
    """The stories every figure so far was measured on stay the same stories."""
    assert generate(7, 50) == generate(7, 50, wording="tuned")
    assert story_set(31, 2) == story_set(31, 2, wording="tuned")
    for later in LATER:
        assert generate(7, 50, wording=later).turns != generate(7, 50).turns


def test_each_set_of_wording_is_looked_up_by_its_name() -> None:
    assert list(WORDINGS) == ["tuned", *LATER]
    assert WORDINGS["tuned"] is w.TUNED and WORDINGS["fresh"] is w.FRESH
    assert WORDINGS["unseen"] is UNSEEN and w.WORDINGS.items() <= WORDINGS.items()
    with pytest.raises(KeyError):
        generate(7, 5, wording="nonesuch")


def _drawn(stories: list[StateStory]) -> set[str]:
    return {u.split("/")[0] for s in stories for t in s.turns for u in t.wordings} | {"opening"}


def _templates(wording: str) -> list[str]:
    return [t for pool in WORDINGS[wording].pools().values() for t in pool]


@pytest.mark.parametrize("wording", list(LATER))
def test_a_later_wording_shares_no_template_with_an_earlier(wording: str) -> None:
    """The fresh set shares none with the tuned; the unseen set none with either."""
    earlier = {t for before in LATER[wording] for t in _templates(before)}
    templates = _templates(wording)
    assert not earlier & set(templates)
    assert len(templates) == len(set(templates))  # and none twice within it


@pytest.mark.parametrize("wording", list(LATER))
def test_a_later_wording_covers_every_kind_the_generator_draws(wording: str) -> None:
    tuned, later = w.TUNED.pools(), WORDINGS[wording].pools()
    assert later.keys() == tuned.keys()  # the same player actions: the same mix of types
    drawn = _drawn([s for seed in SEEDS for s in story_set(seed)])
    assert drawn <= later.keys()
    for kind, pool in later.items():
        assert len(pool) >= (2 if kind.startswith(("player.", "after.")) else 4), kind
    assert drawn == _drawn([s for seed in SEEDS for s in story_set(seed, wording=wording)])


@pytest.mark.parametrize("wording", list(LATER))
def test_a_later_wording_fills_the_same_slots(wording: str) -> None:
    """No template of a later set asks for a slot its kind never has, and wherever a tuned
    template can be filled some later one can (a capital slot is its lower-case one's)."""
    tuned, later = w.TUNED.pools(), WORDINGS[wording].pools()
    for kind, pool in later.items():
        known = {f.lower() for t in tuned[kind] for f in fields_of(t)}
        for template in pool:
            assert {f.lower() for f in fields_of(template)} <= known, (kind, template)
        for template in tuned[kind]:
            assert any(fields_of(f) <= fields_of(template) for f in pool), (kind, template)
    for template, days, part, tick in WORDINGS[wording].time:
        assert fields_of(template) == {"clause"}
        assert days >= 0 and (part is None or 0 <= part <= 6)
        assert (days > 0 or part is not None) != tick, template  # a tick: no day, no part


def test_one_name_a_thing_is_the_same_story_but_for_the_names() -> None:
    written, one = generate(8, 40), generate(8, 40, short_forms=False)
    assert [t.changes for t in written.turns] == [t.changes for t in one.turns]
    assert [t.truth for t in written.turns] == [t.truth for t in one.turns]

    def shorts(story: StateStory) -> int:
        text = " ".join(f"{t.turn.player[1]} {t.turn.reply}" for t in story.turns)
        return sum(len(re.findall(rf"\bthe {i.forms[1]}\b", text)) for i in story.items)

    assert shorts(written) > 0 and shorts(one) == 0


def test_the_truth_is_the_timeline_of_the_changes(stories: list[StateStory]) -> None:
    for story in stories:
        assert [t.truth for t in story.turns] == replay(story)


def test_an_item_given_or_taken_away_leaves_the_inventory(stories: list[StateStory]) -> None:
    seen = Counter[str]()
    for story in stories:
        before = story.start
        for turn in story.turns:
            for change in turn.changes:
                if change.kind in ("give", "snatch", "drop"):
                    seen[change.kind] += 1
                    assert change.what in before.inventory
                    assert change.what not in turn.truth.inventory
                if change.kind in ("take", "receive"):
                    assert change.what in turn.truth.inventory
            before = turn.truth
    assert min(seen.values()) >= 3 and len(seen) == 3


def test_the_dead_are_never_present_again(stories: list[StateStory]) -> None:
    deaths = 0
    for story in stories:
        dead: set[str] = set()
        for turn in story.turns:
            dead |= {c.who for c in turn.changes if c.kind == "die" and c.who}
            assert not dead & turn.truth.present
            assert not any(c.kind == "arrive" and c.who in dead for c in turn.changes)
        deaths += len(dead)
    assert deaths >= 2


def test_time_only_moves_forward_and_says_when_it_moved(stories: list[StateStory]) -> None:
    for story in stories:
        before = story.start.moment
        for turn in story.turns:
            moved = any(c.kind == "time" for c in turn.changes)
            assert turn.truth.time_moved == moved
            assert (turn.truth.moment > before) == moved and turn.truth.moment >= before
            before = turn.truth.moment
    assert forward((1, 4, 0), 0, 4, False) is None  # "at dusk" at dusk: not forward
    assert forward((1, 4, 0), 1, 1, False) == (2, 1, 0)
    assert forward((1, 4, 0), 0, None, True) == (1, 4, 1)


def test_the_wording_varies_within_each_kind(stories: list[StateStory]) -> None:
    used = Counter(u.split("/")[0] for s in stories for t in s.turns for u in set(t.wordings))
    distinct: dict[str, set[str]] = {}
    for s in stories:
        for t in s.turns:
            for u in t.wordings:
                distinct.setdefault(u.split("/")[0], set()).add(u)
    for kind in ("move", "take", "drop", "give", "arrive", "leave", "time", "distract.item"):
        assert used[kind] > 0, kind
        assert len(distinct[kind]) >= 4, (kind, distinct[kind])
    assert "refuse.move" in distinct or "refuse.take" in distinct
    assert wordings(stories) >= 100


def test_every_change_is_said_in_its_turn(stories: list[StateStory]) -> None:
    """Each person, place or item a change names is written in its turn (by some form)."""
    for story in stories:
        things = {t.name: t.forms for t in (*story.people, *story.places, *story.items)}
        for turn in story.turns:
            text = f"{turn.turn.player[1]} {turn.turn.reply}"
            for change in turn.changes:
                for name in (change.who, change.what, change.to):
                    if name is not None and change.kind != "lies":
                        assert any(form in text for form in things[name]), (name, text)


def test_some_names_are_in_other_scripts(stories: list[StateStory]) -> None:
    other = {n for forms in (*w.PEOPLE_OTHER_SCRIPTS, *w.PLACES_OTHER_SCRIPTS) for n in forms}
    named = {t.name for s in stories for t in (*s.people, *s.places)}
    assert len(named & other) >= 3
    assert key("明子") != key("明美")


def test_the_resolver_reads_every_form_of_a_thing_and_nothing_else() -> None:
    story = generate(3, 5)
    resolver = Resolver.of(story)
    item = story.items[0]
    short = item.forms[1]
    assert Resolver.names(resolver.items, [f"The {item.name.title()}", f"your {short}"]) == {
        item.name
    }
    assert Resolver.names(resolver.items, ["a breath"]) == {"?a breath"}


def _story_with(
    *, people: tuple[str, ...], places: tuple[str, ...], items: tuple[str, ...]
) -> Resolver:
    """A resolver over hand-made things (each with its last word as a short form)."""

    def things(names: tuple[str, ...]) -> dict[str, str]:
        return {key(f): n for n in names for f in (n, n.split()[-1])}

    return Resolver(things(people), things(places), things(items))


def test_the_measures_count_a_hand_made_case() -> None:
    resolver = _story_with(
        people=("Mara", "Tobin"),
        places=("the old mill", "Varn"),
        items=("brass lantern", "iron key"),
    )
    truths = [
        Truth("the old mill", frozenset({"Mara"}), frozenset({"brass lantern"}), (1, 1, 0), False),
        Truth("Varn", frozenset(), frozenset({"brass lantern", "iron key"}), (2, 1, 0), True),
        Truth("Varn", frozenset({"Tobin"}), frozenset({"iron key"}), (2, 2, 0), True),
    ]
    seen = [
        Observed("The Old Mill", ("Mara",), ("the lantern",), False, False),  # all right
        Observed("the mill", ("Mara",), ("brass lantern", "a breath"), True, False),
        Observed(None, ("Tobin",), ("iron key", "key"), False, True),
    ]
    score = Score()
    misses = [
        m
        for t, s in zip(truths, seen, strict=True)
        for m in score_turn(score, resolver, t, s, ("x", 1))
    ]
    assert (score.turns, score.located, score.stated, score.right) == (3, 3, 2, 1)
    assert score.accuracy == pytest.approx(1 / 3) and score.location_precision == 0.5
    # present: Mara right, Mara stale (fp), Tobin right
    assert (score.present.tp, score.present.fp, score.present.fn) == (2, 1, 0)
    # inventory: lantern right; lantern right, a breath wrong, key missed; two names of
    # the key count once
    assert (score.inventory.tp, score.inventory.fp, score.inventory.fn) == (3, 1, 1)
    assert (score.time.tp, score.time.fp, score.time.fn) == (1, 0, 1)
    assert score.violations == 1  # the third turn's time was refused as going back
    assert {m.what for m in misses} == {"location", "present", "inventory", "time"}


def test_precision_recall_and_f1() -> None:
    counts = Counts(tp=3, fp=1, fn=2)
    assert counts.precision == 0.75 and counts.recall == 0.6
    assert counts.f1 == pytest.approx(2 * 0.75 * 0.6 / 1.35)
    assert Counts().precision is None and Counts().f1 is None


def test_the_report_says_the_bar_and_the_model_path() -> None:
    tune, held = Score(turns=10, located=10, stated=10, right=10), Score(turns=20, located=20)
    held.stated, held.right = 20, 18
    held.inventory = Counts(tp=19, fp=1, fn=5)
    clock = Clock("cmd")
    clock.stop()
    text = markdown(Run(7, [31, 58], 3, 8, 50, 120, tune, held, clock, (tune, held)))
    assert "waits for a real model" in text
    assert "(0.90 and 0.95: not met)" in text
    # the other wordings not played: their columns say "–", never 0
    assert "| location precision | 1.00 | 0.90 | – | – | – |" in text
    assert "unseen wording (" not in text
    fresh_tune = Score(turns=10, located=10, stated=5, right=4)
    fresh = Score(turns=20, located=20, stated=10, right=8)
    unseen = Score(turns=20, located=20, stated=10, right=3)
    text = markdown(
        Run(
            7,
            [31, 58],
            3,
            8,
            50,
            120,
            tune,
            held,
            clock,
            (tune, held),
            (fresh_tune, fresh),
            unseen,
            90,
        )
    )
    assert "| held out, fresh wording (seeds 31, 58; 20 turns) |" in text
    assert "| held out, unseen wording (seeds 31, 58; 20 turns) |" in text
    assert "| location precision | 1.00 | 0.90 | 0.80 | 0.80 | 0.30 |" in text
    assert "(0.90 and 0.95: not met)" in text  # the bar stays on the tuned wording
    assert "(90 distinct wordings in this run)" in text
