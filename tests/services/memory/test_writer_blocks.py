"""``plan_blocks``: which blocks of the path the next memory run writes (docs/memory.md §2)."""

from __future__ import annotations

import time

import pytest

from talekeeper.services.memory.writer import (
    BLOCK_ACTIONS,
    FIRST_AT,
    MAX_PER_RUN,
    _shared_depth,
    joined_span,
    plan_blocks,
)

pytestmark = pytest.mark.no_database


def test_nothing_before_twelve_actions_then_full_blocks_with_one_action_of_slack() -> None:
    assert plan_blocks(list(range(FIRST_AT - 1)), []) == []
    assert plan_blocks(list(range(12)), []) == [[0, 1, 2, 3, 4, 5]]  # 6-11 has no slack yet
    assert plan_blocks(list(range(13)), []) == [list(range(6)), list(range(6, 12))]
    assert plan_blocks(list(range(18)), [(0, 5), (6, 11)]) == []  # 12-17 ends on the head


def test_at_most_five_blocks_a_run_oldest_first() -> None:
    blocks = plan_blocks(list(range(100)), [])
    assert len(blocks) == MAX_PER_RUN and blocks[0][0] == 0
    assert all(len(b) == BLOCK_ACTIONS for b in blocks)


def test_a_gap_before_a_covered_action_is_filled_by_a_shorter_block() -> None:
    depths = [d for d in range(20) if d != 5]  # 5 was deleted; its memory withdrawn
    assert plan_blocks(depths, [(6, 11), (12, 17)]) == [[0, 1, 2, 3, 4]]


def test_deleted_depths_are_skipped_not_counted() -> None:
    depths = [0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]  # 3 deleted
    assert plan_blocks(depths, [])[0] == [0, 1, 2, 4, 5, 6]


def test_a_block_never_ends_on_a_depth_another_paths_memory_covers_from() -> None:
    # Depths 10 and 11 are shared with a fork whose memory covers 10..: a block ending there
    # would be on the fork's path too; it grows past them instead.
    blocks = plan_blocks(list(range(20)), [(0, 5)], no_end={10, 11})
    assert blocks == [list(range(6, 13)), list(range(13, 19))]


def test_the_shared_depth_of_two_paths() -> None:
    # Branch 2 forked from branch 1 at depth 10 (its lineage: (2, None), (1, 9)).
    assert _shared_depth(((2, None), (1, 9)), ((1, 30),)) == 9
    assert _shared_depth(((1, None),), ((2, 15), (1, 9))) == 9
    assert _shared_depth(((1, None),), ((3, 4),)) == -1


# Main's path after its 23 was deleted: a fork left from 22 and its own memory covers 18..
# on its path, so no memory of main may end on 18..22; main's 18-23 was withdrawn.
MAIN = [d for d in range(37) if d != 23]
MAIN_COVERED = [(0, 5), (6, 11), (12, 17), (24, 29), (30, 35)]
SHARED = set(range(18, 23))


def test_a_gap_that_cannot_end_on_its_own_joins_the_memory_after_it() -> None:
    [block] = plan_blocks(MAIN, MAIN_COVERED, no_end=SHARED)
    assert block == [18, 19, 20, 21, 22, 24, 25, 26, 27, 28, 29]
    assert joined_span(block, MAIN_COVERED) == (24, 29)


def test_a_gap_joins_with_only_what_is_left_after_its_full_blocks() -> None:
    covered = [(0, 5), (24, 29), (30, 35)]  # 6..22 uncovered
    blocks = plan_blocks(MAIN, covered, no_end=SHARED)
    assert blocks == [list(range(6, 12)), list(range(12, 18)), [18, 19, 20, 21, 22, *range(24, 30)]]
    assert [joined_span(b, covered) for b in blocks] == [None, None, (24, 29)]


def test_a_gap_that_can_end_on_its_own_is_a_new_shorter_block() -> None:
    blocks = plan_blocks(MAIN, MAIN_COVERED, no_end={18, 19})
    assert blocks == [[18, 19, 20, 21, 22]]
    assert joined_span(blocks[0], MAIN_COVERED) is None


def test_a_range_reaching_past_a_later_one_still_covers_its_depths() -> None:
    # Not a state the writer makes, but the plan must not write 5..10 a second time.
    assert plan_blocks(list(range(20)), [(0, 10), (3, 4)]) == [list(range(11, 17))]


def test_planning_a_long_story_looks_each_depth_up_once() -> None:
    depths = list(range(50_000))  # limits.MAX_ACTIONS
    covered = [(s, s + BLOCK_ACTIONS - 1) for s in range(0, 49_980, BLOCK_ACTIONS)]
    started = time.perf_counter()
    blocks = plan_blocks(depths, covered)
    assert time.perf_counter() - started < 2.0  # a scan per depth took 10 s
    assert blocks == [list(range(s, s + BLOCK_ACTIONS)) for s in (49_980, 49_986, 49_992)]
