"""The knowledge library's scoring: every passage considered, its scores, and the choice.

Invariants:

- Every passage of the searched sources is considered. Its lexical score is the share of
  the query terms' weight it holds, a term weighing ``log(1 + (N - df + 0.5) / (df + 0.5))``
  over the N passages considered (BM25's idf): the rarer the heavier, and never zero, so a
  term that every passage holds still counts (a one-passage source is found by its words;
  the memories' ``log((N + 1) / (df + 1))`` would weigh its every term 0); its semantic
  score is the cosine with the weighted query vector (``INPUT_WEIGHT`` /
  ``CONTEXT_WEIGHT``), for passages that have a vector of the current embedding model,
  else none (such a passage is ranked by words). The final score is
  ``SEMANTIC_WEIGHT * max(semantic, 0) + LEXICAL_WEIGHT * lexical``; the best ``top_k``
  whose final score reaches ``MIN_SCORE`` and ``RELATIVE_FLOOR`` of the best one's are
  chosen (the search box: the best ``top_k`` with any score above 0). The next
  ``RUNNERS_UP`` are kept for Insights ("what was considered").
- Equal scores go to the earlier passage (reading order is the stable tiebreak), in the
  choice and in each score's rank alike.
- The scoring is computed here in NumPy, identically on SQLite and PostgreSQL, from what
  the search read: which passages hold each term and the sources' vectors
  (``services.library.vectors``). The weights are read when a search runs (the library
  benchmark sets them meanwhile). Reading the library, the query's terms and vector and
  the note are ``services.library.search``'s.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from talekeeper.services.library.vectors import FloatArray, IdArray, Vectors

INPUT_WEIGHT = 0.7  # the player's words say what they ask about
CONTEXT_WEIGHT = 0.3  # the scene resolves "there" and "it"
SEMANTIC_WEIGHT = 0.6
LEXICAL_WEIGHT = 0.4
# Below this a passage is noise, not knowledge: better nothing than filler. Set on the library
# benchmark's tune seed (docs/benchmarks.md, "Knowledge library"): at 0.2 almost no question
# about a place the book never names came back empty; at 0.25, 40% of them on held-out seeds,
# for one point of recall@3.
MIN_SCORE = 0.25
# A passage under this share of the best one's score rides on the query's loose words (a
# middling cosine, no shared term) while a real answer was found: left out as well.
RELATIVE_FLOOR = 0.5
RUNNERS_UP = 3


def query_vector(
    vectors: list[list[float]], input_text: str, context_text: str
) -> FloatArray | None:
    """The unit query vector from the embeddings of the input and the context (those of
    them not blank, in that order), weighted when there are both; None when none is
    usable."""
    arrays = [np.asarray(v, dtype=np.float32) for v in vectors]
    units = [v / n for v in arrays if (n := float(np.linalg.norm(v))) > 0]
    if not units:
        return None
    if len(units) == 2 and input_text.strip() and context_text.strip():
        query = INPUT_WEIGHT * units[0] + CONTEXT_WEIGHT * units[1]
    else:
        query = units[0]
    norm = float(np.linalg.norm(query))
    return (query / norm).astype(np.float32) if norm else None


@dataclass
class Ranked:
    ids: IdArray
    semantic: npt.NDArray[np.float64]  # nan: no vector
    lexical: npt.NDArray[np.float64]
    final: npt.NDArray[np.float64]
    order: list[int]  # the best rows, best first: as many as can be chosen or runners-up
    term_weights: dict[str, float]

    def semantic_rank(self, row: int) -> int | None:
        return place(self.ids, self.semantic, row)

    def lexical_rank(self, row: int) -> int | None:
        return place(self.ids, np.where(self.lexical > 0, self.lexical, np.nan), row)


def rank(
    query_terms: list[str],
    postings: list[list[int]],
    vectors: list[Vectors],
    query: FloatArray | None,
    n: int,
    keep: int,
) -> Ranked:
    """The scores of every passage considered, and the ``keep`` best rows in order.
    ``postings``: the passages holding each query term, in the terms' order."""
    weights = {t: idf(n, len(p)) for t, p in zip(query_terms, postings, strict=True)}
    total = sum(weights.values())
    lex_ids = np.zeros(0, dtype=np.int64)
    lex_scores = np.zeros(0, dtype=np.float64)
    held = [np.asarray(p, dtype=np.int64) for p in postings]
    if held and total > 0:
        all_ids = np.concatenate(held)
        all_w = np.concatenate(
            [np.full(p.size, weights[t]) for t, p in zip(query_terms, held, strict=True)]
        )
        if all_ids.size:
            lex_ids, inverse = np.unique(all_ids, return_inverse=True)
            lex_scores = np.minimum(np.bincount(inverse, weights=all_w) / total, 1.0)
    sem_ids = np.zeros(0, dtype=np.int64)
    sem_scores = np.zeros(0, dtype=np.float64)
    usable = [v for v in vectors if v.ids.size and query is not None]
    usable = [v for v in usable if v.matrix.shape[1] == query.shape[0]]  # type: ignore[union-attr]
    if usable and query is not None:
        sem_ids = np.concatenate([v.ids for v in usable])
        sem_scores = np.concatenate([(v.matrix @ query).astype(np.float64) for v in usable])
    ids = np.union1d(lex_ids, sem_ids)
    lexical = np.zeros(ids.size, dtype=np.float64)
    semantic = np.full(ids.size, np.nan, dtype=np.float64)
    if lex_ids.size:
        lexical[np.searchsorted(ids, lex_ids)] = lex_scores
    if sem_ids.size:
        semantic[np.searchsorted(ids, sem_ids)] = sem_scores
    final = SEMANTIC_WEIGHT * np.maximum(np.nan_to_num(semantic, nan=0.0), 0.0)
    final += LEXICAL_WEIGHT * lexical
    return Ranked(
        ids=ids,
        semantic=semantic,
        lexical=lexical,
        final=final,
        order=best(ids, final, keep),
        term_weights={t: round(w, 4) for t, w in weights.items()},
    )


def choose(ranked: Ranked, top_k: int, floor: bool) -> tuple[list[int], list[int]]:
    """The rows chosen, best first: the best ``top_k`` scoring above 0 and, with ``floor``,
    reaching ``MIN_SCORE`` and ``RELATIVE_FLOOR`` of the best one's score; and the next
    ``RUNNERS_UP`` of the others."""
    top = float(ranked.final[ranked.order[0]]) if ranked.order else 0.0
    least = max(MIN_SCORE, RELATIVE_FLOOR * top) if floor else 0.0
    chosen = [i for i in ranked.order if ranked.final[i] > 0 and ranked.final[i] >= least]
    chosen = chosen[:top_k]
    taken = set(chosen)
    rest = list(itertools.islice((i for i in ranked.order if i not in taken), RUNNERS_UP))
    return chosen, rest


def best(ids: IdArray, final: npt.NDArray[np.float64], keep: int) -> list[int]:
    """The ``keep`` best rows, best first; equal scores go to the earlier passage (reading
    order is the stable tiebreak). Only the rows that can make the cut are sorted: every
    row scoring at least the ``keep``-th best score, ties at that score included."""
    if keep <= 0 or final.size == 0:
        return []
    if final.size > keep:
        threshold = np.partition(final, final.size - keep)[final.size - keep]
        rows = np.flatnonzero(final >= threshold)
    else:
        rows = np.arange(final.size)
    order = rows[np.lexsort((ids[rows], -final[rows]))]
    return [int(r) for r in order[:keep]]


def idf(n: int, df: int) -> float:
    """A term's weight over ``n`` passages, ``df`` of which hold it: never zero."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def place(ids: IdArray, scores: npt.NDArray[np.float64], row: int) -> int | None:
    """The 1-based rank of ``row`` among the rows with a score (nan: unranked), best first,
    ties to the earlier passage; None when ``row`` has no score."""
    score = scores[row]
    if np.isnan(score):
        return None
    ahead = np.count_nonzero(scores > score)  # nan compares false: unranked rows never count
    tied = np.count_nonzero((scores == score) & (ids < ids[row]))
    return int(ahead + tied) + 1
