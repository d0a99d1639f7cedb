"""Every candidate's scores and the fused order (docs/memory.md §5).

- Order (**fused**, reciprocal-rank fusion): the candidates are ranked twice, by their
  own text's score and by their final score (ranks from 1, ties by lower id), and
  fused = 1/(``FUSION_K`` + text rank) + ``SOURCE_WEIGHT``/(``FUSION_K`` + final rank),
  each term 0 for a place past ``RANK_WINDOW``. A memory first in either ranking comes
  before one that is middling in both. With no keys (or a source weight of 0) the order
  is the text's alone. ``Scored.key_rank`` is None past the window (not told apart there).

The text's score is ``scoring``'s, the final score (a memory's best key) ``keyscores``';
the hop and duplicate suppression are ``selection``'s, the selection's invariants
``ranking``'s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from talekeeper.services.memory import scoring
from talekeeper.services.memory.arrays import Bank
from talekeeper.services.memory.keyscores import KeyScores, key_scores
from talekeeper.services.memory.keyset import BoolArray, FloatArray, IntArray
from talekeeper.services.memory.scoring import Weights


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
class Scores:
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
    keyed: KeyScores | None


def score(
    bank: Bank,
    mask: BoolArray,
    input_unit: FloatArray | None,
    context_unit: FloatArray | None,
    unique_terms: list[str],
    weights: Weights,
) -> Scores:
    """The candidates' scores under ``mask`` and their fused order."""
    cand = np.flatnonzero(mask).astype(np.int64)
    ids = bank.ids[cand]
    semantic = scoring.semantic(bank.vectors, cand, input_unit, context_unit, weights)
    lexical, _ = scoring.lexical(bank.postings, mask, cand, unique_terms)
    own = semantic + weights.lexical * lexical
    text_rank = _ranks(own, ids)
    if bank.keys is None or not bank.keys.size or weights.source <= 0:
        fused = _vote(text_rank, 1.0, weights)
        return Scores(cand, ids, semantic, lexical, own, own, fused, text_rank, None, None)
    own_rows = np.full(bank.size, -np.inf)
    own_rows[cand] = own
    keyed = key_scores(bank.keys, mask, own_rows, input_unit, context_unit, unique_terms, weights)
    final = keyed.low[cand]
    key_rank = _ranks(final, ids)
    key_rank[key_rank > weights.window] = np.inf  # past the window ``final`` is a bound only
    fused = _vote(text_rank, 1.0, weights) + _vote(key_rank, weights.source, weights)
    return Scores(cand, ids, semantic, lexical, own, final, fused, text_rank, key_rank, keyed)
