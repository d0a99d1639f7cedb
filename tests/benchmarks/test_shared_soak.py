"""The shared-play soak's count of feed events a page missed or saw out of order."""

from __future__ import annotations

from benchmarks.scaleout.deploy import Account
from benchmarks.scaleout.shared import Follower, _gaps

FEED = {1: 0.0, 2: 0.0, 3: 0.0, 4: 0.0, 5: 0.0}


def page(*ids: int) -> Follower:
    follower = Follower(Account(name="p"))
    follower.events = [(i, "append", {}, 0.0) for i in ids]
    return follower


def test_a_page_that_saw_every_event_in_order_has_no_gap() -> None:
    assert _gaps(page(1, 2, 3, 4, 5), FEED) == 0


def test_a_page_is_judged_only_up_to_its_last_event() -> None:
    # Removed (or stopped) after event 3: events 4 and 5 were never its to see.
    assert _gaps(page(1, 2, 3), FEED) == 0


def test_a_missed_event_counts() -> None:
    assert _gaps(page(1, 2, 4, 5), FEED) == 1


def test_an_event_seen_twice_or_late_counts() -> None:
    assert _gaps(page(1, 2, 2, 3, 4, 5), FEED) == 1  # a resume that replayed one
    assert _gaps(page(1, 3, 2, 4, 5), FEED) == 1  # out of order
