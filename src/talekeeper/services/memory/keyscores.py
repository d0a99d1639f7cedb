"""The evidence keys' scores (docs/memory.md §5).

- Evidence keys (``Keys``: source passages of a memory, see ``evidence``): each key
  under the mask (its memory is) is scored the same way, but its semantic part weighs
  the context by ``KEY_CONTEXT_WEIGHT`` (the input the rest) and its lexical share is
  over the candidate keys (their own N and df). A memory's **final** score is the score
  of the key that won: its own text's, or its best passage's when that is higher
  (``Scored.key`` names the passage; on a tie the text wins).
- Large banks (``keyset.QUANTIZE_AT`` keys and more): the passages' cosines are read at
  int8 precision first (``int8``: a quarter of the bytes, with an error bound), and every
  passage whose bound reaches a decision is rescored in float32: a memory's best passage
  where the memory can be in the window, the best passage of all, the hop's candidates,
  and every passage of a chosen memory. The choice is the float32 product's; scores that
  differ by less than float32 rounding (about 1e-6: the same sentence in two memories) may
  be ordered either way, as they could be before.
- **Passages for the question** (``Scored.passages``): each chosen memory's keys, best
  first by their final score (ties by story order), at most ``PASSAGE_CHOICES``, every one
  exact (never an int8 reading): what the Memories section may carry under the memory, the
  best of all chosen memories' first, while its budget lasts (``base.Retrieval``). The key
  that won the memory its place (the hop's key for the hop's memory) leads its list.

"The same way" is the text's score (``scoring``); the window is the fused order's
(``fusion``); the hop is ``selection``'s; the selection's invariants are ``ranking``'s.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from talekeeper.services.memory import scoring
from talekeeper.services.memory.keyset import BoolArray, FloatArray, IntArray, Keys
from talekeeper.services.memory.scoring import PASSAGE_CHOICES, Scored, Weights


@dataclass
class KeyScores:
    """The candidate keys' scores. ``semantic`` is exact where ``known``, elsewhere the int8
    estimate, off by at most ``bound`` (``int8``). ``final`` is exact where ``known`` and
    -inf elsewhere; it is known for every key that can be its memory's best key above the
    memory's text while that memory can be in the first ``window`` by final score, and for
    the best keys of all. ``low``: per bank row, the memory's final score where it is
    settled (so for every memory in the first ``window``), a lower bound elsewhere."""

    cand: BoolArray  # per key row: its memory is a candidate
    semantic: npt.NDArray[np.float64]
    lexical: npt.NDArray[np.float64]  # exact (0 where not a candidate)
    bound: npt.NDArray[np.float64]  # 0 where ``known``
    known: BoolArray
    final: npt.NDArray[np.float64]
    low: npt.NDArray[np.float64]
    weight: float  # the lexical weight
    vectors: FloatArray
    query: FloatArray | None  # the keys' query vector (None: no semantic part)
    rescored: int = 0  # keys read exactly after their int8 reading

    def exact(self, rows: IntArray) -> None:
        """Make ``semantic`` and ``final`` exact at the candidate keys of ``rows``."""
        rows = rows[self.cand[rows]]
        unknown = rows[~self.known[rows]]
        if unknown.size and self.query is not None:
            self.semantic[unknown] = (self.vectors[unknown] @ self.query).astype(np.float64)
            self.rescored += int(unknown.size)
        self.bound[unknown] = 0.0
        self.known[unknown] = True
        self.final[rows] = self.semantic[rows] + self.weight * self.lexical[rows]

    def best_keys(self, keys: Keys, rows: IntArray) -> dict[int, tuple[int, float]]:
        """For each candidate bank row of ``rows`` that has keys: its best key (the first on
        a tie) and that key's final score, every one of its keys made exact first. One
        gather and one ``reduceat`` for them all (every pinned memory is chosen at once)."""
        starts, ends = keys.starts[rows], keys.starts[rows + 1]
        has = ends > starts
        rows, starts, counts = rows[has], starts[has], (ends - starts)[has]
        if not rows.size:
            return {}
        offsets = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
        span = np.arange(int(counts.sum()), dtype=np.int64)
        key_rows = span - np.repeat(offsets, counts) + np.repeat(starts, counts)
        self.exact(key_rows)
        finals = self.semantic[key_rows] + self.weight * self.lexical[key_rows]
        best = np.maximum.reduceat(finals, offsets)
        owner = np.repeat(np.arange(rows.size), counts)
        tops = np.flatnonzero(finals == best[owner])  # each memory's best keys, in order
        _, first = np.unique(owner[tops], return_index=True)
        winners = key_rows[tops[first]]
        return {int(r): (int(k), float(f)) for r, k, f in zip(rows, winners, best, strict=True)}


def with_passages(chosen: list[Scored], keyed: KeyScores | None, keys: Keys | None) -> None:
    """Give each chosen memory (in place in the list) its passages for the question
    (``Scored.passages``): its keys best first (ties by story order), the key that won it
    its place leading, at most ``PASSAGE_CHOICES``; every one made exact. One batch for
    them all: a bank with many pinned memories chooses dozens."""
    if keyed is None or keys is None or not chosen:
        return
    rows = np.array([s.row for s in chosen], dtype=np.int64)
    starts, counts = keys.starts[rows], keys.starts[rows + 1] - keys.starts[rows]
    total = int(counts.sum())
    if not total:
        return
    offsets = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
    key_rows = np.arange(total, dtype=np.int64) - np.repeat(offsets, counts)
    key_rows += np.repeat(starts, counts)
    keyed.exact(key_rows)
    finals = keyed.semantic[key_rows] + keyed.weight * keyed.lexical[key_rows]
    owner = np.repeat(np.arange(rows.size, dtype=np.int64), counts)
    won = np.array([-1 if s.key is None else s.key for s in chosen], dtype=np.int64)
    lead = keys.ids[key_rows] == np.repeat(won, counts)
    order = np.lexsort((key_rows, -finals, ~lead, owner))  # by memory, then as above
    ids, depths = keys.ids[key_rows[order]].tolist(), keys.depths[key_rows[order]].tolist()
    scores = finals[order].tolist()
    for i, s in enumerate(chosen):
        first = int(offsets[i])
        last = first + min(int(counts[i]), PASSAGE_CHOICES)
        offered = zip(ids[first:last], scores[first:last], depths[first:last], strict=True)
        chosen[i] = replace(s, passages=tuple(offered))


def _key_query(
    input_vec: FloatArray | None, context_vec: FloatArray | None, weights: Weights
) -> FloatArray | None:
    """The one vector a key's semantic part is the cosine with (a weighted sum of the two
    unit queries is a weighted sum of their cosines)."""
    if input_vec is not None and (context_vec is None or weights.key_context == 0):
        return input_vec
    if input_vec is None:
        return context_vec
    assert context_vec is not None
    mixed = (1.0 - weights.key_context) * input_vec + weights.key_context * context_vec
    return mixed.astype(np.float32)


def _per_memory_max(values: npt.NDArray[np.float64], keys: Keys) -> npt.NDArray[np.float64]:
    """Per bank row, the largest of its keys' ``values`` (-inf for a memory without keys);
    each memory's keys are one contiguous run, so this is one ``reduceat``."""
    rows = keys.starts.shape[0] - 1
    out = np.full(rows, -np.inf)
    has = keys.starts[1:] > keys.starts[:-1]
    if values.size and has.any():
        out[has] = np.maximum.reduceat(values, keys.starts[:-1][has])
    return out


def _nth_largest(values: npt.NDArray[np.float64], n: int) -> float:
    """The ``n``-th largest finite value (-inf when there are fewer than ``n``)."""
    finite = values[np.isfinite(values)]
    if n <= 0 or finite.size < n:
        return -np.inf
    return float(np.partition(finite, finite.size - n)[finite.size - n])


def key_scores(
    keys: Keys,
    mask: BoolArray,
    own: npt.NDArray[np.float64],
    input_vec: FloatArray | None,
    context_vec: FloatArray | None,
    unique_terms: list[str],
    weights: Weights,
) -> KeyScores:
    """``own``: per bank row, the memory's text score (-inf where not a candidate)."""
    cand = mask[keys.owner]
    query = _key_query(input_vec, context_vec, weights)
    lexical = np.zeros(keys.size)
    kc = np.flatnonzero(cand).astype(np.int64)
    if kc.size:
        lexical[kc], _ = scoring.lexical(keys.postings, cand, kc, unique_terms)
    read = keys.codes.estimate(query) if keys.codes is not None and query is not None else None
    if read is None:  # every key exact: one float32 product
        semantic = (
            (keys.vectors @ query).astype(np.float64) if query is not None else np.zeros(keys.size)
        )
        bound = np.zeros(keys.size)
    else:
        semantic, bound = read
    scores = KeyScores(
        cand, semantic, lexical, bound, np.full(keys.size, read is None),
        np.full(keys.size, -np.inf), own.copy(), weights.lexical, keys.vectors, query,
    )  # fmt: skip
    if not kc.size:
        return scores
    # Which keys can matter (the class docstring): those whose upper bound reaches their
    # memory's text score, the lower bound of that memory's best key and the window's
    # threshold (the window-th largest lower bound of a memory's final score), and those
    # that can be the best key of all. With bounds of 0 (every key exact): each memory's
    # best keys, where they beat its text and it is in the window.
    estimate = semantic + weights.lexical * lexical
    upper = np.where(cand, estimate + bound, -np.inf)
    lower = np.where(cand, estimate - bound, -np.inf)
    memory_low = np.maximum(own, _per_memory_max(lower, keys))
    threshold = _nth_largest(memory_low, weights.window)
    floor = np.maximum(memory_low, threshold)[keys.owner]
    scores.exact(np.flatnonzero((upper >= floor) | (upper >= lower.max())).astype(np.int64))
    low = np.where(scores.known, scores.final, lower)
    scores.low = np.maximum(own, _per_memory_max(low, keys))
    return scores
