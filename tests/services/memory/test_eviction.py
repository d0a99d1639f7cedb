"""Capacity by coverage: which memories a full bank forgets, and in what order."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from talekeeper.services.memory.eviction import EvictionCandidate, choose_evictions

pytestmark = pytest.mark.no_database


def mem(
    id_: int,
    start: int | None = None,
    end: int | None = None,
    *,
    pinned: bool = False,
    uses: int = 0,
    last_used: float | None = None,
    created: float | None = None,
) -> EvictionCandidate:
    return EvictionCandidate(
        id=id_,
        source_start=start,
        source_end=end,
        pinned=pinned,
        use_count=uses,
        last_used=last_used,
        created=float(id_) if created is None else created,
    )


def blocks(*ranges: tuple[int, int], first_id: int = 1) -> list[EvictionCandidate]:
    return [mem(first_id + n, s, e) for n, (s, e) in enumerate(ranges)]


# -- capacity ------------------------------------------------------------------------------


def test_nothing_is_taken_within_capacity() -> None:
    memories = blocks((0, 5), (6, 11), (12, 17))
    assert choose_evictions(memories, 3) == []
    assert choose_evictions(memories, 10) == []


def test_an_empty_bank_takes_nothing() -> None:
    assert choose_evictions([], 0) == []


def test_a_negative_capacity_is_refused() -> None:
    with pytest.raises(ValueError, match="capacity"):
        choose_evictions(blocks((0, 5)), -1)


# -- protection ----------------------------------------------------------------------------


def test_the_earliest_and_the_latest_are_protected() -> None:
    # The endpoints are the least used and the oldest; the middle one still goes.
    memories = [
        mem(1, 0, 5, last_used=1.0),
        mem(2, 6, 11, uses=9, last_used=100.0),
        mem(3, 12, 17, last_used=2.0),
    ]
    assert choose_evictions(memories, 2) == [2]


def test_story_position_orders_by_start_then_end_then_id() -> None:
    # Inputs out of order: the earliest is id 3 (start 0), the latest id 1 (start 30).
    memories = [mem(1, 30, 35), mem(2, 10, 15), mem(3, 0, 5)]
    assert choose_evictions(memories, 2) == [2]


def test_a_memory_with_no_end_reads_as_one_depth() -> None:
    memories = [mem(1, 0, 5), mem(2, 6, None), mem(3, 8, 12), mem(4, 20, 25)]
    # Dropping 2 leaves depth 6..7 (2 depths); dropping 3 leaves 7..19 (13 depths).
    assert choose_evictions(memories, 3) == [2]


# -- cost ----------------------------------------------------------------------------------


def test_a_shared_start_costs_nothing() -> None:
    memories = [
        mem(1, 0, 5),
        mem(2, 6, 7),  # tiny hole of 2 depths, but unique start
        mem(3, 8, 13, last_used=50.0),
        mem(4, 8, 11, last_used=60.0),  # shares 8 with 3: free to drop
        mem(5, 14, 19),
    ]
    assert choose_evictions(memories, 4) == [3]  # 3 and 4 both cost 0; 3 is less recent


def test_a_shared_start_with_a_pinned_memory_costs_nothing() -> None:
    memories = [
        mem(1, 0, 5),
        mem(2, 6, 7),
        mem(3, 8, 13, pinned=True),
        mem(4, 8, 9),
        mem(5, 20, 25),
    ]
    assert choose_evictions(memories, 4) == [4]


def test_the_densest_stretch_is_thinned_first() -> None:
    memories = [
        mem(1, 0, 5),
        mem(2, 6, 11),  # hole 6..11: 6 depths
        mem(3, 12, 13),  # hole 12..13: 2 depths
        mem(4, 14, 29),  # hole 14..29: 16 depths
        mem(5, 30, 35),
    ]
    assert choose_evictions(memories, 4) == [3]


def test_the_hole_is_measured_from_the_reach_of_everything_before() -> None:
    # 2 reaches depth 30: dropping 3 uncovers nothing even though its predecessor (2) is short.
    memories = [
        mem(1, 0, 5),
        mem(2, 6, 30),
        mem(3, 10, 12),
        mem(4, 14, 16, last_used=5.0),
        mem(5, 40, 45),
    ]
    # 3: next start 14, reach 30 -> 0. 4: next 40, reach 30 -> 9. 2: next 10, reach 5 -> 4.
    assert choose_evictions(memories, 4) == [3]
    # After 3 goes, 2's next is 4 (start 14): hole 14 - 5 - 1 = 8, below 4's 9.
    assert choose_evictions(memories, 3) == [3, 2]


def test_overlapping_neighbours_make_the_hole_zero() -> None:
    memories = [
        mem(1, 0, 5),
        mem(2, 4, 9, last_used=100.0),  # 1 and 3 meet at 5/6: dropping 2 uncovers nothing
        mem(3, 6, 11),  # dropping 3: 12 - 9 - 1 = 2 depths
        mem(4, 12, 17),
    ]
    assert choose_evictions(memories, 3) == [2]


def test_costs_are_recomputed_after_each_pick() -> None:
    # Back-to-back blocks all cost 6. The oldest (2) goes first; then 3's hole doubles
    # to 12 while 4's stays 6, so 4 goes next although 3 is older.
    memories = [
        mem(1, 0, 5, created=0.0),
        mem(2, 6, 11, created=1.0),
        mem(3, 12, 17, created=2.0),
        mem(4, 18, 23, created=3.0),
        mem(5, 24, 29, created=4.0),
    ]
    assert choose_evictions(memories, 3) == [2, 4]


def test_thinning_a_long_even_story_keeps_it_spread() -> None:
    memories = blocks(*[(6 * i, 6 * i + 5) for i in range(12)])
    kept = {m.id for m in memories} - set(choose_evictions(memories, 6))
    starts = sorted(m.source_start for m in memories if m.id in kept and m.source_start is not None)
    assert starts[0] == 0 and starts[-1] == 66
    assert max(b - a for a, b in zip(starts, starts[1:], strict=False)) <= 18


# -- ties ----------------------------------------------------------------------------------


def test_ties_go_to_the_least_recently_used() -> None:
    memories = [
        mem(1, 0, 5),
        mem(2, 6, 11, last_used=30.0),
        mem(3, 12, 17, last_used=20.0),
        mem(4, 18, 23),
    ]
    assert choose_evictions(memories, 3) == [3]


def test_never_used_memories_count_from_their_creation() -> None:
    memories = [
        mem(1, 0, 5),
        mem(2, 6, 11, last_used=30.0, created=1.0),
        mem(3, 12, 17, created=25.0),  # never used: counts from 25, before 2's use at 30
        mem(4, 18, 23),
    ]
    assert choose_evictions(memories, 3) == [3]


def test_equal_recency_takes_the_fewer_used() -> None:
    memories = [
        mem(1, 0, 5),
        mem(2, 6, 11, uses=3, last_used=10.0),
        mem(3, 12, 17, uses=1, last_used=10.0),
        mem(4, 18, 23),
    ]
    assert choose_evictions(memories, 3) == [3]


def test_then_the_lower_id() -> None:
    memories = [
        mem(1, 0, 5),
        mem(7, 6, 11, last_used=10.0),
        mem(3, 12, 17, last_used=10.0),
        mem(9, 18, 23),
    ]
    assert choose_evictions(memories, 3) == [3]


# -- user memories and fallbacks -----------------------------------------------------------


def test_user_memories_go_least_recently_used_first() -> None:
    memories = [
        mem(1, last_used=30.0),
        mem(2, created=5.0),
        mem(3, last_used=10.0, uses=4),
        mem(4, last_used=10.0, uses=2),
    ]
    assert choose_evictions(memories, 1) == [2, 4, 3]


def test_coverage_candidates_go_before_user_memories() -> None:
    memories = [mem(1, 0, 5), mem(2, 6, 11, last_used=99.0), mem(3, 12, 17), mem(4, created=-5.0)]
    assert choose_evictions(memories, 3) == [2]
    assert choose_evictions(memories, 2) == [2, 4]


def test_endpoints_go_last_least_recently_used_first() -> None:
    memories = [mem(1, 0, 5, last_used=50.0), mem(2, 6, 11, last_used=40.0), mem(3)]
    assert choose_evictions(memories, 0) == [3, 2, 1]


def test_a_lone_ranged_memory_is_taken_only_after_the_user_memories() -> None:
    memories = [mem(1, 0, 5, created=0.0), mem(2, created=9.0)]
    assert choose_evictions(memories, 1) == [2]


# -- pinned --------------------------------------------------------------------------------


def test_a_pinned_memory_is_never_taken() -> None:
    memories = [mem(1, 0, 5), mem(2, 6, 7, pinned=True), mem(3, 8, 20), mem(4, 21, 40), mem(5)]
    picks = choose_evictions(memories, 0)
    assert 2 not in picks
    assert sorted(picks) == [1, 3, 4, 5]


def test_a_pinned_memory_still_covers_its_stretch_and_can_be_an_endpoint() -> None:
    memories = [mem(1, 0, 5, pinned=True), mem(2, 6, 11), mem(3, 12, 17), mem(4, 18, 23)]
    # 1 is the (pinned) earliest, so 2 is not protected: 2 and 3 both cost 6; 2 is older.
    assert choose_evictions(memories, 3) == [2]


def test_all_pinned_leaves_the_bank_over_capacity() -> None:
    memories = [mem(i, i * 6, i * 6 + 5, pinned=True) for i in range(4)] + [mem(9, pinned=True)]
    assert choose_evictions(memories, 1) == []


def test_mostly_pinned_takes_only_the_unpinned() -> None:
    memories = [mem(1, 0, 5, pinned=True), mem(2, 6, 11), mem(3, 12, 17, pinned=True), mem(4)]
    assert choose_evictions(memories, 0) == [2, 4]  # 2 is a coverage candidate, 4 a user memory


# -- small capacities ----------------------------------------------------------------------


def test_capacity_zero_takes_everything_endpoints_last() -> None:
    memories = blocks((0, 5), (6, 11), (12, 17), (18, 23))
    picks = choose_evictions(memories, 0)
    assert sorted(picks) == [1, 2, 3, 4]
    assert set(picks[:2]) == {2, 3}


def test_capacity_one_keeps_one_endpoint() -> None:
    memories = blocks((0, 5), (6, 11), (12, 17), (18, 23))
    picks = choose_evictions(memories, 1)
    assert len(picks) == 3 and set(picks[:2]) == {2, 3}
    assert picks[2] == 1  # the endpoints: 1 was created first


def test_capacity_two_keeps_both_endpoints() -> None:
    memories = blocks((0, 5), (6, 11), (12, 17), (18, 23), (24, 29))
    picks = choose_evictions(memories, 2)
    assert sorted(picks) == [2, 3, 4]


# -- properties ----------------------------------------------------------------------------


@st.composite
def candidates(draw: st.DrawFn) -> list[EvictionCandidate]:
    n = draw(st.integers(min_value=0, max_value=25))
    out = []
    for i in range(n):
        ranged = draw(st.integers(0, 4)) > 0
        start = draw(st.integers(0, 60)) if ranged else None
        end = None
        if start is not None:
            end = draw(st.none() | st.integers(start, start + 12))
        out.append(
            EvictionCandidate(
                id=i + 1,
                source_start=start,
                source_end=end,
                pinned=draw(st.integers(0, 4)) == 0,
                use_count=draw(st.integers(0, 3)),
                last_used=draw(st.none() | st.integers(0, 20).map(float)),
                created=float(draw(st.integers(0, 20))),
            )
        )
    return out


def endpoints(remaining: Sequence[EvictionCandidate]) -> set[int]:
    ranged = sorted(
        (m for m in remaining if m.source_start is not None),
        key=lambda m: (
            m.source_start,
            m.source_end if m.source_end is not None else m.source_start,
            m.id,
        ),
    )
    return {ranged[0].id, ranged[-1].id} if ranged else set()


@settings(max_examples=200, deadline=None)
@given(candidates(), st.integers(min_value=0, max_value=30))
def test_eviction_properties(memories: list[EvictionCandidate], capacity: int) -> None:
    picks = choose_evictions(memories, capacity)
    unpinned = [m for m in memories if not m.pinned]
    assert len(picks) == min(max(0, len(memories) - capacity), len(unpinned))
    assert len(set(picks)) == len(picks)
    by_id = {m.id: m for m in memories}
    assert not any(by_id[i].pinned for i in picks)
    remaining = list(memories)
    for picked in picks:
        ends = endpoints(remaining)
        if picked in ends:  # only once every other unpinned memory left is an endpoint too
            assert all(m.id in ends for m in remaining if not m.pinned)
        remaining = [m for m in remaining if m.id != picked]


def test_a_large_bank_is_quick() -> None:
    memories = blocks(*[(6 * i, 6 * i + 5) for i in range(600)])
    picks = choose_evictions(memories, 25)
    assert len(picks) == 575
    assert {1, 600} - set(picks) == {1, 600}
