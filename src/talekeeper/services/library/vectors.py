"""The knowledge library's passage vectors, read once per source and kept.

Invariants:

- A source's vectors of one embedding model are one matrix of unit rows (a zero vector
  stays zero), with the passages' ids in the order the database gives them; a source
  whose vectors are not all of one width (or that has none) has an empty matrix, so its
  passages are ranked by words.
- Vectors are read once per source and kept (``VectorCache``, the ``CACHED_SOURCES`` most
  recently used) until the source's ``revision`` or model changes, or the id names another
  source (SQLite gives a new row the id of the last one deleted: the source's
  ``created_at`` tells them apart). The cache is shared by the search's threads.
- Nothing is written here. The search that reads these is ``services.library.search``; the
  scoring with them is ``services.library.ranking``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import numpy.typing as npt
from sqlalchemy.orm import Session

from talekeeper.storage.repositories.library import LibraryRepository

CACHED_SOURCES = 64

FloatArray = npt.NDArray[np.float32]
IdArray = npt.NDArray[np.int64]


@dataclass
class Vectors:
    model: str
    revision: int
    ids: IdArray
    matrix: FloatArray  # unit rows
    born: datetime | None = None


class VectorCache:
    """Each source's passage vectors of one model, as one unit-row matrix (thread-safe)."""

    def __init__(self, capacity: int = CACHED_SOURCES) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[int, Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def get(
        self,
        session: Session,
        source_id: int,
        model: str,
        revision: int,
        born: datetime | None = None,
    ) -> Vectors:
        """``born``: the source's ``created_at``, which tells a source from an earlier one
        that had its id."""
        with self._lock:
            entry = self._entries.get(source_id)
            if entry is not None and (entry.model, entry.revision, entry.born) == (
                model,
                revision,
                born,
            ):
                self._entries.move_to_end(source_id)
                return entry
        rows = LibraryRepository(session).vectors(source_id, model)
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        widths = {len(r[1]) for r in rows if r[1] is not None}
        if len(widths) != 1:
            matrix = np.zeros((0, 0), dtype=np.float32)
            ids = ids[:0]
        else:
            matrix = np.frombuffer(b"".join(bytes(r[1] or b"") for r in rows), dtype=np.float32)
            matrix = matrix.reshape(len(rows), -1).copy()
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            matrix /= np.where(norms == 0, 1, norms).astype(np.float32)
        entry = Vectors(model, revision, ids, matrix, born)
        with self._lock:
            self._entries[source_id] = entry
            self._entries.move_to_end(source_id)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        return entry
