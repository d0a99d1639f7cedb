"""The score of a memory's text, the score's weights, and what ranking returns
(docs/memory.md §5).

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

The rest of the ranking: the evidence keys' scores, the int8 reading of large banks and
the passages for the question in ``keyscores``; the fused order in ``fusion``; the hop
and duplicate suppression in ``selection``; the selection's invariants in ``ranking``;
the bank's arrays in ``arrays``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from talekeeper.services.memory.keyset import BoolArray, FloatArray, IntArray, Keys
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
# Follow the names of the best passage (``selection``'s hop). Tune seed: questions
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
    fused: float = 0.0  # the order's score (``fusion``)
    text_rank: int = 0  # its place among the candidates by its own text (from 1)
    key_rank: int | None = None  # ... by its final score (None: keys unused, or past the window)
    via: int | None = None  # the hop: the memory whose passage named what led here
    names: tuple[str, ...] = ()  # the hop: the names followed
    # Its passages for the question (``keyscores``): (key id, final score, depth).
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


def unit(vector: npt.NDArray[np.floating] | None, dims: int) -> FloatArray | None:
    """``vector`` scaled to norm 1 (None for none, and for a vector of norm 0)."""
    if vector is None:
        return None
    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    if v.shape[0] != dims:
        raise ValueError(f"a query vector has {v.shape[0]} dimensions, the bank has {dims}")
    norm = float(np.linalg.norm(v))
    return None if norm == 0.0 else v / np.float32(norm)


def semantic(
    matrix: FloatArray,
    cand: IntArray,
    input_vec: FloatArray | None,
    context_vec: FloatArray | None,
    weights: Weights,
) -> npt.NDArray[np.float64]:
    """Each candidate's semantic score (the module docstring)."""
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


def lexical(
    postings: Postings, mask: BoolArray, cand: IntArray, unique_terms: list[str]
) -> tuple[npt.NDArray[np.float64], dict[str, float]]:
    """Each candidate's lexical share, and each input term's weight (the module docstring)."""
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


def with_key(
    out: Scored, keys: Keys, k: int, semantic: float, lexical: float, own: float, **extra: Any
) -> Scored:
    """``out`` scored by its key ``k`` (a key row) in place of its text (``own``: the
    text's score)."""
    return replace(
        out,
        semantic=float(semantic),
        lexical=float(lexical),
        key=int(keys.ids[k]),
        key_depth=int(keys.depths[k]),
        own_final=own,
        **extra,
    )
