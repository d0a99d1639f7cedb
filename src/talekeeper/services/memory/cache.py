"""The bank cache: memory rows as ranking sees them, read by revision.

Invariants:

- ``BankCache`` holds, per adventure (the few most recent), the retrievable
  rows — active, with a vector of the current embedding model — as NumPy
  arrays. A read checks the adventure's (highest revision, row count) in one
  index lookup and refreshes only the rows whose revision moved; memory text
  is never loaded for ranking.

That every change ranking must see moves a revision and drops the cached row is kept
by ``bank``, the one place memories change.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from sqlalchemy.orm import Session

from talekeeper.services.memory.arrays import Bank
from talekeeper.services.memory.evidence import Said
from talekeeper.services.memory.int8 import Codes
from talekeeper.services.memory.keyset import QUANTIZE_AT, Keys, starts_of
from talekeeper.services.memory.postings import Postings
from talekeeper.services.memory.snapshot import Snapshots, Stamp
from talekeeper.storage.repositories.memory import BankRow, MemoryRepository
from talekeeper.storage.repositories.memory_keys import KeyRepository, KeyRow
from talekeeper.storage.vocabulary import Authority, MemoryStatus

VECTOR_DTYPE = np.float32  # 384 dims x 4 bytes: 1.5 KB a memory, exact enough for cosine
CACHED_ADVENTURES = 8  # a small group's worth of adventures played at once


def pack(vector: Sequence[float]) -> bytes:
    return np.asarray(vector, dtype=VECTOR_DTYPE).tobytes()


def unpack(blob: bytes) -> np.ndarray:
    return np.frombuffer(blob, dtype=VECTOR_DTYPE)


@dataclass
class _Entry:
    model: str
    revision: int  # the bank's state as of the last refresh (``bank_state``)
    count: int
    bank: Bank | None = None
    reread: set[int] = field(default_factory=set)  # invalidated rows: read again by id
    # What Insights shows of the memories retrieval chose: read once per memory (never the
    # whole bank's text), dropped with the row whenever it changes.
    details: dict[int, Detail] = field(default_factory=dict)
    saved: int = 0  # the revision of the newest snapshot written or read (0: none)
    moved: int = 0  # rows patched in since then
    created: str | None = None  # the adventure's creation time, once a snapshot needed it
    refreshing: threading.Lock = field(default_factory=threading.Lock)


class Detail(NamedTuple):
    text: str
    authority: str
    branch_id: int
    depth: int
    source_start: int | None
    source_end: int | None
    said: Said = ()  # its sentences, each with the actions it comes from (``evidence.said``)


# A bank this large is kept in a snapshot file (where the cache has a folder for them): a
# cold build costs about 0.2 ms a memory with its keys, so below this it is quick anyway.
SNAPSHOT_AT = 500
# Rows patched in since the last snapshot before the next is written (in the background):
# what the first turn after a crash reads and patches on top of the snapshot.
SNAPSHOT_AFTER = 50


class BankCache:
    """Retrievable rows per adventure, refreshed by revision; safe across threads.

    A refresh reads only the rows whose revision moved (and their keys) and patches them
    into the cached bank (``Bank.patched``); only a cold read builds the whole bank. With
    ``snapshots``, a cold read starts from the adventure's snapshot file when there is a
    sound one (``snapshot``), and large banks are written back there now and then."""

    def __init__(
        self,
        capacity: int = CACHED_ADVENTURES,
        snapshots: Snapshots | None = None,
        snapshot_at: int = SNAPSHOT_AT,
        snapshot_after: int = SNAPSHOT_AFTER,
    ) -> None:
        self.capacity = capacity
        self.snapshots = snapshots
        self.snapshot_at = snapshot_at
        self.snapshot_after = snapshot_after
        self._entries: OrderedDict[int, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._saving: dict[int, threading.Thread] = {}

    def invalidate(self, adventure_id: int, memory_id: int | None = None) -> None:
        with self._lock:
            entry = self._entries.get(adventure_id)
            if entry is None:
                return
            if memory_id is None:
                del self._entries[adventure_id]
            else:
                # Read it again by id next time, whatever its revision: the change may not
                # be committed yet, or may be rolled back.
                entry.details.pop(memory_id, None)
                entry.reread.add(memory_id)

    def bank(self, session: Session, adventure_id: int, model: str) -> Bank:
        repo = MemoryRepository(session)
        revision, count = repo.bank_state(adventure_id)
        with self._lock:
            entry = self._entries.get(adventure_id)
            if entry is not None:
                self._entries.move_to_end(adventure_id)
        if entry is None or entry.model != model or revision < entry.revision:
            entry = self._start(session, adventure_id, model, revision, count)
        elif count < entry.count:
            entry = _Entry(model, 0, 0)  # rows vanished (an adventure re-created, a reused id)
        with entry.refreshing:
            with self._lock:
                reread, entry.reread = entry.reread, set()
            if entry.bank is None or reread or (entry.revision, entry.count) != (revision, count):
                self._refresh(session, entry, adventure_id, revision, count, reread)
            bank, state = entry.bank, (entry.revision, entry.count)
            assert bank is not None
        with self._lock:
            self._entries[adventure_id] = entry
            self._entries.move_to_end(adventure_id)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        self._maybe_save(session, adventure_id, entry, bank, state)
        return bank

    def details(self, adventure_id: int, ids: Sequence[int]) -> dict[int, Detail]:
        """The cached details of ``ids`` (those not cached are missing from the result)."""
        with self._lock:
            entry = self._entries.get(adventure_id)
            if entry is None:
                return {}
            return {i: entry.details[i] for i in ids if i in entry.details}

    def keep_details(self, adventure_id: int, revision: int, found: dict[int, Detail]) -> None:
        """Remember details read at bank ``revision`` (ignored if the bank moved since)."""
        with self._lock:
            entry = self._entries.get(adventure_id)
            if entry is not None and entry.revision == revision and entry.bank is not None:
                held = set(np.intersect1d(entry.bank.ids, list(found)).tolist())
                entry.details.update((i, d) for i, d in found.items() if i in held)

    def revision(self, adventure_id: int) -> int:
        with self._lock:
            entry = self._entries.get(adventure_id)
            return entry.revision if entry is not None else -1

    # -- reading -------------------------------------------------------------------------

    def _start(
        self, session: Session, adventure_id: int, model: str, revision: int, count: int
    ) -> _Entry:
        """A new entry: from the adventure's snapshot when a sound one is behind the
        database (the refresh then patches in what moved since), else empty."""
        if self.snapshots is None:
            return _Entry(model, 0, 0)
        found = self.snapshots.load(adventure_id, model)
        if found is None:
            return _Entry(model, 0, 0)
        bank, stamp = found
        created = MemoryRepository(session).adventure_created(adventure_id)
        if stamp.created != created or stamp.revision > revision or stamp.count > count:
            self.snapshots.remove(adventure_id, model)
            return _Entry(model, 0, 0)
        return _Entry(
            model, stamp.revision, stamp.count, bank=bank, saved=stamp.revision, created=created
        )

    def _refresh(
        self,
        session: Session,
        entry: _Entry,
        adventure_id: int,
        revision: int,
        count: int,
        reread: set[int],
    ) -> None:
        repo = MemoryRepository(session)
        cold = entry.bank is None
        changed = repo.bank_rows(adventure_id, after_revision=0 if cold else entry.revision)
        if reread and not cold:
            changed += repo.bank_rows(adventure_id, ids=sorted(reread))
        latest = {row.id: row for row in changed}  # a row read twice: its later read
        usable = [r for r in latest.values() if _usable(r, entry.model)]
        keys = _read_keys(session, adventure_id, usable, entry.model, whole=cold)
        added = build(usable, keys)
        bank = added
        if not cold:
            assert entry.bank is not None
            drop = np.fromiter(latest, dtype=np.int64, count=len(latest))
            try:
                bank = entry.bank.patched(drop, added)
            except ValueError:  # rows of another vector size: the whole bank again
                entry.revision, entry.bank = 0, None
                self._refresh(session, entry, adventure_id, revision, count, set())
                return
            entry.moved += len(latest)
        with self._lock:
            for memory_id in latest:
                entry.details.pop(memory_id, None)
        entry.bank, entry.revision, entry.count = bank, revision, count

    # -- snapshots -----------------------------------------------------------------------

    def _maybe_save(
        self,
        session: Session,
        adventure_id: int,
        entry: _Entry,
        bank: Bank,
        state: tuple[int, int],
    ) -> None:
        """Write a large bank's snapshot (``snapshot_at`` rows and more) in the background
        when it has none yet, or when ``snapshot_after`` rows moved since the last."""
        if self.snapshots is None or bank.size < self.snapshot_at:
            return
        if entry.saved and entry.moved < self.snapshot_after:
            return
        if entry.created is None:
            entry.created = MemoryRepository(session).adventure_created(adventure_id)
        self._save(adventure_id, entry, bank, state)

    def _save(self, adventure_id: int, entry: _Entry, bank: Bank, state: tuple[int, int]) -> None:
        """``bank``, as of ``state`` (the revision and count it was refreshed to), written
        in a thread of its own (one at a time per adventure)."""
        if self.snapshots is None or entry.created is None:
            return
        revision, count = state
        with self._lock:
            running = self._saving.get(adventure_id)
            if running is not None and running.is_alive():
                return
            stamp = Stamp(adventure_id, entry.created, entry.model, revision, count)
            entry.saved, entry.moved = revision, 0
            thread = threading.Thread(
                target=self.snapshots.save, args=(bank, stamp), name="bank-snapshot", daemon=True
            )
            self._saving[adventure_id] = thread
        thread.start()

    def save_behind(self) -> None:
        """Write the snapshot of every cached bank that moved since its last (at shutdown:
        the next start then reads nothing from the database but the revision check)."""
        with self._lock:
            entries = list(self._entries.items())
        for adventure_id, entry in entries:
            with entry.refreshing:  # the bank and the state it was refreshed to, together
                bank, state = entry.bank, (entry.revision, entry.count)
            if bank is not None and entry.saved and state[0] != entry.saved:
                self._save(adventure_id, entry, bank, state)

    def wait_saved(self, timeout: float | None = None) -> None:
        """Wait for the snapshots being written (at shutdown, and in tests)."""
        with self._lock:
            threads = list(self._saving.values())
        for thread in threads:
            thread.join(timeout)


def _usable(row: BankRow, model: str) -> bool:
    return (
        row.status == MemoryStatus.ACTIVE and row.vector is not None and row.vector_model == model
    )


def _read_keys(
    session: Session, adventure_id: int, rows: list[BankRow], model: str, whole: bool
) -> dict[int, list[KeyRow]]:
    """The keys of ``rows`` with a vector of ``model``, by memory (``whole``: read as the
    adventure's, all at once)."""
    if not rows:
        return {}
    repo = KeyRepository(session)
    wanted = {r.id for r in rows}
    found = (
        repo.bank_keys(adventure_id=adventure_id)
        if whole
        else repo.bank_keys(memory_ids=sorted(wanted))
    )
    out: dict[int, list[KeyRow]] = {}
    for key in found:
        if key.memory_id in wanted and key.vector is not None and key.vector_model == model:
            out.setdefault(key.memory_id, []).append(key)
    return out


def build(rows: Sequence[BankRow], keys: dict[int, list[KeyRow]] | None = None) -> Bank:
    """The ranking arrays of ``rows`` (and of their ``keys``) straight from their stored
    columns: the vectors are joined and copied once, as one matrix (a cold read builds no
    per-row objects)."""
    vectors = [r.vector for r in rows if r.vector is not None]
    sizes = {len(v) for v in vectors}
    if len(sizes) > 1:
        # Two vector sizes under one model name: keep the most common (the others are
        # re-embedded when their text changes); ranking needs one matrix.
        common = max(sizes, key=lambda n: sum(len(v) == n for v in vectors))
        rows = [r for r in rows if r.vector is not None and len(r.vector) == common]
        vectors = [r.vector for r in rows if r.vector is not None]
    width = sizes.pop() // VECTOR_DTYPE().itemsize if len(sizes) == 1 else 0
    if not rows or not width:
        return Bank.build([], 0)
    matrix = np.frombuffer(b"".join(vectors), dtype=VECTOR_DTYPE).reshape(len(rows), width)
    matrix = _unit_rows(matrix.copy())  # writable, and detached from the bytes
    ids = np.fromiter((r.id for r in rows), dtype=np.int64, count=len(rows))
    heuristic = Authority.HEURISTIC  # looked up once, not once a row
    return Bank(
        ids=ids,
        branch_ids=np.fromiter((r.branch_id for r in rows), dtype=np.int64, count=len(rows)),
        depths=np.fromiter((r.depth for r in rows), dtype=np.int64, count=len(rows)),
        vectors=matrix,
        pinned=np.fromiter((bool(r.pinned) for r in rows), dtype=np.bool_, count=len(rows)),
        heuristic=np.fromiter(
            (r.authority == heuristic for r in rows), dtype=np.bool_, count=len(rows)
        ),
        postings=Postings.of_texts([r.terms for r in rows]),
        keys=_keys(ids, keys or {}, width),
    )


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to norm 1, in place; a corrupt (non-finite) row becomes zero and so ranks
    nowhere rather than breaking a turn."""
    matrix[~np.isfinite(matrix).all(axis=1)] = 0.0
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    return matrix


def _keys(ids: np.ndarray, keys: dict[int, list[KeyRow]], width: int) -> Keys | None:
    """The keys of the bank's rows straight from their stored columns, as ``build`` does for
    the memories: one joined matrix, each memory's keys a contiguous run in row order."""
    size = width * VECTOR_DTYPE().itemsize
    runs = [
        [k for k in keys.get(memory_id, ()) if k.vector is not None and len(k.vector) == size]
        for memory_id in ids.tolist()
    ]
    ordered = [k for run in runs for k in run]
    if not ordered:
        return None
    counts = np.fromiter((len(run) for run in runs), dtype=np.int64, count=len(runs))
    matrix = np.frombuffer(
        b"".join(k.vector for k in ordered if k.vector is not None), VECTOR_DTYPE
    )
    matrix = _unit_rows(matrix.reshape(len(ordered), width).copy())
    return Keys(
        ids=np.fromiter((k.id for k in ordered), dtype=np.int64, count=len(ordered)),
        owner=np.repeat(np.arange(len(runs), dtype=np.int64), counts),
        depths=np.fromiter((k.depth for k in ordered), dtype=np.int64, count=len(ordered)),
        vectors=matrix,
        starts=starts_of(counts),
        postings=Postings.of_texts([k.terms for k in ordered]),
        names=[k.names for k in ordered],
        codes=Codes.of(matrix) if len(ordered) >= QUANTIZE_AT else None,
    )
