"""The bank's evidence keys as arrays: each memory's source passages, ranked beside it.

Invariants: the keys of bank row ``r`` are the contiguous rows
``starts[r]:starts[r + 1]``, in the order their memory lists them; every key row belongs
to a memory of the bank and has the bank's vector size; vectors are normalised (a
non-finite one becomes zero and so ranks nowhere). No key text is held here. From
``QUANTIZE_AT`` keys on, the vectors are also held as int8 codes (``int8.Codes``), which
ranking reads first and rescores exactly where the order depends on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from talekeeper.services.memory.int8 import Codes
from talekeeper.services.memory.postings import Postings

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float32]
BoolArray = npt.NDArray[np.bool_]

# Below this many keys one float32 product is already cheap (about 0.3 ms for 5,000); the
# codes cost a quarter more memory and their own pass, so they pay only for large banks.
QUANTIZE_AT = 8192


def starts_of(counts: IntArray) -> IntArray:
    """Where each bank row's run of keys starts, from the runs' lengths (and the end)."""
    return np.concatenate(([0], np.cumsum(counts))).astype(np.int64)


class KeyInput(NamedTuple):
    """One evidence key as the bank needs it: its memory, vector and terms (no text)."""

    id: int
    memory_id: int
    depth: int
    vector: npt.NDArray[np.floating]
    terms: frozenset[str]
    names: frozenset[str] = frozenset()  # ``evidence.names``: what a hop follows


@dataclass(eq=False)
class Keys:
    """The bank's evidence keys, each memory's keys one contiguous run in bank-row order:
    the keys of bank row ``r`` are rows ``starts[r]:starts[r + 1]``."""

    ids: IntArray
    owner: IntArray  # bank row of each key's memory
    depths: IntArray
    vectors: FloatArray  # (K, dims), rows of norm 1 (or 0)
    starts: IntArray  # (bank size + 1,)
    postings: Postings = field(default_factory=Postings.empty)
    names: list[str] = field(default_factory=list)  # per key: its names, space-separated
    codes: Codes | None = None  # the vectors as int8 codes (large banks only)

    @property
    def size(self) -> int:
        return int(self.ids.shape[0])

    def holds(self, row: int, term: str) -> bool:
        """Whether key ``row`` has ``term`` (its posting list is ascending)."""
        rows = self.postings.get(term)
        if rows is None:
            return False
        at = int(np.searchsorted(rows, row))
        return at < rows.size and int(rows[at]) == row

    def names_of(self, row: int) -> list[str]:
        return self.names[row].split() if row < len(self.names) else []

    @classmethod
    def empty(cls, rows: int, dims: int) -> Keys:
        return cls(
            ids=np.zeros(0, dtype=np.int64),
            owner=np.zeros(0, dtype=np.int64),
            depths=np.zeros(0, dtype=np.int64),
            vectors=np.zeros((0, dims), dtype=np.float32),
            starts=np.zeros(rows + 1, dtype=np.int64),
        )

    @classmethod
    def build(
        cls,
        memory_ids: IntArray,
        keys: Sequence[KeyInput],
        dims: int,
        quantize_at: int = QUANTIZE_AT,
    ) -> Keys:
        """Keys of the bank's memories (``memory_ids`` in bank-row order); keys of other
        memories or of another vector size are left out. ``quantize_at``: from how many
        keys the int8 codes are built too."""
        row_of = {int(m): i for i, m in enumerate(memory_ids)}
        kept = [k for k in keys if k.memory_id in row_of and int(np.size(k.vector)) == dims]
        kept.sort(key=lambda k: row_of[k.memory_id])  # stable: each run keeps its order
        if not kept:
            return cls.empty(len(memory_ids), dims)
        owner = np.array([row_of[k.memory_id] for k in kept], dtype=np.int64)
        vectors = np.stack([np.asarray(k.vector, dtype=np.float32).reshape(-1) for k in kept])
        vectors[~np.isfinite(vectors).all(axis=1)] = 0.0  # a corrupt vector ranks nowhere
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        np.divide(vectors, norms, out=vectors, where=norms > 0)
        counts = np.bincount(owner, minlength=len(memory_ids))
        return cls(
            ids=np.array([k.id for k in kept], dtype=np.int64),
            owner=owner,
            depths=np.array([k.depth for k in kept], dtype=np.int64),
            vectors=vectors,
            starts=starts_of(counts),
            postings=Postings.of_terms(k.terms for k in kept),
            names=[" ".join(sorted(k.names)) for k in kept],
            codes=Codes.of(vectors) if len(kept) >= quantize_at else None,
        )

    def patched(
        self, keep: BoolArray, added: Keys, rows: int, quantize_at: int = QUANTIZE_AT
    ) -> Keys:
        """The keys of the bank rows ``keep`` holds (renumbered in order), then ``added``'s
        (the keys of the rows appended after them): ``rows`` bank rows in all. The int8 codes
        are carried over and extended where held, made anew when the keys first reach
        ``quantize_at``."""
        kept = keep[self.owner]
        base = int(np.count_nonzero(keep))
        renumber = np.cumsum(keep, dtype=np.int64) - 1
        owner = np.concatenate((renumber[self.owner[kept]], added.owner + base))
        vectors = np.concatenate((self.vectors[kept], added.vectors))
        counts = np.bincount(owner, minlength=rows)
        codes: Codes | None = None
        if owner.size >= quantize_at:
            if self.codes is not None:
                extra = added.codes if added.codes is not None else Codes.of(added.vectors)
                codes = self.codes.patched(kept, extra)
            else:
                codes = Codes.of(vectors)
        names = [n for n, k in zip(self.names, kept.tolist(), strict=True) if k] + added.names
        return Keys(
            ids=np.concatenate((self.ids[kept], added.ids)),
            owner=owner,
            depths=np.concatenate((self.depths[kept], added.depths)),
            vectors=vectors,
            starts=starts_of(counts),
            postings=self.postings.patched(kept, added.postings),
            names=names,
            codes=codes,
        )
