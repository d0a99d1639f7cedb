"""Recall metrics over ranked retrievals: recall@k, MRR, per kind and per distance.

Definitions (the tests pin them on hand-made rankings):

- A probe's **rank** for a method is the 1-based position of the first hit in
  the method's full ranking, or ``None`` when no hit is ranked at all (below a
  threshold, or absent).
- **recall@k** = share of probes whose rank is ≤ k; **MRR** = mean of 1/rank,
  0 for ``None``. Both over the same probes for every method.
- **injected** = a hit is among what the design puts into the prompt (its
  first ``inject`` items).
- **False hit**, on a probe about a fact never planted: the method's top score
  is at least its *typical hit score* (the median score of its hits ranked
  first on planted probes): something scored like an answer where there is none.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from benchmarks.recall.methods import Ranked


@dataclass(frozen=True)
class Outcome:
    rank: int | None  # 1-based position of the first hit in the ranking
    injected: bool  # a hit among the first ``inject`` items
    top_score: float | None  # the best score the method gave anything
    hit_score: float | None  # the first hit's score
    injected_states: bool  # an injected item states the fact (its answer words)
    injected_chars: int = 0  # characters the design puts into the prompt


def outcome(
    ranked: Ranked,
    hits: Sequence[bool],
    stating: Sequence[bool],
    sizes: Sequence[int] | None = None,
) -> Outcome:
    """``hits``, ``stating`` and ``sizes`` (characters) are per item (the positions
    ``ranked.order`` refers to)."""
    rank = next((n for n, i in enumerate(ranked.order, start=1) if hits[i]), None)
    injected = ranked.order[: ranked.inject]
    return Outcome(
        rank=rank,
        injected=rank is not None and rank <= ranked.inject,
        top_score=ranked.scores[0] if ranked.scores else None,
        hit_score=ranked.scores[rank - 1] if rank is not None else None,
        injected_states=any(stating[i] for i in injected),
        injected_chars=sum(sizes[i] for i in injected) if sizes is not None else 0,
    )


def recall_at(ranks: Iterable[int | None], k: int) -> float:
    values = list(ranks)
    if not values:
        return float("nan")
    return sum(1 for r in values if r is not None and r <= k) / len(values)


def mrr(ranks: Iterable[int | None]) -> float:
    values = list(ranks)
    if not values:
        return float("nan")
    return sum(1.0 / r for r in values if r is not None) / len(values)


def injected_rate(outcomes: Iterable[Outcome]) -> float:
    values = list(outcomes)
    return sum(o.injected for o in values) / len(values) if values else float("nan")


def typical_hit_score(outcomes: Iterable[Outcome]) -> float | None:
    """Median score of the hits a method ranked first (None if it never did)."""
    scores = [o.hit_score for o in outcomes if o.rank == 1 and o.hit_score is not None]
    return statistics.median(scores) if scores else None


def false_hit_rate(never: Sequence[Outcome], typical: float | None) -> float:
    """Share of never-planted probes whose top score reaches the typical hit score."""
    if not never or typical is None:
        return float("nan")
    return sum(1 for o in never if o.top_score is not None and o.top_score >= typical) / len(never)


def bucket_edges(window: int) -> tuple[int, ...]:
    """Distance buckets in actions: just past the window, then wider and wider."""
    first = window + 1
    return (first, *(e for e in (80, 120, 180) if e > first), 10**9)


def bucket(distance: int, edges: Sequence[int]) -> str:
    """The label of the bucket ``[edges[i], edges[i+1])`` that holds ``distance``."""
    for low, high in zip(edges, edges[1:], strict=False):
        if low <= distance < high:
            return f"{low}–{high - 1}" if high < 10**9 else f"{low}+"
    raise ValueError(f"distance {distance} is below the first bucket ({edges[0]})")


def bucket_labels(edges: Sequence[int]) -> list[str]:
    return [bucket(low, edges) for low in edges[:-1]]
