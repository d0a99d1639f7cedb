"""Choosing the memories that are not pinned: best first with duplicates suppressed, and
the hop (docs/memory.md §5).

- a non-pinned memory whose cosine with an already chosen memory **of the same
  authority** is >= ``DUPLICATE_COSINE`` is suppressed and recorded as
  (id, duplicate_of) -- the chosen one it is closest to; a heuristic memory
  never suppresses an accepted one, nor the reverse;
- The **hop** (``HOP``): a question may describe someone the story names ("the blacksmith
  at Zabreen"). The best-scoring key of all (the *bridge*) is read for names
  (``evidence.names``) the input does not hold; when it has some, the keys are scored
  again with the input terms the bridge does not hold plus those names (the semantic
  part unchanged), and the best of them whose memory is not already chosen takes the
  last non-pinned slot (``Scored.via``: the bridge's memory, ``Scored.names``: the names
  followed). Its final score is that key's.

The rest of the selection's invariants (the pinned, the order, the count) are
``ranking``'s; the keys' scores and their int8 reading ``keyscores``'; the fused order
``fusion``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from talekeeper.services.memory import scoring
from talekeeper.services.memory.arrays import Bank
from talekeeper.services.memory.fusion import Scores
from talekeeper.services.memory.keyscores import KeyScores
from talekeeper.services.memory.keyset import IntArray, Keys
from talekeeper.services.memory.scoring import DUPLICATE_COSINE, Scored, Weights, with_key


@dataclass
class Hop:
    """The hop of the module docstring: the bridge key, its names, the keys' new scores."""

    bridge: int  # key row
    names: tuple[str, ...]
    lexical: npt.NDArray[np.float64]  # per key row, for the hop's terms
    weight: float  # the lexical weight

    @classmethod
    def plan(
        cls, sc: Scores, keys: Keys | None, unique_terms: list[str], weights: Weights
    ) -> Hop | None:
        if not weights.hop or keys is None or sc.keyed is None or not sc.keyed.cand.any():
            return None
        bridge = int(np.argmax(sc.keyed.final))  # exact: ``KeyScores`` keeps the best of all
        asked = set(unique_terms)
        names = tuple(n for n in keys.names_of(bridge) if n not in asked)
        if not names:
            return None
        terms_ = [t for t in unique_terms if not keys.holds(bridge, t)] + list(names)
        kc = np.flatnonzero(sc.keyed.cand).astype(np.int64)
        lexical = np.zeros(keys.size)
        lexical[kc], _ = scoring.lexical(keys.postings, sc.keyed.cand, kc, terms_)
        return cls(bridge, names, lexical, weights.lexical)

    def choose(
        self,
        bank: Bank,
        sc: Scores,
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
            return with_key(
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

    def _best_keys(self, keyed: KeyScores) -> Iterator[int]:
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


def choose_rest(
    bank: Bank,
    sc: Scores,
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
