"""``plan_blocks``: which blocks of the path the next memory run writes (memory.md §2)."""

from __future__ import annotations

from talekeeper.services.memory.writer import (
    BLOCK_ACTIONS,
    FIRST_AT,
    MAX_PER_RUN,
    _shared_depth,
    plan_blocks,
)


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
