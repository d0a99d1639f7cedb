"""Hybrid ranking and selection over one adventure's bank (memory.md §5).

The bank is held as NumPy arrays, one row per retrievable memory, so a turn's
scoring is a couple of matrix-vector products and a partial sort, never a
Python loop over the rows.

Scores of a candidate ``m`` (rows are L2-normalised, so a dot product is a cosine):

- semantic = ``INPUT_WEIGHT``·cos(input, m) + ``CONTEXT_WEIGHT``·cos(context, m);
  with only one query vector, that cosine alone; with neither, 0. A query
  vector of norm 0 counts as absent.
- lexical = the memory's share of the input's rarity. Over the N candidates
  under the mask, each distinct input term weighs ln((N+1)/(df+1)) (df =
  candidates holding it); the share is the weight of the input terms the
  memory holds over the weight of all input terms, capped at 1, and 0 when
  that total is 0.
- final = semantic + ``LEXICAL_WEIGHT``·lexical.
- Evidence keys (``Keys``: source passages of a memory, see ``evidence``): each key
  under the mask (its memory is) is scored the same way, but its semantic part weighs
  the context by ``KEY_CONTEXT_WEIGHT`` (the input the rest) and its lexical share is
  over the candidate keys (their own N and df). When the best passage scores above
  the memory's own text, the memory's final score is the text's plus
  ``SOURCE_WEIGHT`` times the difference (1: the passage's score; 0: keys unused);
  ``Scored.key`` names that passage (on a tie the text wins and no passage is named).

Selection invariants:

- only candidates under the mask are scored, counted or chosen;
- every pinned candidate is chosen (they count toward ``top_k`` but are never
  cut by it); then the rest best-first by final score, ties by lower id;
- a non-pinned memory whose cosine with an already chosen memory **of the same
  authority** is >= ``DUPLICATE_COSINE`` is suppressed and recorded as
  (id, duplicate_of) -- the chosen one it is closest to; a heuristic memory
  never suppresses an accepted one, nor the reverse;
- the result is ordered by final score descending, ties by id ascending, and
  holds at most max(top_k, pinned candidates) memories, each once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from talekeeper.services.memory.keyset import BoolArray, FloatArray, IntArray, KeyInput, Keys

INPUT_WEIGHT = 0.6  # the player's own words say best what this turn is about
CONTEXT_WEIGHT = 0.4  # the scene resolves "her" and "it" but must not drown the question
# Rare exact words (names, the item asked about) lift a memory as much as meaning does. The
# reference's 0.15 let scenery that resembles the newest narration outvote the memory that
# shares the question's rare words; over the recall benchmark's three sets 0.75 took recall@5
# from 0.83 to 0.93 and MRR from 0.65 to 0.79, and did no worse on any one of them (memory.md
# §5; the figures, before and after, in docs/benchmarks.md, "The score's weights").
LEXICAL_WEIGHT = 0.75


# A memory gains this share of what its best passage scores above its own text. Chosen on the
# tuning sets (the dense set's seed 14, the planted-fact set's seed 2024): at 1 (the passage's
# score outright) the dense set read 0.83 but the planted-fact set fell from 0.92 to 0.81, its
# scenery sentences about the subject asked about outranking the memories that state the fact;
# 0.5 gave 0.81 and 0.87; 0.25 is the largest share that keeps the planted-fact set at 0.92
# (the dense set 0.69). docs/benchmarks.md, "Recall on dense stories" and "The score's weights".
SOURCE_WEIGHT = 0.25
# A passage is evidence for the question, not for the scene: scored against the player's
# input alone (the context's share 0) whenever there is one. With the scene's share of 0.4,
# passages of scenery that resemble the newest narration outranked the memories that state
# the fact asked about (planted-fact set at a share of 0.25: 0.90 against 0.92).
KEY_CONTEXT_WEIGHT = 0.0


class Weights(NamedTuple):
    """The score's weights (the recall benchmarks rank with other ones to compare)."""

    input: float = INPUT_WEIGHT
    context: float = CONTEXT_WEIGHT
    lexical: float = LEXICAL_WEIGHT
    source: float = SOURCE_WEIGHT  # a passage's score is multiplied by this (0: keys unused)
    key_context: float = KEY_CONTEXT_WEIGHT  # the context's share in a passage's semantic part


WEIGHTS = Weights()
DUPLICATE_COSINE = 0.93  # above this two memories say the same thing; one slot is enough

_FIRST_WINDOW_SLACK = 8  # extra rows sorted up front so a few suppressions need no second pass
_WINDOW_GROWTH = 4  # each further pass sorts this many times more rows


class BankRow(NamedTuple):
    """One retrievable memory as the bank needs it (no text: the hot path never reads it).
    A named tuple: a cold bank builds hundreds of them per read."""

    id: int
    branch_id: int
    depth: int  # the node the memory is attached to
    vector: npt.NDArray[np.floating]  # any float dtype; normalised by ``Bank.build``
    pinned: bool
    heuristic: bool  # authority == "heuristic"
    terms: frozenset[str]


@dataclass(eq=False)
class Bank:
    """One adventure's retrievable memories: active, not forgotten, with a current vector."""

    ids: IntArray
    branch_ids: IntArray
    depths: IntArray
    vectors: FloatArray  # (N, dims), rows of norm 1 (or 0 for a zero vector)
    pinned: BoolArray
    heuristic: BoolArray
    postings: dict[str, IntArray] = field(default_factory=dict)  # term -> ascending row indices
    keys: Keys | None = None  # evidence keys; None: ranked by the memories' own text alone

    @property
    def size(self) -> int:
        return int(self.ids.shape[0])

    @property
    def dims(self) -> int:
        return int(self.vectors.shape[1])

    @classmethod
    def build(cls, rows: Sequence[BankRow], dims: int, keys: Sequence[KeyInput] = ()) -> Bank:
        """A bank of ``rows`` in the order given, with the ``keys`` of those rows.

        Raises ValueError on a vector of another size or with a non-finite value.
        """
        # One pass of Python over the rows (ids, flags, terms); the vectors are checked,
        # stacked and normalised as one matrix, never row by row.
        for row in rows:
            size = int(np.size(row.vector))
            if size != dims:
                raise ValueError(
                    f"memory {row.id} has a vector of {size} dimensions, "
                    f"the bank expects {dims}: re-embed it with the current model"
                )
        if rows:
            vectors = np.stack([np.asarray(r.vector, dtype=np.float32).reshape(-1) for r in rows])
        else:
            vectors = np.zeros((0, dims), dtype=np.float32)
        finite = np.isfinite(vectors).all(axis=1)
        if not finite.all():
            bad = rows[int(np.argmin(finite))].id
            raise ValueError(f"memory {bad} has a vector with NaN or infinity: re-embed it")
        index: dict[str, list[int]] = {}
        for i, row in enumerate(rows):
            for term in row.terms:
                index.setdefault(term, []).append(i)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        np.divide(vectors, norms, out=vectors, where=norms > 0)
        ids = np.array([r.id for r in rows], dtype=np.int64)
        return cls(
            ids=ids,
            branch_ids=np.array([r.branch_id for r in rows], dtype=np.int64),
            depths=np.array([r.depth for r in rows], dtype=np.int64),
            vectors=vectors,
            pinned=np.array([r.pinned for r in rows], dtype=np.bool_),
            heuristic=np.array([r.heuristic for r in rows], dtype=np.bool_),
            postings={t: np.array(ix, dtype=np.int64) for t, ix in index.items()},
            keys=Keys.build(ids, keys, dims) if keys else None,
        )


def lineage_mask(bank: Bank, lineage: Sequence[tuple[int, int | None]]) -> BoolArray:
    """Rows attached to a node on the path: (branch, depth <= max_depth or any depth)."""
    mask = np.zeros(bank.size, dtype=np.bool_)
    for branch_id, max_depth in lineage:  # a handful of entries, never the rows
        on_branch = bank.branch_ids == branch_id
        if max_depth is not None:
            on_branch &= bank.depths <= max_depth
        mask |= on_branch
    return mask


@dataclass(frozen=True)
class Scored:
    row: int
    id: int
    semantic: float  # of the key that won (the memory's own text unless ``key`` is set)
    lexical: float
    final: float
    pinned: bool
    heuristic: bool
    key: int | None = None  # the evidence key that won, if a passage outscored the text
    key_depth: int | None = None
    own_final: float | None = None  # the memory's own text's score, when a passage won


@dataclass
class Ranking:
    chosen: list[Scored]  # final score descending, ties by id ascending
    considered: int  # candidates under the mask
    suppressed: list[tuple[int, int]]  # (id, duplicate_of id), in the order they were met
    input_terms: list[str]  # distinct input terms, in input order
    term_weights: dict[str, float]  # term -> ln((N+1)/(df+1)) over the candidates


def _unit(vector: npt.NDArray[np.floating] | None, dims: int) -> FloatArray | None:
    if vector is None:
        return None
    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    if v.shape[0] != dims:
        raise ValueError(f"a query vector has {v.shape[0]} dimensions, the bank has {dims}")
    norm = float(np.linalg.norm(v))
    return None if norm == 0.0 else v / np.float32(norm)


def _semantic(
    matrix: FloatArray,
    cand: IntArray,
    input_vec: FloatArray | None,
    context_vec: FloatArray | None,
    weights: Weights,
) -> npt.NDArray[np.float64]:
    if cand.size == 0 or (input_vec is None and context_vec is None):
        return np.zeros(cand.size, dtype=np.float64)
    total = int(matrix.shape[0])
    # Most rows are candidates: multiplying them all beats copying them out first.
    rows = matrix if cand.size * 2 >= total else matrix[cand]

    def cosines(query: FloatArray) -> npt.NDArray[np.float64]:
        # One matrix-vector product each: a (N, 2) product goes through a slower GEMM path.
        cos = (rows @ query).astype(np.float64)
        return cos[cand] if rows is matrix else cos

    if input_vec is None or context_vec is None:
        only = input_vec if input_vec is not None else context_vec
        assert only is not None
        return cosines(only)
    return weights.input * cosines(input_vec) + weights.context * cosines(context_vec)


def _lexical(
    postings: dict[str, IntArray], mask: BoolArray, cand: IntArray, unique_terms: list[str]
) -> tuple[npt.NDArray[np.float64], dict[str, float]]:
    n = cand.size
    held = np.zeros(mask.shape[0], dtype=np.float64)  # per row: weight of the input terms held
    weights: dict[str, float] = {}
    for term in unique_terms:
        rows = postings.get(term)
        rows = rows[mask[rows]] if rows is not None else np.zeros(0, dtype=np.int64)
        weight = math.log((n + 1) / (rows.size + 1))
        weights[term] = weight
        held[rows] += weight  # a posting lists each row once, so plain fancy-add is exact
    total = sum(weights.values())
    if total <= 0.0 or n == 0:
        return np.zeros(n, dtype=np.float64), weights
    return np.minimum(held[cand] / total, 1.0), weights


@dataclass
class _KeyScores:
    """The candidate keys' scores, over all key rows (-inf where not a candidate)."""

    semantic: npt.NDArray[np.float64]
    lexical: npt.NDArray[np.float64]
    final: npt.NDArray[np.float64]
    best: npt.NDArray[np.float64]  # per bank row: its best key's final (-inf: none)


def _key_scores(
    keys: Keys,
    mask: BoolArray,
    input_vec: FloatArray | None,
    context_vec: FloatArray | None,
    unique_terms: list[str],
    weights: Weights,
) -> _KeyScores:
    key_mask = mask[keys.owner]
    kc = np.flatnonzero(key_mask).astype(np.int64)
    semantic = np.full(keys.size, -np.inf)
    lexical = np.zeros(keys.size)
    final = np.full(keys.size, -np.inf)
    best = np.full(mask.shape[0], -np.inf)
    if kc.size and weights.source > 0:
        share = weights._replace(input=1.0 - weights.key_context, context=weights.key_context)
        if input_vec is not None and weights.key_context == 0:
            context_vec = None
        semantic[kc] = _semantic(keys.vectors, kc, input_vec, context_vec, share)
        lexical[kc], _ = _lexical(keys.postings, key_mask, kc, unique_terms)
        final[kc] = semantic[kc] + weights.lexical * lexical[kc]
        np.maximum.at(best, keys.owner[kc], final[kc])
    return _KeyScores(semantic, lexical, final, best)


def _best_first(
    final: npt.NDArray[np.float64], ids: IntArray, among: IntArray, count: int
) -> IntArray:
    """Positions in ``among`` of its ``count`` best by (final desc, id asc), in that order.

    Ties at the cut are all kept and sorted, so the order is exact, not argpartition's choice.
    """
    if count < among.size:
        scores = final[among]
        kth = np.partition(scores, among.size - count)[among.size - count]
        among = among[scores >= kth]
    order = np.lexsort((ids[among], -final[among]))
    return among[order][:count]


def rank(
    bank: Bank,
    mask: BoolArray,
    input_vec: npt.NDArray[np.floating] | None,
    context_vec: npt.NDArray[np.floating] | None,
    input_terms: Sequence[str],
    top_k: int,
    weights: Weights = WEIGHTS,
) -> Ranking:
    """Score the candidates under ``mask`` and choose up to ``top_k`` (see module docstring)."""
    if mask.shape != (bank.size,):
        raise ValueError(f"the mask has shape {mask.shape}, the bank has {bank.size} rows")
    top_k = max(top_k, 0)
    cand = np.flatnonzero(mask).astype(np.int64)
    unique_terms = list(dict.fromkeys(input_terms))
    input_unit, context_unit = _unit(input_vec, bank.dims), _unit(context_vec, bank.dims)
    semantic = _semantic(bank.vectors, cand, input_unit, context_unit, weights)
    lexical, term_weights = _lexical(bank.postings, mask, cand, unique_terms)
    final = semantic + weights.lexical * lexical
    keyed = None
    if bank.keys is not None and bank.keys.size:
        keyed = _key_scores(bank.keys, mask, input_unit, context_unit, unique_terms, weights)
        # The text's score, raised by a share of what the best passage scores above it.
        final = final + weights.source * np.maximum(keyed.best[cand] - final, 0.0)
    cand_ids = bank.ids[cand]

    def scored(pos: int) -> Scored:
        row = int(cand[pos])
        own = float(semantic[pos] + weights.lexical * lexical[pos])
        parts: tuple[float, float, int | None, int | None, float | None]
        parts = (float(semantic[pos]), float(lexical[pos]), None, None, None)
        if keyed is not None and bank.keys is not None and keyed.best[row] > own:
            keys = bank.keys
            start, end = int(keys.starts[row]), int(keys.starts[row + 1])
            k = start + int(np.argmax(keyed.final[start:end]))
            parts = (
                float(keyed.semantic[k]),
                float(keyed.lexical[k]),
                int(keys.ids[k]),
                int(keys.depths[k]),
                own,
            )
        return Scored(
            row=row,
            id=int(cand_ids[pos]),
            semantic=parts[0],
            lexical=parts[1],
            final=float(final[pos]),
            pinned=bool(bank.pinned[row]),
            heuristic=bool(bank.heuristic[row]),
            key=parts[2],
            key_depth=parts[3],
            own_final=parts[4],
        )

    pinned_pos = np.flatnonzero(bank.pinned[cand])
    chosen = [scored(int(p)) for p in pinned_pos]
    suppressed = _choose_rest(bank, cand, final, cand_ids, chosen, top_k, scored)
    chosen.sort(key=lambda s: (-s.final, s.id))
    return Ranking(
        chosen=chosen,
        considered=int(cand.size),
        suppressed=suppressed,
        input_terms=unique_terms,
        term_weights=term_weights,
    )


def _choose_rest(
    bank: Bank,
    cand: IntArray,
    final: npt.NDArray[np.float64],
    cand_ids: IntArray,
    chosen: list[Scored],
    top_k: int,
    make: Callable[[int], Scored],
) -> list[tuple[int, int]]:
    """Append the best non-pinned candidates to ``chosen`` until it holds ``top_k``."""
    suppressed: list[tuple[int, int]] = []
    rest = np.flatnonzero(~bank.pinned[cand]).astype(np.int64)
    need = top_k - len(chosen)
    if need <= 0 or rest.size == 0:
        return suppressed
    window = need + _FIRST_WINDOW_SLACK
    done = 0  # the order is total, so a wider window's order extends the narrower one's
    while len(chosen) < top_k and done < rest.size:
        order = _best_first(final, cand_ids, rest, min(window, rest.size))
        for pos in order[done:]:
            done += 1
            row = int(cand[pos])
            duplicate_of = _duplicate_of(bank, row, chosen)
            if duplicate_of is not None:
                suppressed.append((int(cand_ids[pos]), duplicate_of))
                continue
            chosen.append(make(int(pos)))
            if len(chosen) >= top_k:
                break
        window *= _WINDOW_GROWTH
    return suppressed


def _duplicate_of(bank: Bank, row: int, chosen: list[Scored]) -> int | None:
    """The id of the chosen memory of the same authority this row repeats, if any."""
    same = [s for s in chosen if s.heuristic == bool(bank.heuristic[row])]
    if not same:
        return None
    cos = bank.vectors[[s.row for s in same]] @ bank.vectors[row]
    best = int(np.argmax(cos))  # the closest one; the first chosen on a tie
    return same[best].id if float(cos[best]) >= DUPLICATE_COSINE else None
