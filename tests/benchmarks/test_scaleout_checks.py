"""The scale-out benchmark's count of overlapping passes."""

from __future__ import annotations

from datetime import datetime, timedelta

from benchmarks.scaleout.checks import overlaps

T0 = datetime(2026, 12, 4, 12, 0, 0)


def at(start: float, end: float) -> tuple[datetime, datetime]:
    return T0 + timedelta(seconds=start), T0 + timedelta(seconds=end)


def test_calls_one_after_another_do_not_overlap() -> None:
    assert overlaps([at(0, 1), at(1, 2), at(2.5, 3)]) == 0


def test_a_call_inside_a_longer_one_overlaps_even_after_a_short_one() -> None:
    # The third starts after the second ended but inside the first: still two runs at once.
    assert overlaps([at(0, 10), at(1, 2), at(3, 4)]) == 2


def test_the_order_given_does_not_matter() -> None:
    assert overlaps([at(5, 6), at(0, 5.5)]) == 1
