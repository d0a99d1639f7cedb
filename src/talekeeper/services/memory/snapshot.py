"""Bank snapshots: a built bank kept in a file, so the first turn after a restart does not
build it again from every row and key.

A snapshot is a cache, never a source of truth: the database says what the bank is, and a
snapshot only saves rebuilding the part that has not moved since it was written.

Invariants:

- A snapshot names the adventure (its id and creation time), the embedding model, and the
  bank's state when it was written (``BankState``: highest revision, row count); it is used
  only for that adventure and model, and only when the database has moved forward from it
  (revision and count no lower). The cache then reads the rows whose revision is higher and
  patches them in, exactly as it does for a warm bank.
- A file is written whole to a temporary name and renamed into place: a reader sees the
  old snapshot or the new one, never half of one. Two writers of one file leave one of them.
- Reading checks everything it maps (magic, version, header, every array's type, size and
  place in the file, the bank's shapes and indices); a file that fails any check is not
  used and is removed. A bank read back is read-only (its arrays map the file).
- Nothing here raises on a bad file, a full disk or a folder that cannot be written: the
  cache then builds from the database as it would without snapshots.
"""

from __future__ import annotations

import hashlib
import json
import logging
import mmap
import os
import struct
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from talekeeper.services.memory.arrays import Bank
from talekeeper.services.memory.int8 import Codes
from talekeeper.services.memory.keyset import Keys
from talekeeper.services.memory.postings import Postings

log = logging.getLogger(__name__)

MAGIC = b"TKBANK\x00\x01"
VERSION = 1
_ALIGN = 64  # every array starts on a cache line
_HEADER_MAX = 1 << 20  # a header is a few KB; more is a file that is not ours
# The dtypes a snapshot holds; anything else in a header is refused.
_DTYPES = frozenset({"<i8", "<f4", "<f8", "|i1", "|b1"})


@dataclass(frozen=True)
class Stamp:
    """What a snapshot was written for, and the bank's state then."""

    adventure_id: int
    created: str  # the adventure's creation time: a re-created adventure under a reused id
    model: str
    revision: int
    count: int


def file_name(adventure_id: int, model: str) -> str:
    digest = hashlib.sha256(model.encode("utf-8")).hexdigest()[:16]
    return f"{adventure_id}-{digest}.bank"


class Snapshots:
    """The snapshot files of one database, in one folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, adventure_id: int, model: str) -> Path:
        return self.folder / file_name(adventure_id, model)

    def load(self, adventure_id: int, model: str) -> tuple[Bank, Stamp] | None:
        path = self.path(adventure_id, model)
        try:
            found = read(path)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("bank snapshot %s is not usable (%s); it is removed", path.name, exc)
            self.remove(adventure_id, model)
            return None
        bank, stamp = found
        if stamp.adventure_id != adventure_id or stamp.model != model:
            self.remove(adventure_id, model)
            return None
        return bank, stamp

    def save(self, bank: Bank, stamp: Stamp) -> bool:
        try:
            write(self.path(stamp.adventure_id, stamp.model), bank, stamp)
        except OSError as exc:
            log.warning("bank snapshot of adventure %s not written: %s", stamp.adventure_id, exc)
            return False
        return True

    def remove(self, adventure_id: int, model: str) -> None:
        try:
            self.path(adventure_id, model).unlink(missing_ok=True)
        except OSError as exc:
            log.warning("bank snapshot of adventure %s not removed: %s", adventure_id, exc)


# -- the file --------------------------------------------------------------------------------


def _arrays(bank: Bank) -> tuple[dict[str, npt.NDArray[Any]], dict[str, list[str]]]:
    arrays: dict[str, npt.NDArray[Any]] = {
        "ids": bank.ids,
        "branch_ids": bank.branch_ids,
        "depths": bank.depths,
        "vectors": bank.vectors,
        "pinned": bank.pinned,
        "heuristic": bank.heuristic,
        "postings.offsets": bank.postings.offsets,
        "postings.rows": bank.postings.rows,
    }
    texts = {"postings.vocab": bank.postings.vocab}
    keys = bank.keys
    if keys is not None:
        arrays |= {
            "keys.ids": keys.ids,
            "keys.owner": keys.owner,
            "keys.depths": keys.depths,
            "keys.vectors": keys.vectors,
            "keys.starts": keys.starts,
            "keys.postings.offsets": keys.postings.offsets,
            "keys.postings.rows": keys.postings.rows,
        }
        texts |= {"keys.postings.vocab": keys.postings.vocab, "keys.names": keys.names}
        if keys.codes is not None:
            arrays |= {
                "keys.codes": keys.codes.columns,
                "keys.codes.sums": keys.codes.sums,
                "keys.codes.scale": keys.codes.scale,
                "keys.codes.error": keys.codes.error,
                "keys.codes.norm": keys.codes.norm,
            }
    return arrays, texts


def _pad(n: int) -> int:
    return -n % _ALIGN


def write(path: Path, bank: Bank, stamp: Stamp) -> None:
    """``bank`` under ``stamp`` at ``path``, whole or not at all."""
    arrays, texts = _arrays(bank)
    blobs = {name: "\n".join(items).encode("utf-8") for name, items in texts.items()}
    layout: dict[str, dict[str, object]] = {}
    offset = 0
    parts: list[tuple[int, bytes | memoryview]] = []
    for name, array in arrays.items():
        data = np.ascontiguousarray(array)
        layout[name] = {"dtype": data.dtype.str, "shape": list(data.shape), "offset": offset}
        parts.append((offset, data.data.cast("B") if data.size else b""))
        offset += data.nbytes + _pad(data.nbytes)
    text_layout: dict[str, dict[str, int]] = {}
    for name, blob in blobs.items():
        text_layout[name] = {"items": len(texts[name]), "offset": offset, "size": len(blob)}
        parts.append((offset, blob))
        offset += len(blob) + _pad(len(blob))
    header = json.dumps(
        {"version": VERSION, "stamp": asdict(stamp), "arrays": layout, "texts": text_layout},
        separators=(",", ":"),
    ).encode("utf-8")
    start = len(MAGIC) + 8 + len(header)
    start += _pad(start)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=path.name + ".", suffix=".part", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(MAGIC + struct.pack("<Q", len(header)) + header)
            out.write(b"\0" * (start - out.tell()))
            for at, piece in parts:
                out.write(b"\0" * (start + at - out.tell()))
                out.write(piece)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def read(path: Path) -> tuple[Bank, Stamp]:
    """The bank and stamp at ``path``; ValueError (or OSError) when it is not a sound one."""
    with path.open("rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size < len(MAGIC) + 8:
            raise ValueError("too short")
        view = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    if view[: len(MAGIC)] != MAGIC:
        raise ValueError("not a bank snapshot")
    (length,) = struct.unpack_from("<Q", view, len(MAGIC))
    if length > _HEADER_MAX or len(MAGIC) + 8 + length > size:
        raise ValueError("header out of bounds")
    header = json.loads(bytes(view[len(MAGIC) + 8 : len(MAGIC) + 8 + length]).decode("utf-8"))
    if not isinstance(header, dict) or header.get("version") != VERSION:
        raise ValueError("another version")
    start = len(MAGIC) + 8 + length
    start += _pad(start)
    arrays = {
        name: _array(view, start, size, name, spec)
        for name, spec in _table(header, "arrays").items()
    }
    texts = {
        name: _text(view, start, size, name, spec) for name, spec in _table(header, "texts").items()
    }
    stamp = _stamp(_table(header, "stamp"))
    bank = _bank(arrays, texts)
    check(bank)
    return bank, stamp


def _table(header: dict[str, object], name: str) -> dict[str, object]:
    """A part of the header that must be a JSON object."""
    part = header.get(name)
    if not isinstance(part, dict):
        raise ValueError(f"header: {name} is not an object")
    return part


def _stamp(raw: dict[str, object]) -> Stamp:
    """The stamp, each field of its own type (a revision compared with the database's must
    be a number, not whatever a damaged file holds)."""
    if set(raw) != {"adventure_id", "created", "model", "revision", "count"}:
        raise ValueError("stamp: fields")
    return Stamp(
        adventure_id=_whole(raw, "adventure_id"),
        created=_words(raw, "created"),
        model=_words(raw, "model"),
        revision=_whole(raw, "revision"),
        count=_whole(raw, "count"),
    )


def _whole(raw: dict[str, object], name: str) -> int:
    value = raw[name]
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"stamp: {name}")
    return value


def _words(raw: dict[str, object], name: str) -> str:
    value = raw[name]
    if not isinstance(value, str):
        raise ValueError(f"stamp: {name}")
    return value


def _array(view: mmap.mmap, start: int, size: int, name: str, spec: Any) -> npt.NDArray[Any]:
    dtype, shape, offset = spec["dtype"], spec["shape"], spec["offset"]
    if dtype not in _DTYPES:
        raise ValueError(f"{name}: type {dtype}")
    if not (isinstance(shape, list) and 1 <= len(shape) <= 2):
        raise ValueError(f"{name}: shape")
    if not all(isinstance(n, int) and n >= 0 for n in shape) or not isinstance(offset, int):
        raise ValueError(f"{name}: shape or offset")
    count = int(np.prod(shape))
    nbytes = count * np.dtype(dtype).itemsize
    if offset < 0 or start + offset + nbytes > size:
        raise ValueError(f"{name}: out of bounds")
    array = np.frombuffer(view, dtype=np.dtype(dtype), count=count, offset=start + offset)
    return array.reshape(shape)


def _text(view: mmap.mmap, start: int, size: int, name: str, spec: Any) -> list[str]:
    items, offset, length = spec["items"], spec["offset"], spec["size"]
    if not all(isinstance(n, int) and n >= 0 for n in (items, offset, length)):
        raise ValueError(f"{name}: items, offset or size")
    if start + offset + length > size:
        raise ValueError(f"{name}: out of bounds")
    if not items:
        return []
    found = bytes(view[start + offset : start + offset + length]).decode("utf-8").split("\n")
    if len(found) != items:
        raise ValueError(f"{name}: {len(found)} items, the header says {items}")
    return found


def _bank(arrays: dict[str, npt.NDArray[Any]], texts: dict[str, list[str]]) -> Bank:
    keys: Keys | None = None
    if "keys.ids" in arrays:
        codes = None
        if "keys.codes" in arrays:
            codes = Codes(
                arrays["keys.codes"],
                arrays["keys.codes.sums"],
                arrays["keys.codes.scale"],
                arrays["keys.codes.error"],
                arrays["keys.codes.norm"],
            )
        keys = Keys(
            ids=arrays["keys.ids"],
            owner=arrays["keys.owner"],
            depths=arrays["keys.depths"],
            vectors=arrays["keys.vectors"],
            starts=arrays["keys.starts"],
            postings=Postings(
                texts["keys.postings.vocab"],
                arrays["keys.postings.offsets"],
                arrays["keys.postings.rows"],
            ),
            names=texts["keys.names"],
            codes=codes,
        )
    return Bank(
        ids=arrays["ids"],
        branch_ids=arrays["branch_ids"],
        depths=arrays["depths"],
        vectors=arrays["vectors"],
        pinned=arrays["pinned"],
        heuristic=arrays["heuristic"],
        postings=Postings(
            texts["postings.vocab"], arrays["postings.offsets"], arrays["postings.rows"]
        ),
        keys=keys,
    )


def _check_postings(postings: Postings, rows: int, what: str) -> None:
    offsets = postings.offsets
    if offsets.ndim != 1 or int(offsets[0]) != 0 or int(offsets[-1]) != postings.rows.size:
        raise ValueError(f"{what}: postings boundaries")
    if np.any(np.diff(offsets) < 0):
        raise ValueError(f"{what}: postings boundaries out of order")
    if postings.rows.size and (int(postings.rows.min()) < 0 or int(postings.rows.max()) >= rows):
        raise ValueError(f"{what}: postings name rows the bank does not have")


def check(bank: Bank) -> None:
    """ValueError unless ``bank``'s arrays agree with one another (what ranking assumes)."""
    n = bank.size
    if bank.ids.ndim != 1 or bank.vectors.ndim != 2 or bank.vectors.shape[0] != n:
        raise ValueError("bank: shapes")
    for name in ("branch_ids", "depths", "pinned", "heuristic"):
        if getattr(bank, name).shape != (n,):
            raise ValueError(f"bank: {name} shape")
    if bank.ids.dtype != np.int64 or bank.vectors.dtype != np.float32:
        raise ValueError("bank: types")
    _check_postings(bank.postings, n, "bank")
    keys = bank.keys
    if keys is None:
        return
    k = keys.size
    if keys.vectors.shape != (k, bank.dims) or keys.vectors.dtype != np.float32:
        raise ValueError("keys: vectors")
    if keys.owner.shape != (k,) or keys.depths.shape != (k,) or keys.starts.shape != (n + 1,):
        raise ValueError("keys: shapes")
    if k and (int(keys.owner.min()) < 0 or int(keys.owner.max()) >= n):
        raise ValueError("keys: owners")
    if np.any(np.diff(keys.owner) < 0) or int(keys.starts[0]) != 0 or int(keys.starts[-1]) != k:
        raise ValueError("keys: runs")
    if not np.array_equal(np.diff(keys.starts), np.bincount(keys.owner, minlength=n)):
        raise ValueError("keys: runs and owners disagree")
    if len(keys.names) != k:
        raise ValueError("keys: names")
    _check_postings(keys.postings, k, "keys")
    codes = keys.codes
    if codes is not None:
        if codes.columns.shape != (bank.dims, k) or codes.columns.dtype != np.int8:
            raise ValueError("keys: codes")
        if codes.sums.shape != (k,) or codes.sums.dtype != np.int64:
            raise ValueError("keys: codes' sums")
        for part in (codes.scale, codes.error, codes.norm):
            if part.shape != (k,) or part.dtype != np.float64:
                raise ValueError("keys: codes' columns")
