"""Which memories a full bank forgets: capacity by coverage (docs/memory.md §4).

While more than ``capacity`` memories remain, one memory is picked, removed
from the remaining set, and everything is recomputed before the next pick.

Story position: a memory *has a source range* when ``source_start`` is set
(a missing ``source_end`` reads as ``source_start``). Memories with a range
are ordered by (source_start, source_end, id); pinned ones take part in that
order (they stay in the bank, so they still cover their stretch).

Pick order:

1. **Coverage candidates** -- ranged, not pinned, and neither the earliest
   nor the latest ranged memory remaining (those two hold the only record of
   the opening and of the newest stretch). The cost of dropping one is
   - 0 when another remaining memory has the same ``source_start``;
   - otherwise the *hole* it leaves: the number of depths strictly between
     the reach before it (the greatest ``source_end`` of the memories ordered
     before it) and the ``source_start`` of the memory ordered right after it,
     i.e. ``max(0, next_start - reach_before - 1)``. With back-to-back blocks
     [0-5] [6-11] [12-17], dropping the middle one leaves 6 depths (6..11);
     a neighbour that overlaps it makes the hole 0.
   The smallest cost goes first, so the bank thins where it is densest.
2. When no coverage candidate is left: memories with no source range (typed by
   the user), least recently used first.
3. Then the protected endpoints, least recently used first.

Ties at every step: least recently used (``last_used``, else ``created``;
older first), then fewer uses, then lower id.

Invariants: a pinned memory is never picked, even if that leaves the bank
over capacity; the result has min(max(0, n - capacity), unpinned count)
distinct ids, in pick order; an endpoint is picked only when every other
unpinned memory remaining is an endpoint too.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class EvictionCandidate:
    id: int
    source_start: int | None
    source_end: int | None
    pinned: bool
    use_count: int
    last_used: float | None  # a timestamp; None if never used
    created: float  # a timestamp


def _position(m: EvictionCandidate) -> tuple[int, int, int]:
    assert m.source_start is not None
    return (m.source_start, _end(m), m.id)


def _end(m: EvictionCandidate) -> int:
    assert m.source_start is not None
    return m.source_end if m.source_end is not None else m.source_start


def _lru_key(m: EvictionCandidate) -> tuple[float, int, int]:
    """Least recently used first, then fewer uses, then lower id."""
    return (m.last_used if m.last_used is not None else m.created, m.use_count, m.id)


def _coverage_pick(ranged: list[EvictionCandidate], start_counts: Counter[int]) -> int | None:
    """Index in ``ranged`` (position order) of the cheapest coverage candidate, if any."""
    best: int | None = None
    best_key: tuple[int, float, int, int] | None = None
    reach = _end(ranged[0]) if ranged else 0
    for i in range(1, len(ranged) - 1):  # the first and the last are protected
        m = ranged[i]
        if not m.pinned:
            assert m.source_start is not None
            if start_counts[m.source_start] > 1:
                cost = 0
            else:
                next_start = ranged[i + 1].source_start
                assert next_start is not None
                cost = max(0, next_start - reach - 1)
            key = (cost, *_lru_key(m))
            if best_key is None or key < best_key:
                best, best_key = i, key
        reach = max(reach, _end(m))
    return best


def _lru_pick(pool: Sequence[EvictionCandidate]) -> EvictionCandidate | None:
    unpinned = [m for m in pool if not m.pinned]
    return min(unpinned, key=_lru_key) if unpinned else None


def choose_evictions(memories: Sequence[EvictionCandidate], capacity: int) -> list[int]:
    """Ids to mark forgotten, in pick order, so at most ``capacity`` remain (pinned allowing).

    ``memories`` are the adventure's active memories, ids distinct; raises
    ValueError on a negative capacity.
    """
    if capacity < 0:
        raise ValueError(f"the bank capacity must be 0 or more, not {capacity}")
    ranged = sorted((m for m in memories if m.source_start is not None), key=_position)
    positions = [_position(m) for m in ranged]  # kept in step with ``ranged`` for bisect
    unranged = [m for m in memories if m.source_start is None]
    start_counts = Counter(m.source_start for m in ranged if m.source_start is not None)
    remaining = len(memories)
    picks: list[int] = []
    while remaining > capacity:
        index = _coverage_pick(ranged, start_counts)
        if index is None:
            user = _lru_pick(unranged)
            if user is not None:
                unranged.remove(user)
                picks.append(user.id)
                remaining -= 1
                continue
            endpoint = _lru_pick(ranged)
            if endpoint is None:
                break  # everything left is pinned: the bank stays over capacity
            index = bisect.bisect_left(positions, _position(endpoint))
        picked = ranged.pop(index)
        positions.pop(index)
        assert picked.source_start is not None
        start_counts[picked.source_start] -= 1
        picks.append(picked.id)
        remaining -= 1
    return picks
