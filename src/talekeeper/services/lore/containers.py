"""Cards inside containers: PNG images and CHARX zips. Only the card's JSON is taken out.

Invariants:

- PNG: the chunks are walked from the signature to ``IEND``; a chunk that runs
  past the end of the file, or no ``IEND``, refuses the file with the byte
  offset. Card text lives in ``tEXt`` chunks as ``keyword NUL base64(JSON)``;
  ``ccv3`` (Character Card V3) wins over ``chara`` (V1/V2), and ``naidata``
  (a NovelAI lorebook) is read when neither is there. ``zTXt`` and ``iTXt``
  chunks are accepted with a warning. Bad base64 refuses the file, naming the
  chunk and its offset; bad JSON inside is refused the same way by the caller.
- PNG: a text chunk's keyword is read before anything else of it. Only the chunk
  that wins is unpacked: a chunk of any other keyword (a comment, junk), and a
  later chunk of a keyword already seen, is passed by without being decompressed
  or copied, so a file of hundreds of compressed chunks costs one chunk's unpacking.
  All a PNG's unpacking together stays within ``MAX_INFLATED_BYTES``.
- CHARX: a ZIP whose root holds ``card.json``. Only that member is read. Any
  member path that leaves the archive's folder, any encrypted member, and a
  ``card.json`` that unpacks to more than ``MAX_FILE_BYTES`` refuse the file;
  the size is checked on the declared size and again while reading, so a member
  that lies about its size is stopped at the cap (zip bombs).
- Decompression, for zTXt/iTXt too, never produces more than the cap.
"""

from __future__ import annotations

import base64
import binascii
import io
import lzma
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import PurePosixPath

from talekeeper.core.errors import InvalidInput
from talekeeper.services.lore.fields import MAX_FILE_BYTES
from talekeeper.services.lore.report import counted

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")
CARD_CHUNKS = ("ccv3", "chara", "naidata")  # the winner is the first one present
TEXT_CHUNKS = (b"tEXt", b"zTXt", b"iTXt")
KEYWORD_MAX = 79  # the longest keyword the PNG specification allows
# All the unpacking of one PNG's text together: only the winning card chunk is unpacked, so
# this is one card's worth however many compressed chunks the file holds.
MAX_INFLATED_BYTES = MAX_FILE_BYTES
_ZIP_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    NotImplementedError,
    RuntimeError,
    EOFError,
    OSError,
    ValueError,
    zlib.error,
    lzma.LZMAError,
)


@dataclass(frozen=True)
class Unwrapped:
    """The card's JSON bytes, where they were (for messages), and what to tell the player."""

    payload: bytes
    where: str
    notes: tuple[str, ...] = ()


def _inflate(body: bytes, where: str) -> bytes:
    inflater = zlib.decompressobj()
    try:
        out = inflater.decompress(body, MAX_INFLATED_BYTES + 1)
    except zlib.error as exc:
        raise InvalidInput(f"Bad compressed data in {where}: {exc}.") from None
    if len(out) > MAX_INFLATED_BYTES or inflater.unconsumed_tail:
        raise InvalidInput(f"{where} unpacks to more than {MAX_INFLATED_BYTES:,} bytes; refused.")
    return out


@dataclass(frozen=True)
class _CardChunk:
    """A card chunk as the walk found it: its offset, its type, and where its bytes after
    the keyword's NUL lie in the file (not copied, not unpacked)."""

    offset: int
    kind: bytes
    start: int
    end: int


def _card_keyword(data: bytes, start: int, end: int) -> tuple[str, int] | None:
    """The card keyword naming the text chunk whose data is ``data[start:end]``, and where
    the bytes after it begin; None for a chunk of another keyword.

    Only the keyword's bytes are looked at: a chunk of another keyword is never copied or
    unpacked, whatever it holds."""
    nul = data.find(b"\0", start, min(end, start + KEYWORD_MAX + 1))
    if nul < 0:
        return None
    name = data[start:nul].decode("latin-1").lower()
    return (name, nul + 1) if name in CARD_CHUNKS else None


def _walk(data: bytes) -> dict[str, _CardChunk]:
    """The card chunks of a PNG by keyword, the first of each."""
    found: dict[str, _CardChunk] = {}
    pos = len(PNG_MAGIC)
    while pos < len(data):
        if pos + 12 > len(data):
            raise InvalidInput(f"The PNG is truncated: the chunk at byte {pos} is cut off.")
        length = int.from_bytes(data[pos : pos + 4], "big")
        kind = data[pos + 4 : pos + 8]
        end = pos + 12 + length
        if end > len(data):
            raise InvalidInput(
                f"The PNG is truncated: the chunk at byte {pos} runs past the end of the file."
            )
        if kind == b"IEND":
            return found
        if kind in TEXT_CHUNKS:
            body_end = end - 4  # the CRC follows the chunk's data
            card = _card_keyword(data, pos + 8, body_end)
            if card is not None and card[0] not in found:
                found[card[0]] = _CardChunk(pos, kind, card[1], body_end)
        pos = end
    raise InvalidInput("The PNG has no IEND chunk: the file is truncated.")


def _text(data: bytes, chunk: _CardChunk, where: str) -> bytes:
    """The chunk's text bytes, unpacked where its type says so (the one unpacking a PNG
    gets: see the invariants)."""
    rest = data[chunk.start : chunk.end]
    if chunk.kind == b"tEXt":
        return rest
    if chunk.kind == b"zTXt":  # a compression method byte, then the zlib stream
        return _inflate(rest[1:], where)
    # iTXt: compression flag, method, language NUL, translated keyword NUL, text
    compressed = rest[:1] == b"\1"
    _language, _, rest = rest[2:].partition(b"\0")
    _translated, _, text = rest.partition(b"\0")
    return _inflate(text, where) if compressed else text


def png_payload(data: bytes) -> Unwrapped:
    """The card JSON of a PNG character card or NovelAI lorebook image."""
    found = _walk(data)
    keyword = next((k for k in CARD_CHUNKS if k in found), None)
    if keyword is None:
        raise InvalidInput(
            "The PNG holds no character card or lorebook: it has no text chunk named "
            + ", ".join(CARD_CHUNKS)
            + "."
        )
    chunk = found[keyword]
    where = f"the PNG's {chunk.kind.decode()} chunk {keyword!r} at byte {chunk.offset}"
    text = _text(data, chunk, where)
    try:
        payload = base64.b64decode(b"".join(text.split()), validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInput(f"Bad base64 in {where}.") from None
    notes = [f"Read from {where}."]
    if chunk.kind != b"tEXt":
        notes.append(
            f"The card was in a {chunk.kind.decode()} chunk, where tools write tEXt; read it."
        )
    if keyword == "ccv3" and "chara" in found:
        notes.append("The PNG also holds an older 'chara' copy of the card; the ccv3 one won.")
    return Unwrapped(payload, where, tuple(notes))


def _check_members(infos: list[zipfile.ZipInfo]) -> None:
    for info in infos:
        path = PurePosixPath(info.filename.replace("\\", "/"))
        if path.is_absolute() or ".." in path.parts or ":" in info.filename:
            raise InvalidInput(
                f"The ZIP holds a path that leaves its folder ({info.filename!r}); refused."
            )
        if info.flag_bits & 0x1:
            raise InvalidInput(f"The ZIP's member {info.filename!r} is encrypted; refused.")


def charx_payload(data: bytes) -> Unwrapped:
    """``card.json`` of a CHARX character card."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except _ZIP_ERRORS as exc:
        raise InvalidInput(f"The ZIP cannot be read: {exc}.") from None
    _check_members(infos)
    card = next((info for info in infos if info.filename == "card.json"), None)
    if card is None:
        raise InvalidInput("The ZIP has no card.json at its root: it is not a CHARX card.")
    if card.file_size > MAX_FILE_BYTES:
        raise InvalidInput(
            f"card.json unpacks to {card.file_size:,} bytes; the cap is {MAX_FILE_BYTES:,}."
        )
    try:
        with archive.open(card) as member:
            payload = member.read(MAX_FILE_BYTES + 1)
    except _ZIP_ERRORS as exc:
        raise InvalidInput(f"card.json in the ZIP cannot be read: {exc}.") from None
    if len(payload) > MAX_FILE_BYTES:
        raise InvalidInput(f"card.json unpacks to more than {MAX_FILE_BYTES:,} bytes; refused.")
    notes = ["Read card.json from a CHARX archive."]
    others = [i for i in infos if i.filename != "card.json" and not i.is_dir()]
    if others:
        notes.append(f"{counted(len(others), 'other file')} in the archive (assets) not imported.")
    return Unwrapped(payload, "card.json in the CHARX archive", tuple(notes))
