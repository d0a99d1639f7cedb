"""The Memory Bank as ranking holds it (docs/memory.md §5).

The bank is held as NumPy arrays, one row per retrievable memory, so a turn's
scoring is a couple of matrix-vector products and a partial sort, never a
Python loop over the rows.

How the rows are scored and chosen: ``ranking`` (and the modules it names).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

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
