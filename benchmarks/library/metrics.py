"""The figures: ranks, recall at k, percentiles, what a score floor would leave.

Pure functions over what the searches returned; nothing here ranks anything. Invariants:

- A rank is 1-based, or None when the answer was not returned (a miss at every k).
- ``recall_at`` of no questions is 0.0, not a division error: an empty set found nothing.
- ``percentile`` is the nearest-rank percentile of the values given (the p95 of 50
  samples is the 48th smallest), so it is always one of the values measured.
- ``above`` keeps a returned list's order and drops the passages whose score is under the
  floor: the product's own rule (``MIN_SCORE``) applied to the product's own scores.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

Returned = Sequence[tuple[int, float]]  # (passage id, final score), best first


def rank_of(answer: int | None, returned: Sequence[int]) -> int | None:
    """1-based place of ``answer`` in ``returned``; None when absent (or no answer)."""
    if answer is None:
        return None
    for place, pid in enumerate(returned, start=1):
        if pid == answer:
            return place
    return None


def recall_at(ranks: Sequence[int | None], k: int) -> float:
    """Share of questions whose answer came back within the first ``k``."""
    if not ranks:
        return 0.0
    return sum(1 for r in ranks if r is not None and r <= k) / len(ranks)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile, ``q`` in [0, 100]; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    place = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(place, len(ordered)) - 1]


def above(returned: Returned, floor: float) -> list[int]:
    """The ids of ``returned`` whose score reaches ``floor``, in order."""
    return [pid for pid, score in returned if score >= floor]


def empty_share(lists: Sequence[Sequence[int]]) -> float:
    """Share of searches that returned nothing."""
    if not lists:
        return 0.0
    return sum(1 for x in lists if not x) / len(lists)


def sign_test(wins: int, losses: int) -> float:
    """Two-sided exact sign test: the chance of a split at least this uneven between
    ``wins`` and ``losses`` if either side were equally likely (ties left out); 1.0 for no
    decided pair."""
    n = wins + losses
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(wins, losses) + 1)) / 2**n
    return float(min(1.0, 2 * tail))
