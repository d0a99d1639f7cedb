"""Files the lore tests build themselves: PNG images with card chunks, CHARX zips, and small
JSON lorebooks, so that no fixture has to be a binary file."""

from __future__ import annotations

import base64
import io
import json
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

from talekeeper.core.errors import InvalidInput
from talekeeper.services.lore import LoreImport, ScenarioDraft, read_lore

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "lore"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def fixture_json(name: str) -> Any:
    return json.loads(fixture(name))


def chunk(kind: bytes, data: bytes) -> bytes:
    """One PNG chunk: length, type, data, CRC."""
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encoded(value: Any) -> bytes:
    return base64.b64encode(json.dumps(value).encode("utf-8"))


def text_chunk(keyword: str, value: Any) -> bytes:
    return chunk(b"tEXt", keyword.encode("latin-1") + b"\0" + encoded(value))


def ztxt_chunk(keyword: str, value: Any) -> bytes:
    return chunk(b"zTXt", keyword.encode("latin-1") + b"\0\0" + zlib.compress(encoded(value)))


def itxt_chunk(keyword: str, value: Any, *, compressed: bool) -> bytes:
    text = zlib.compress(encoded(value)) if compressed else encoded(value)
    flag = b"\1\0" if compressed else b"\0\0"
    return chunk(b"iTXt", keyword.encode("latin-1") + b"\0" + flag + b"en\0\0" + text)


def png(*chunks: bytes, end: bool = True) -> bytes:
    """A 1x1 grey PNG holding ``chunks`` between its image data and its end."""
    header = chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0))
    pixels = chunk(b"IDAT", zlib.compress(b"\0\x80"))
    return PNG_MAGIC + header + pixels + b"".join(chunks) + (chunk(b"IEND", b"") if end else b"")


def junk_chunks(count: int, unpacked: int) -> bytes:
    """``count`` compressed zTXt chunks of keywords no card format uses, each unpacking to
    ``unpacked`` bytes: what a hostile file pads itself with."""
    stream = zlib.compress(b"\0" * unpacked, 9)  # one stream, shared: building stays cheap
    return b"".join(
        chunk(b"zTXt", f"Comment {i}".encode() + b"\0\0" + stream) for i in range(count)
    )


def charx(card: Any, **others: bytes) -> bytes:
    """A CHARX zip: ``card.json`` and any other members (name -> bytes)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        body = card if isinstance(card, bytes) else json.dumps(card).encode("utf-8")
        archive.writestr("card.json", body)
        for name, data in others.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def lore(value: Any, filename: str = "test.json", **options: Any) -> LoreImport:
    """``read_lore`` of a JSON value."""
    return read_lore(json.dumps(value).encode("utf-8"), filename, **options)


def refusal(data: bytes, filename: str = "test.json") -> str:
    """The message ``read_lore`` refuses ``data`` with (fails when it does not)."""
    try:
        read_lore(data, filename)
    except InvalidInput as exc:
        return exc.message
    raise AssertionError("the file was read; a refusal was expected")


def messages(result: LoreImport | ScenarioDraft, level: str) -> list[str]:
    return [item.message for item in result.report.items if item.level == level]
