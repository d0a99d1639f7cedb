"""In-story time (``services.world.clock`` through ``projection.project``): it only moves
forward along a path, a night skipped twice in one action moves the day once, and a
backward time is kept as evidence but not applied. Pure: no database."""

from __future__ import annotations

import pytest

from talekeeper.services.world.clock import Moment, advance, read
from talekeeper.services.world.projection import Fact, project
from talekeeper.storage.vocabulary import EventKind

pytestmark = pytest.mark.no_database


def times(*values: tuple[int, str]) -> list[Fact]:
    """``time`` events, each (action id, value), numbered in order."""
    return [
        Fact(n, action, EventKind.TIME, value=value) for n, (action, value) in enumerate(values, 1)
    ]


def test_time_moves_forward_and_a_backward_time_is_kept_but_not_applied() -> None:
    state = project(times((1, "at dusk"), (2, "the next morning"), (3, "Day 1, noon")), None)
    assert state.time == "the next morning"
    assert state.ignored == (3,)  # day 1 is behind day 2: a flashback, or a mistake


def test_a_night_skipped_twice_in_one_action_moves_the_day_once() -> None:
    evening = (4, "day 2, evening")
    once = times((1, "at dusk"), (2, "The next morning"), (2, "the following morning"), evening)
    twice = times((1, "at dusk"), (2, "the next morning"), (3, "the next morning"), evening)
    assert project(once, None).ignored == ()  # still day 2
    assert project(twice, None).ignored == (4,)  # day 3 by then


def test_a_part_of_the_day_alone_is_today_when_ahead_and_tomorrow_when_behind() -> None:
    dusk = Moment(1, 4)
    dawn = read("at dawn")
    noon = read("at noon")
    assert dawn is not None and noon is not None
    assert advance(dusk, dawn, False) == Moment(2, 0)  # the next dawn
    assert advance(Moment(1, 1), noon, False) == Moment(1, 2)  # later the same day
    later = read("hours later")
    assert later is not None and advance(Moment(1, 1), later, False) == Moment(1, 2)
    weeks = read("weeks later")
    assert weeks is not None and advance(dusk, weeks, False) == Moment(8, 0)
    # One of each: "a week later" is seven days on, "a day later" one, "a while" a step.
    for said, after in (("a week later", Moment(8, 0)), ("a day later", Moment(2, 0))):
        one = read(said)
        assert one is not None and advance(dusk, one, False) == after
    a_while = read("a while later")
    assert a_while is not None and advance(Moment(1, 1), a_while, False) == Moment(1, 2)


def test_a_time_it_cannot_read_is_shown_as_said_and_leaves_the_clock() -> None:
    assert read("the hour of the wolf") is None
    state = project(times((1, "day 3, evening"), (2, "the hour of the wolf"), (3, "Day 2")), None)
    assert state.time == "the hour of the wolf" and state.ignored == (3,)
