"""Hybrid ranking and selection over one adventure's bank (docs/memory.md §5).

The parts, each with its invariants: the bank's arrays (``arrays``); the score of a
memory's text and the weights (``scoring``); the evidence keys' scores, the int8 reading
of large banks and the passages for the question (``keyscores``); the fused order
(``fusion``); duplicate suppression and the hop (``selection``). ``rank`` puts them
together.

Selection invariants:

- only candidates under the mask are scored, counted or chosen;
- every pinned candidate is chosen (they count toward ``top_k`` but are never
  cut by it); then the rest best-first by fused score, ties by higher final score, then
  lower id (the hop's memory, when there is one, last);
- duplicates are suppressed as ``selection`` says;
- the result is ordered by fused score descending, ties by final score descending, then
  id ascending, and holds at most max(top_k, pinned candidates) memories, each once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from talekeeper.services.memory import scoring
from talekeeper.services.memory.arrays import Bank
from talekeeper.services.memory.fusion import Scores, score
from talekeeper.services.memory.keyscores import with_passages
from talekeeper.services.memory.keyset import BoolArray, IntArray
from talekeeper.services.memory.scoring import WEIGHTS, Ranking, Scored, Weights, with_key
from talekeeper.services.memory.selection import Hop, choose_rest


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
    input_unit = scoring.unit(input_vec, bank.dims)
    context_unit = scoring.unit(context_vec, bank.dims)
    sc = score(bank, mask, input_unit, context_unit, unique_terms, weights)
    _, term_weights = scoring.lexical(bank.postings, mask, sc.cand, unique_terms)
    keys = bank.keys
    pinned_pos = np.flatnonzero(bank.pinned[sc.cand])
    scored = _scorer(bank, sc, pinned_pos)
    chosen = [scored(int(p)) for p in pinned_pos]
    order = np.lexsort((sc.ids, -sc.final, -sc.fused))
    rest = order[~bank.pinned[sc.cand[order]]]
    hop = Hop.plan(sc, keys, unique_terms, weights) if top_k - len(chosen) >= 2 else None
    suppressed = choose_rest(bank, sc, rest, chosen, top_k - (hop is not None), scored)
    if hop is not None:
        found = hop.choose(bank, sc, chosen, suppressed, scored)
        if found is not None:
            chosen.append(found)
        else:  # nothing to follow: the slot goes to the next in order
            suppressed += choose_rest(bank, sc, rest, chosen, top_k, scored, skip=suppressed)
    chosen.sort(key=lambda s: (-s.fused, -s.final, s.id))
    with_passages(chosen, sc.keyed, keys)
    return Ranking(
        chosen=chosen,
        considered=int(sc.cand.size),
        suppressed=suppressed,
        input_terms=unique_terms,
        term_weights=term_weights,
        rescored=sc.keyed.rescored if sc.keyed is not None else 0,
    )


def _scorer(bank: Bank, sc: Scores, pinned_pos: IntArray) -> Callable[[int], Scored]:
    """What a candidate (a position into ``sc.cand``) is chosen as: its text's scores, or
    its best key's where that scores higher. Each memory's best key is settled once, the
    pinned ones' (``pinned_pos``) here, in one batch: every pinned memory is chosen."""
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
            out = with_key(out, keys, k, keyed.semantic[k], keyed.lexical[k], own, final=best[1])
        return out

    if sc.keyed is not None and keys is not None:
        settled.update(sc.keyed.best_keys(keys, sc.cand[pinned_pos]))
    return scored
