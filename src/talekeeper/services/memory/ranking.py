"""Hybrid ranking and selection over one adventure's bank (docs/memory.md §5).

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
  over the candidate keys (their own N and df). A memory's **final** score is the score
  of the key that won: its own text's, or its best passage's when that is higher
  (``Scored.key`` names the passage; on a tie the text wins).
- Order (**fused**, reciprocal-rank fusion): the candidates are ranked twice, by their
  own text's score and by their final score (ranks from 1, ties by lower id), and
  fused = 1/(``FUSION_K`` + text rank) + ``SOURCE_WEIGHT``/(``FUSION_K`` + final rank),
  each term 0 for a place past ``RANK_WINDOW``. A memory first in either ranking comes
  before one that is middling in both. With no keys (or a source weight of 0) the order
  is the text's alone. ``Scored.key_rank`` is None past the window (not told apart there).
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
- The **hop** (``HOP``): a question may describe someone the story names ("the blacksmith
  at Zabreen"). The best-scoring key of all (the *bridge*) is read for names
  (``evidence.names``) the input does not hold; when it has some, the keys are scored
  again with the input terms the bridge does not hold plus those names (the semantic
  part unchanged), and the best of them whose memory is not already chosen takes the
  last non-pinned slot (``Scored.via``: the bridge's memory, ``Scored.names``: the names
  followed). Its final score is that key's.

Selection invariants:

- only candidates under the mask are scored, counted or chosen;
- every pinned candidate is chosen (they count toward ``top_k`` but are never
  cut by it); then the rest best-first by fused score, ties by higher final score, then
  lower id (the hop's memory, when there is one, last);
- a non-pinned memory whose cosine with an already chosen memory **of the same
  authority** is >= ``DUPLICATE_COSINE`` is suppressed and recorded as
  (id, duplicate_of) -- the chosen one it is closest to; a heuristic memory
  never suppresses an accepted one, nor the reverse;
- the result is ordered by fused score descending, ties by final score descending, then
  id ascending, and holds at most max(top_k, pinned candidates) memories, each once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from talekeeper.services.memory.keyset import (
    QUANTIZE_AT,
    BoolArray,
    FloatArray,
    IntArray,
    KeyInput,
    Keys,
)
from talekeeper.services.memory.postings import Postings

INPUT_WEIGHT = 0.6  # the player's own words say best what this turn is about
CONTEXT_WEIGHT = 0.4  # the scene resolves "her" and "it" but must not drown the question
# Rare exact words (names, the item asked about) lift a memory as much as meaning does. The
# reference's 0.15 let scenery that resembles the newest narration outvote the memory that
# shares the question's rare words; over the recall benchmark's three sets 0.75 took recall@5
# from 0.83 to 0.93 and MRR from 0.65 to 0.79, and did no worse on any one of them (docs/memory.md
# §5; the figures, before and after, in docs/benchmarks.md, "The score's weights").
LEXICAL_WEIGHT = 0.75


# The passage ranking's weight in the fused order (0: keys unused), against the text ranking's
# 1. Chosen on the tuning sets (the dense set's seed 14, the planted-fact set's seed 2024):
# a memory scored outright by its best passage let scenery sentences about the subject asked
# about outrank, on the planted-fact set, the memories that state the fact (0.92 -> 0.81);
# scored by a blend (a quarter of the passage's lead) it kept the planted set at 0.92 but the
# dense set read 0.69. Fusing the two rankings reads 0.81 and 0.94 (0.83 with the hop): a
# memory whose text is first, or whose passage is first, is in. docs/benchmarks.md,
# "Evidence keys".
SOURCE_WEIGHT = 1.0
# Reciprocal-rank fusion's constant: small, so that first places count (0 to 3 read the same
# on both tuning sets; 20 and 60, the web-search habit, let middling memories in: 0.72, 0.58).
FUSION_K = 1.0
# A passage is evidence for the question, not for the scene: scored against the player's
# input alone (the context's share 0) whenever there is one. With the scene's share of 0.4,
# passages of scenery that resemble the newest narration outranked the memories that state
# the fact asked about (planted-fact set: 0.90 against 0.92).
KEY_CONTEXT_WEIGHT = 0.0
# Reciprocal-rank fusion's depth: a memory's place past the first RANK_WINDOW of a ranking
# counts for nothing (the usual practice of the method). It changes nothing on the
# benchmarks' banks (docs/benchmarks.md, "Evidence keys") and lets a large bank's passages be
# read at int8 precision, only the few that can reach the window rescored exactly.
RANK_WINDOW = 50
# Follow the names of the best passage (the module docstring's hop). Tune seed: questions
# that join two statements went from 0.67 to 0.83 found, nothing else moved.
HOP = True


class Weights(NamedTuple):
    """The score's weights (the recall benchmarks rank with other ones to compare)."""

    input: float = INPUT_WEIGHT
    context: float = CONTEXT_WEIGHT
    lexical: float = LEXICAL_WEIGHT
    source: float = SOURCE_WEIGHT  # the passage ranking's weight in the fusion (0: keys unused)
    key_context: float = KEY_CONTEXT_WEIGHT  # the context's share in a passage's semantic part
    fusion_k: float = FUSION_K
    hop: bool = HOP
    window: int = RANK_WINDOW


WEIGHTS = Weights()
# Passages a chosen memory offers the Memories section. On real writing the sentence that
# answers is rarely the memory's best key alone: carrying each chosen memory's best few, the
# best of all first, within the section's budget took the answer into the prompt from 0.26 to
# 0.50 of held-out questions (0.33 -> 0.47 tune; dense tune seed 0.89 -> 0.92, planted-fact
# set unchanged; docs/benchmarks.md, "Recall on real writing"). Beyond about three a memory
# the budget is spent anyway.
PASSAGE_CHOICES = 6
DUPLICATE_COSINE = 0.93  # above this two memories say the same thing; one slot is enough


class Stage(StrEnum):
    """What ranked a chosen memory (``Scored.stage``), as Insights names it."""

    TEXT = "text"  # its own text's place in the order
    PASSAGE = "passage"  # its best passage's place
    HOP = "hop"  # a name another memory's passage gave


class BankRow(NamedTuple):
    """One retrievable memory as the bank needs it (no text: the hot path never reads it).
    A named tuple: a cold bank builds hundreds of them per read."""

    id: int
    branch_id: int
    depth: int  # the node the memory is attached to
    vector: npt.NDArray[np.floating]  # any float dtype; normalised by ``Bank.build``
    pinned: bool
    heuristic: bool  # authority == Authority.HEURISTIC (``storage.vocabulary``)
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
    postings: Postings = field(default_factory=Postings.empty)  # term -> ascending rows
    keys: Keys | None = None  # evidence keys; None: ranked by the memories' own text alone

    @property
    def size(self) -> int:
        return int(self.ids.shape[0])

    @property
    def dims(self) -> int:
        return int(self.vectors.shape[1])

    @classmethod
    def build(
        cls,
        rows: Sequence[BankRow],
        dims: int,
        keys: Sequence[KeyInput] = (),
        quantize_at: int = QUANTIZE_AT,
    ) -> Bank:
        """A bank of ``rows`` in the order given, with the ``keys`` of those rows (held as
        int8 codes too from ``quantize_at`` keys on: ``keyset``).

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
            postings=Postings.of_terms(r.terms for r in rows),
            keys=Keys.build(ids, keys, dims, quantize_at) if keys else None,
        )

    def patched(self, drop: IntArray, added: Bank, quantize_at: int = QUANTIZE_AT) -> Bank:
        """This bank without the memories ``drop`` names, then ``added``'s rows: the bank
        that building over the kept rows and then ``added``'s, in that order, would give
        (what a cache does when a few memories change, instead of building all again).

        Raises ValueError when ``added`` has rows of another vector size."""
        if added.size and self.size and added.dims != self.dims:
            raise ValueError(f"the bank has {self.dims} dimensions, the rows added {added.dims}")
        keep = ~np.isin(self.ids, drop)
        if not keep.any():
            return added
        if not added.size:
            added = Bank.build([], self.dims)
        dims = self.dims
        rows = int(np.count_nonzero(keep)) + added.size
        keys: Keys | None = None
        if self.keys is not None or added.keys is not None:
            mine = self.keys if self.keys is not None else Keys.empty(self.size, dims)
            theirs = added.keys if added.keys is not None else Keys.empty(added.size, dims)
            keys = mine.patched(keep, theirs, rows, quantize_at)
            if not keys.size:
                keys = None
        return Bank(
            ids=np.concatenate((self.ids[keep], added.ids)),
            branch_ids=np.concatenate((self.branch_ids[keep], added.branch_ids)),
            depths=np.concatenate((self.depths[keep], added.depths)),
            vectors=np.concatenate((self.vectors[keep], added.vectors)),
            pinned=np.concatenate((self.pinned[keep], added.pinned)),
            heuristic=np.concatenate((self.heuristic[keep], added.heuristic)),
            postings=self.postings.patched(keep, added.postings),
            keys=keys,
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
    fused: float = 0.0  # the order's score (module docstring)
    text_rank: int = 0  # its place among the candidates by its own text (from 1)
    key_rank: int | None = None  # ... by its final score (None: keys unused, or past the window)
    via: int | None = None  # the hop: the memory whose passage named what led here
    names: tuple[str, ...] = ()  # the hop: the names followed
    # Its passages for the question (module docstring): (key id, final score, depth).
    passages: tuple[tuple[int, float, int], ...] = ()

    @property
    def stage(self) -> Stage:
        """Which ranking put it here: the hop, its best passage's place, or its text's."""
        if self.via is not None:
            return Stage.HOP
        if self.key_rank is not None and (
            self.key_rank < self.text_rank
            or (self.key_rank == self.text_rank and self.key is not None)
        ):
            return Stage.PASSAGE
        return Stage.TEXT


@dataclass
class Ranking:
    chosen: list[Scored]  # final score descending, ties by id ascending
    considered: int  # candidates under the mask
    suppressed: list[tuple[int, int]]  # (id, duplicate_of id), in the order they were met
    input_terms: list[str]  # distinct input terms, in input order
    term_weights: dict[str, float]  # term -> ln((N+1)/(df+1)) over the candidates
    # Passages read again in float32 after their int8 reading (0 without codes): the int8
    # path's cost beside its one product (docs/benchmarks.md, "Int8 kernels by CPU").
    rescored: int = 0


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
    if input_vec is None or context_vec is None:
        query = input_vec if input_vec is not None else context_vec
        assert query is not None
    else:  # a weighted sum of cosines is the cosine with the weighted sum: one product
        query = (weights.input * input_vec + weights.context * context_vec).astype(np.float32)
    # Most rows are candidates: multiplying them all beats copying them out first.
    if cand.size * 2 >= int(matrix.shape[0]):
        return (matrix @ query).astype(np.float64)[cand]
    return (matrix[cand] @ query).astype(np.float64)


def _lexical(
    postings: Postings, mask: BoolArray, cand: IntArray, unique_terms: list[str]
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


def _with_passages(chosen: list[Scored], keyed: _KeyScores | None, keys: Keys | None) -> None:
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


def _key_scores(
    keys: Keys,
    mask: BoolArray,
    own: npt.NDArray[np.float64],
    input_vec: FloatArray | None,
    context_vec: FloatArray | None,
    unique_terms: list[str],
    weights: Weights,
) -> _KeyScores:
    """``own``: per bank row, the memory's text score (-inf where not a candidate)."""
    cand = mask[keys.owner]
    query = _key_query(input_vec, context_vec, weights)
    lexical = np.zeros(keys.size)
    kc = np.flatnonzero(cand).astype(np.int64)
    if kc.size:
        lexical[kc], _ = _lexical(keys.postings, cand, kc, unique_terms)
    read = keys.codes.estimate(query) if keys.codes is not None and query is not None else None
    if read is None:  # every key exact: one float32 product
        semantic = (
            (keys.vectors @ query).astype(np.float64) if query is not None else np.zeros(keys.size)
        )
        bound = np.zeros(keys.size)
    else:
        semantic, bound = read
    scores = _KeyScores(
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


def _ranks(score: npt.NDArray[np.float64], ids: IntArray) -> npt.NDArray[np.float64]:
    """Each candidate's place by ``score`` descending, ties by lower id (from 1)."""
    order = np.lexsort((ids, -score))
    ranks = np.empty(score.size, dtype=np.float64)
    ranks[order] = np.arange(1, score.size + 1, dtype=np.float64)
    return ranks


def _vote(ranks: npt.NDArray[np.float64], weight: float, weights: Weights) -> np.ndarray:
    """A ranking's share of the fused score: weight / (k + place), 0 past the window."""
    return np.where(ranks <= weights.window, weight / (weights.fusion_k + ranks), 0.0)


@dataclass
class _Scores:
    """Every candidate's scores (positions into ``cand``)."""

    cand: IntArray
    ids: IntArray
    semantic: npt.NDArray[np.float64]  # of the memory's own text
    lexical: npt.NDArray[np.float64]
    own: npt.NDArray[np.float64]  # the text's score
    final: npt.NDArray[np.float64]  # the winning key's score (settled in the window only)
    fused: npt.NDArray[np.float64]
    text_rank: npt.NDArray[np.float64]
    key_rank: npt.NDArray[np.float64] | None  # inf past the window
    keyed: _KeyScores | None


def _score(
    bank: Bank,
    mask: BoolArray,
    input_unit: FloatArray | None,
    context_unit: FloatArray | None,
    unique_terms: list[str],
    weights: Weights,
) -> _Scores:
    cand = np.flatnonzero(mask).astype(np.int64)
    ids = bank.ids[cand]
    semantic = _semantic(bank.vectors, cand, input_unit, context_unit, weights)
    lexical, _ = _lexical(bank.postings, mask, cand, unique_terms)
    own = semantic + weights.lexical * lexical
    text_rank = _ranks(own, ids)
    if bank.keys is None or not bank.keys.size or weights.source <= 0:
        fused = _vote(text_rank, 1.0, weights)
        return _Scores(cand, ids, semantic, lexical, own, own, fused, text_rank, None, None)
    own_rows = np.full(bank.size, -np.inf)
    own_rows[cand] = own
    keyed = _key_scores(bank.keys, mask, own_rows, input_unit, context_unit, unique_terms, weights)
    final = keyed.low[cand]
    key_rank = _ranks(final, ids)
    key_rank[key_rank > weights.window] = np.inf  # past the window ``final`` is a bound only
    fused = _vote(text_rank, 1.0, weights) + _vote(key_rank, weights.source, weights)
    return _Scores(cand, ids, semantic, lexical, own, final, fused, text_rank, key_rank, keyed)


def _place(rank: float) -> int | None:
    return int(rank) if math.isfinite(rank) else None


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
    unique_terms = list(dict.fromkeys(input_terms))
    input_unit, context_unit = _unit(input_vec, bank.dims), _unit(context_vec, bank.dims)
    sc = _score(bank, mask, input_unit, context_unit, unique_terms, weights)
    _, term_weights = _lexical(bank.postings, mask, sc.cand, unique_terms)
    keys = bank.keys

    settled: dict[int, tuple[int, float]] = {}

    def scored(pos: int) -> Scored:
        row = int(sc.cand[pos])
        own = float(sc.own[pos])
        out = Scored(
            row=row,
            id=int(sc.ids[pos]),
            semantic=float(sc.semantic[pos]),
            lexical=float(sc.lexical[pos]),
            final=own,
            pinned=bool(bank.pinned[row]),
            heuristic=bool(bank.heuristic[row]),
            fused=float(sc.fused[pos]),
            text_rank=int(sc.text_rank[pos]),
            key_rank=_place(sc.key_rank[pos]) if sc.key_rank is not None else None,
        )
        keyed = sc.keyed
        if keyed is None or keys is None:
            return out
        if row not in settled:
            settled.update(keyed.best_keys(keys, np.array([row], dtype=np.int64)))
        best = settled.get(row)
        if best is not None and best[1] > own:
            k = best[0]
            out = _with_key(out, keys, k, keyed.semantic[k], keyed.lexical[k], own, final=best[1])
        return out

    pinned_pos = np.flatnonzero(bank.pinned[sc.cand])
    if sc.keyed is not None and keys is not None:
        settled.update(sc.keyed.best_keys(keys, sc.cand[pinned_pos]))
    chosen = [scored(int(p)) for p in pinned_pos]
    order = np.lexsort((sc.ids, -sc.final, -sc.fused))
    rest = order[~bank.pinned[sc.cand[order]]]
    hop = _Hop.plan(sc, keys, unique_terms, weights) if top_k - len(chosen) >= 2 else None
    suppressed = _choose_rest(bank, sc, rest, chosen, top_k - (hop is not None), scored)
    if hop is not None:
        found = hop.choose(bank, sc, chosen, suppressed, scored)
        if found is not None:
            chosen.append(found)
        else:  # nothing to follow: the slot goes to the next in order
            suppressed += _choose_rest(bank, sc, rest, chosen, top_k, scored, skip=suppressed)
    chosen.sort(key=lambda s: (-s.fused, -s.final, s.id))
    _with_passages(chosen, sc.keyed, keys)
    return Ranking(
        chosen=chosen,
        considered=int(sc.cand.size),
        suppressed=suppressed,
        input_terms=unique_terms,
        term_weights=term_weights,
        rescored=sc.keyed.rescored if sc.keyed is not None else 0,
    )


def _with_key(
    out: Scored, keys: Keys, k: int, semantic: float, lexical: float, own: float, **extra: Any
) -> Scored:
    return replace(
        out,
        semantic=float(semantic),
        lexical=float(lexical),
        key=int(keys.ids[k]),
        key_depth=int(keys.depths[k]),
        own_final=own,
        **extra,
    )


@dataclass
class _Hop:
    """The hop of the module docstring: the bridge key, its names, the keys' new scores."""

    bridge: int  # key row
    names: tuple[str, ...]
    lexical: npt.NDArray[np.float64]  # per key row, for the hop's terms
    weight: float  # the lexical weight

    @classmethod
    def plan(
        cls, sc: _Scores, keys: Keys | None, unique_terms: list[str], weights: Weights
    ) -> _Hop | None:
        if not weights.hop or keys is None or sc.keyed is None or not sc.keyed.cand.any():
            return None
        bridge = int(np.argmax(sc.keyed.final))  # exact: ``_KeyScores`` keeps the best of all
        asked = set(unique_terms)
        names = tuple(n for n in keys.names_of(bridge) if n not in asked)
        if not names:
            return None
        terms_ = [t for t in unique_terms if not keys.holds(bridge, t)] + list(names)
        kc = np.flatnonzero(sc.keyed.cand).astype(np.int64)
        lexical = np.zeros(keys.size)
        lexical[kc], _ = _lexical(keys.postings, sc.keyed.cand, kc, terms_)
        return cls(bridge, names, lexical, weights.lexical)

    def choose(
        self,
        bank: Bank,
        sc: _Scores,
        chosen: list[Scored],
        suppressed: list[tuple[int, int]],
        make: Callable[[int], Scored],
    ) -> Scored | None:
        """The best hop key's memory not chosen, suppressed or repeating a chosen one."""
        keys, keyed = bank.keys, sc.keyed
        assert keys is not None and keyed is not None
        taken = {s.id for s in chosen} | {int(i) for i, _ in suppressed}
        via = int(bank.ids[keys.owner[self.bridge]])
        for k in self._best_keys(keyed):
            row = int(keys.owner[k])
            if int(bank.ids[row]) in taken or _duplicate_of(bank, row, chosen) is not None:
                continue
            pos = int(np.searchsorted(sc.cand, row))  # ``cand`` is ascending
            own = float(sc.own[pos])
            final = keyed.semantic[k] + self.weight * self.lexical[k]
            return _with_key(
                replace(make(pos), final=float(final)),
                keys,
                int(k),
                keyed.semantic[k],
                self.lexical[k],
                own,
                via=via,
                names=self.names,
            )
        return None

    def _best_keys(self, keyed: _KeyScores) -> Iterator[int]:
        """Candidate keys but the bridge, best hop score first (ties by lower row), sorted
        only as far as the caller reads (the keys are tens of thousands, the caller wants
        one). Each window rescores exactly every key whose bound reaches its threshold, so
        the keys it gives are in the exact order."""
        rows = np.flatnonzero(keyed.cand)
        rows = rows[rows != self.bridge].astype(np.int64)
        estimate = keyed.semantic[rows] + self.weight * self.lexical[rows]
        lower, upper = estimate - keyed.bound[rows], estimate + keyed.bound[rows]
        window, given = _HOP_WINDOW, 0
        while given < rows.size:
            count = min(window, rows.size)
            threshold = (
                np.partition(lower, rows.size - count)[rows.size - count]
                if count < rows.size
                else -np.inf
            )
            among = rows[upper >= threshold]
            keyed.exact(among)
            final = keyed.semantic[among] + self.weight * self.lexical[among]
            order = np.lexsort((among, -final))
            certain = among[order][final[order] >= threshold]
            for k in certain[given:]:
                yield int(k)
            given = max(given, certain.size)
            if count == rows.size:
                return
            window *= 4


_HOP_WINDOW = 16  # hop keys sorted at first: a few are passed over (their memory is in)


def _choose_rest(
    bank: Bank,
    sc: _Scores,
    rest: IntArray,
    chosen: list[Scored],
    top_k: int,
    make: Callable[[int], Scored],
    skip: Sequence[tuple[int, int]] = (),
) -> list[tuple[int, int]]:
    """Append the candidates of ``rest`` (positions into ``sc.cand``, best first) to
    ``chosen`` until it holds ``top_k``, suppressing repeats; ``skip``: ids suppressed
    already (passed over again without a second record)."""
    suppressed: list[tuple[int, int]] = []
    passed = {s.id for s in chosen} | {i for i, _ in skip}
    for pos in rest:
        if len(chosen) >= top_k:
            break
        memory_id = int(sc.ids[pos])
        if memory_id in passed:
            continue
        duplicate_of = _duplicate_of(bank, int(sc.cand[pos]), chosen)
        if duplicate_of is not None:
            suppressed.append((memory_id, duplicate_of))
            passed.add(memory_id)
            continue
        chosen.append(make(int(pos)))
        passed.add(memory_id)
    return suppressed


def _duplicate_of(bank: Bank, row: int, chosen: list[Scored]) -> int | None:
    """The id of the chosen memory of the same authority this row repeats, if any."""
    same = [s for s in chosen if s.heuristic == bool(bank.heuristic[row])]
    if not same:
        return None
    cos = bank.vectors[[s.row for s in same]] @ bank.vectors[row]
    best = int(np.argmax(cos))  # the closest one; the first chosen on a tie
    return same[best].id if float(cos[best]) >= DUPLICATE_COSINE else None
