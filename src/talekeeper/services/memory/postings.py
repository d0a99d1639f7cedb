"""Postings: term -> the ascending rows that hold it, as one flat array.

A bank's lexical index. Held as three parts (a vocabulary, each term's run in one flat
array of rows, and the run boundaries) rather than a dict of small arrays, so that it is
built, trimmed, extended and written to a file with a few NumPy passes instead of a
Python step per term occurrence (65,000 evidence keys hold about 700,000 of them).

Invariants:

- ``get(term)`` is the term's rows in ascending order, or None when no row holds it (a
  term whose rows were all dropped reads as absent, exactly as one never seen);
- ``patched(keep, added)`` is the postings of the kept rows, renumbered in their order,
  followed by ``added``'s rows numbered after them: the same as building from scratch
  over the rows in that order;
- it is never changed in place: a patch makes a new one (a bank being ranked in one
  thread is never seen half-patched by another).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


class Postings(Mapping[str, IntArray]):
    """Term -> ascending row indices (see the module docstring)."""

    __slots__ = ("_at", "offsets", "rows", "vocab")

    def __init__(self, vocab: Sequence[str], offsets: IntArray, rows: IntArray) -> None:
        if len(offsets) != len(vocab) + 1:
            raise ValueError("postings: one boundary per term and one more")
        self.vocab = list(vocab)
        self.offsets = offsets
        self.rows = rows
        self._at = {t: i for i, t in enumerate(self.vocab)}

    # -- building ---------------------------------------------------------------------

    @classmethod
    def empty(cls) -> Postings:
        return cls([], np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64))

    @classmethod
    def of_texts(cls, texts: Sequence[str]) -> Postings:
        """From each row's terms as stored: separated by single spaces (``bank.terms_of``).
        One split of the joined texts and one dictionary pass over the occurrences, no list
        per row: a row of n spaces is n + 1 pieces, the empty ones (an empty row, a doubled
        space) dropped after."""
        if not texts:
            return cls.empty()
        flat = " ".join(texts).split(" ")
        counts = np.fromiter((t.count(" ") + 1 for t in texts), dtype=np.int64, count=len(texts))
        vocab = list(dict.fromkeys(flat))
        at = {t: i for i, t in enumerate(vocab)}
        term_ids = np.fromiter(map(at.__getitem__, flat), dtype=np.int64, count=len(flat))
        owners = np.repeat(np.arange(len(texts), dtype=np.int64), counts)
        blank = at.get("")
        if blank is not None:  # its slot stays (ids keep their place); ``_grouped`` drops it
            held = term_ids != blank
            term_ids, owners = term_ids[held], owners[held]
        return cls._grouped(vocab, term_ids, owners)

    @classmethod
    def of_terms(cls, rows: Iterable[Iterable[str]]) -> Postings:
        """From each row's terms (any iterable of words without spaces)."""
        return cls.of_texts([" ".join(r) for r in rows])

    @classmethod
    def _grouped(cls, vocab: list[str], term_ids: IntArray, owners: IntArray) -> Postings:
        """Entries (term, row), rows ascending within each term, grouped by term. The sort
        is stable, so entries already ascending by row stay so within each term. Terms no
        entry holds any more leave the vocabulary."""
        order = np.argsort(term_ids, kind="stable")
        term_ids, owners = term_ids[order], owners[order]
        if term_ids.size > 1:  # a term listed twice in one row counts once
            again = (term_ids[1:] == term_ids[:-1]) & (owners[1:] == owners[:-1])
            if again.any():
                fresh = np.concatenate(([True], ~again))
                term_ids, owners = term_ids[fresh], owners[fresh]
        per_term = np.bincount(term_ids, minlength=len(vocab))
        live = per_term > 0
        if not live.all():
            vocab = [t for t, held in zip(vocab, live.tolist(), strict=True) if held]
            per_term = per_term[live]
        offsets = np.concatenate(([0], np.cumsum(per_term))).astype(np.int64)
        return cls(vocab, offsets, owners.astype(np.int64, copy=False))

    # -- reading ----------------------------------------------------------------------

    def get(self, term: str, default: IntArray | None = None) -> IntArray | None:  # type: ignore[override]
        i = self._at.get(term)
        if i is None:
            return default
        start, end = int(self.offsets[i]), int(self.offsets[i + 1])
        return self.rows[start:end] if end > start else default

    def __getitem__(self, term: str) -> IntArray:
        rows = self.get(term)
        if rows is None:
            raise KeyError(term)
        return rows

    def __iter__(self) -> Iterator[str]:
        sizes = np.diff(self.offsets)
        return (t for t, n in zip(self.vocab, sizes.tolist(), strict=True) if n)

    def __len__(self) -> int:
        return int(np.count_nonzero(np.diff(self.offsets)))

    def __contains__(self, term: object) -> bool:
        return isinstance(term, str) and self.get(term) is not None

    # -- patching ---------------------------------------------------------------------

    def patched(self, keep: BoolArray, added: Postings) -> Postings:
        """The kept rows renumbered in order, then ``added``'s rows after them."""
        if self.rows.size and int(self.rows.max()) >= keep.shape[0]:
            raise ValueError("postings: the keep mask is shorter than the rows it covers")
        renumber = np.cumsum(keep, dtype=np.int64) - 1
        term_of = np.repeat(np.arange(len(self.vocab), dtype=np.int64), np.diff(self.offsets))
        held = keep[self.rows] if self.rows.size else np.zeros(0, dtype=np.bool_)
        kept_terms, kept_rows = term_of[held], renumber[self.rows[held]]
        base = int(np.count_nonzero(keep))
        vocab = list(self.vocab)
        at = dict(self._at)
        for term in added.vocab:
            if term not in at:
                at[term] = len(vocab)
                vocab.append(term)
        remap = np.fromiter((at[t] for t in added.vocab), dtype=np.int64, count=len(added.vocab))
        added_of = np.repeat(remap, np.diff(added.offsets))
        term_ids = np.concatenate((kept_terms, added_of))
        owners = np.concatenate((kept_rows, added.rows + base))
        if not term_ids.size:
            return Postings.empty()
        return Postings._grouped(vocab, term_ids, owners)
