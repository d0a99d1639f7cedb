"""ZIP archives read with bounded work: a member is inflated in small pieces and never past
the size it declares.

Why: ``ZipFile.read`` cuts its output at a member's declared size, but not its work: it
asks zlib for up to 2 GiB at once, so a member that declares 100 bytes and inflates to
2 GiB (deflate packs zeros about 1,000 to 1: a 2 MB file) allocates 2 GiB before it is cut.
Here zlib is asked for at most ``CHUNK`` bytes at a time, and never for more than the
declared size + 1 in all.

Invariants:

- ``members`` reads the central directory only, after counting its headers in the raw
  bytes (so a directory of a million entries is refused before ``zipfile`` builds a
  million objects). It refuses more than ``Limits.entries`` members, a path that leaves
  the archive (absolute, ``..``, a drive), an encrypted member, a method other than stored
  or deflate, declared sizes adding up to more than ``Limits.unpacked_bytes``, and a member
  over ``RATIO_FLOOR`` bytes that declares packing tighter than ``Limits.ratio`` to 1
  (``MAX_RATIO``, 100: books, stylesheets and fonts pack 2 to 10 to 1).
- ``pieces`` (and ``unpack``, ``verify`` over it) inflates a member from its own bytes,
  ``CHUNK`` bytes at most at a time, ``declared size + 1`` at most in all: a member that
  inflates past its declared size, stops short of it, or has another CRC is refused. Work:
  proportional to the declared and packed sizes; memory: one piece (``verify``) or the
  declared size (``unpack``).
- Once ``verify`` has passed every member, ``zipfile`` reads each one to exactly the bytes
  verified (the same directory, the same local headers, the same streams), so a library
  given the archive afterwards does bounded work.
- Every refusal is ``InvalidInput`` naming the file (and the member) and saying what to
  do; no other exception leaves this module.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

from talekeeper.core.errors import InvalidInput

MAX_RATIO = 100  # unpacked to packed, for a member over RATIO_FLOOR
RATIO_FLOOR = 1024 * 1024  # smaller members may pack any way: they cost nothing
CHUNK = 64 * 1024  # packed bytes fed to zlib, and unpacked bytes asked of it, at a time
_LOCAL = struct.Struct("<4s22xHH")  # a local header: signature ... name length, extra length
_DIRECTORY_HEADER = b"PK\x01\x02"
_MB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    entries: int
    unpacked_bytes: int
    ratio: int = MAX_RATIO


def members(data: bytes, name: str, kind: str, limits: Limits) -> list[zipfile.ZipInfo]:
    """The members of the ZIP in ``data`` (a ``kind``, e.g. "an EPUB"), checked; nothing is
    inflated."""
    # zipfile's parser demands this signature of every directory entry: an upper bound.
    headers = data.count(_DIRECTORY_HEADER)
    if headers > limits.entries:
        raise _too_many(name, kind, headers, limits)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
    except Exception as exc:  # zipfile's errors on hostile bytes are many: one boundary
        raise _unreadable(name, str(exc) or type(exc).__name__) from exc
    if len(infos) > limits.entries:
        raise _too_many(name, kind, len(infos), limits)
    unpacked = sum(info.file_size for info in infos)
    if unpacked > limits.unpacked_bytes:
        raise InvalidInput(
            f"{name} unpacks to {unpacked / _MB:.0f} MB; {kind} may unpack to "
            f"{limits.unpacked_bytes / _MB:.0f} MB. Check that it is a real one."
        )
    for info in infos:
        _check_member(info, name, kind, limits)
    return infos


def _too_many(name: str, kind: str, count: int, limits: Limits) -> InvalidInput:
    return InvalidInput(
        f"{name} holds {count:,} files; {kind} may hold up to {limits.entries:,}. "
        "Check that it is a real one."
    )


def _unreadable(name: str, reason: str) -> InvalidInput:
    return InvalidInput(
        f"{name} cannot be read: {reason[:200]}. Check that the file is complete, or export "
        "it again from the program that made it."
    )


def _check_member(info: zipfile.ZipInfo, name: str, kind: str, limits: Limits) -> None:
    member = info.filename
    parts = PurePosixPath(member.replace("\\", "/")).parts
    if member.startswith(("/", "\\")) or ".." in parts or ":" in "".join(parts[:1]):
        raise InvalidInput(
            f"{name} contains a path outside the archive ({member!r}); refused. Export "
            "the file again."
        )
    if info.flag_bits & 0x1:
        raise InvalidInput(f"{name}: its member {member!r} is encrypted. Upload it unlocked.")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise InvalidInput(
            f"{name}: its member {member!r} is packed with method {info.compress_type}; "
            f"{kind} holds stored or deflated members only. Export the file again."
        )
    if info.file_size > RATIO_FLOOR and info.file_size > limits.ratio * info.compress_size:
        ratio = info.file_size / max(info.compress_size, 1)
        raise InvalidInput(
            f"{name}: its member {member!r} unpacks to {info.file_size / _MB:.0f} MB from "
            f"{info.compress_size:,} bytes ({ratio:,.0f} to 1); a member may pack at most "
            f"{limits.ratio} to 1, and real documents pack far less. Check that the file is "
            "a real one."
        )


def pieces(data: bytes, name: str, info: zipfile.ZipInfo) -> Iterator[bytes]:
    """The member's bytes, in pieces of at most ``CHUNK``, checked against its declared
    size and CRC (a refusal may come after some pieces: use them only once it ends)."""
    packed = _packed(data, name, info)
    crc, total = 0, 0
    stream: Iterator[bytes]
    if info.compress_type == zipfile.ZIP_STORED:
        stream = (bytes(packed[at : at + CHUNK]) for at in range(0, len(packed), CHUNK))
    else:
        stream = _inflated(packed, info.file_size)
    try:
        for piece in stream:
            crc, total = zlib.crc32(piece, crc), total + len(piece)
            if total > info.file_size:
                raise _lying(name, info, f"unpacks to more than the {info.file_size:,} bytes")
            yield piece
    except zlib.error as exc:
        raise _unreadable(name, f"its member {info.filename!r} is badly packed ({exc})") from None
    if total != info.file_size:
        raise _lying(name, info, f"unpacks to {total:,} bytes, not the {info.file_size:,}")
    if crc != info.CRC:
        raise _unreadable(name, f"its member {info.filename!r} fails its CRC check (damaged)")


def _inflated(packed: memoryview, size: int) -> Iterator[bytes]:
    """Raw deflate, fed ``CHUNK`` packed bytes at a time, asked for ``CHUNK`` unpacked
    bytes at most at a time and ``size + 1`` in all (one past: how a lie shows)."""
    inflater = zlib.decompressobj(-zlib.MAX_WBITS)
    pending: bytes | memoryview = b""
    at = total = 0
    while not inflater.eof and total <= size:
        if not pending:
            if at >= len(packed):
                raise zlib.error("the packed data ends before the member does")
            pending, at = packed[at : at + CHUNK], at + CHUNK
        # max_length is at least 1 here: 0 would mean "all of it", the unbounded read.
        piece = inflater.decompress(pending, min(size + 1 - total, CHUNK))
        pending = inflater.unconsumed_tail
        total += len(piece)
        yield piece


def _lying(name: str, info: zipfile.ZipInfo, what: str) -> InvalidInput:
    return _unreadable(name, f"its member {info.filename!r} {what} it declares (forged or damaged)")


def _packed(data: bytes, name: str, info: zipfile.ZipInfo) -> memoryview:
    """The member's packed bytes, found as zipfile finds them (after its local header)."""
    at = info.header_offset
    if at < 0 or at + _LOCAL.size > len(data):
        raise _unreadable(name, f"the header of {info.filename!r} is outside the file")
    signature, name_length, extra_length = _LOCAL.unpack_from(data, at)
    if signature != b"PK\x03\x04":
        raise _unreadable(name, f"the header of {info.filename!r} is damaged")
    start = at + _LOCAL.size + name_length + extra_length
    if start + info.compress_size > len(data):
        raise _unreadable(name, f"{info.filename!r} is cut off (the file is truncated)")
    return memoryview(data)[start : start + info.compress_size]


def unpack(data: bytes, name: str, info: zipfile.ZipInfo) -> bytes:
    """The member's bytes, checked (memory: its declared size)."""
    return b"".join(pieces(data, name, info))


def verify(data: bytes, name: str, infos: list[zipfile.ZipInfo]) -> None:
    """Inflate every member, keeping nothing, so each is known to be what it declares."""
    for info in infos:
        for _piece in pieces(data, name, info):
            pass
