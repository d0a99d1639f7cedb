"""The bounded ZIP reader: each member inflated in pieces, never past what it declares;
lying sizes, bad CRCs, tight packing, hostile paths and directories refused with what is
wrong; an honest archive read to the very bytes zipfile reads."""

from __future__ import annotations

import io
import tracemalloc
import zipfile
import zlib

import pytest
from tests.services.library import builders

from talekeeper.core.errors import InvalidInput
from talekeeper.services.common import archives
from talekeeper.services.library import read_document

pytestmark = pytest.mark.no_database

LIMITS = archives.Limits(entries=100, unpacked_bytes=200 * 1024 * 1024)
_MB = 1024 * 1024


def refusal(data: bytes, limits: archives.Limits = LIMITS) -> str:
    with pytest.raises(InvalidInput) as refused:
        archives.verify(data, "f.zip", archives.members(data, "f.zip", "an EPUB", limits))
    return refused.value.message


def deflated(body: bytes) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return packer.compress(body) + packer.flush()


def test_an_honest_archive_reads_as_zipfile_reads_it() -> None:
    bodies = {"a.txt": b"alpha " * 50_000, "b/c.bin": bytes(range(256)) * 700, "empty": b""}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for number, (name, body) in enumerate(bodies.items()):
            archive.writestr(name, body, (zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED)[number % 2])
    data = out.getvalue()
    infos = archives.members(data, "f.zip", "a ZIP", LIMITS)
    archives.verify(data, "f.zip", infos)
    assert {i.filename: archives.unpack(data, "f.zip", i) for i in infos} == bodies
    pieces = list(archives.pieces(data, "f.zip", infos[0]))
    assert max(len(p) for p in pieces) <= archives.CHUNK and len(pieces) > 1


@pytest.mark.parametrize("prefix_crc", [True, False], ids=["crc-of-prefix", "bad-crc"])
def test_a_member_that_inflates_past_its_declared_size_is_refused_at_once(
    prefix_crc: bool,
) -> None:
    data = builders.lying_epub(256, crc_of_prefix=prefix_crc)  # 100 bytes declared
    tracemalloc.start()
    try:
        message = refusal(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "unpacks to more than the 100 bytes it declares" in message, message
    assert "EPUB/c.xhtml" in message and message.startswith("f.zip cannot be read")
    assert peak < 2 * _MB  # a piece at a time, never the 256 MiB


def test_a_member_short_of_its_declared_size_or_with_another_crc_is_refused() -> None:
    body = b"the words of a chapter " * 10
    short = builders.raw_zip([("a", deflated(body), 8, len(body) + 5, zlib.crc32(body))])
    assert f"unpacks to {len(body):,} bytes, not the {len(body) + 5:,}" in refusal(short)
    damaged = builders.raw_zip([("a", deflated(body), 8, len(body), zlib.crc32(body) ^ 1)])
    assert "fails its CRC check" in refusal(damaged)
    stored = builders.raw_zip([("a", body, 0, 10, zlib.crc32(body[:10]))])
    assert "unpacks to more than the 10 bytes" in refusal(stored)
    cut = builders.raw_zip([("a", deflated(body)[:-4], 8, len(body), zlib.crc32(body))])
    assert "is badly packed" in refusal(cut)


def test_a_member_packed_tighter_than_the_ratio_is_refused_before_it_is_inflated() -> None:
    big = 8 * _MB
    bomb = builders.raw_zip([("a", builders.zeros_deflated(8), 8, big, zlib.crc32(bytes(big)))])
    message = refusal(bomb)
    assert "unpacks to 8 MB from" in message and "at most 100 to 1" in message, message
    # The same member under a looser limit is read: the ratio is the only refusal.
    loose = archives.Limits(LIMITS.entries, LIMITS.unpacked_bytes, ratio=2000)
    archives.verify(bomb, "f.zip", archives.members(bomb, "f.zip", "a ZIP", loose))
    # Small members pack as they like.
    small = builders.raw_zip([("a", deflated(bytes(1000)), 8, 1000, zlib.crc32(bytes(1000)))])
    archives.verify(small, "f.zip", archives.members(small, "f.zip", "a ZIP", LIMITS))


def test_paths_encryption_and_methods_are_refused() -> None:
    assert "outside the archive" in refusal(builders.zip_of({"../up.txt": b"x"}))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_BZIP2) as archive:
        archive.writestr("a.txt", b"words")
    assert "packed with method 12" in refusal(out.getvalue())
    locked = bytearray(builders.zip_of({"a.txt": b"words"}))
    at = locked.index(b"PK\x01\x02") + 8  # the directory entry's flags
    locked[at] |= 1
    assert "is encrypted" in refusal(bytes(locked))


def test_a_directory_of_more_entries_than_allowed_is_refused_before_it_is_parsed() -> None:
    data = builders.zip_of({f"f{n}": b"" for n in range(30)})
    assert "holds 30 files; an EPUB may hold up to 20" in refusal(
        data, archives.Limits(entries=20, unpacked_bytes=_MB)
    )
    assert "cannot be read" in refusal(b"PK\x03\x04 not a zip at all")


def test_the_lying_epub_costs_the_reader_almost_no_memory() -> None:
    data = builders.lying_epub(2048)  # 2 MB, inflating to 2 GiB
    tracemalloc.start()
    try:
        with pytest.raises(InvalidInput) as refused:
            read_document(data, "lying.epub")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "unpacks to more than the 100 bytes it declares" in refused.value.message
    assert refused.value.message.startswith("lying.epub cannot be read")
    assert peak < 16 * _MB, peak  # the 2 MB file's views and one piece; never the 2 GiB


def test_the_empty_tags_epub_is_refused_by_its_packing() -> None:
    data = builders.empty_tags_epub(60 * _MB // 7)  # 93 KB, 60 MiB of <p></p>
    assert len(data) < 100_000
    with pytest.raises(InvalidInput) as refused:
        read_document(data, "empty.epub")
    assert "at most 100 to 1" in refused.value.message, refused.value.message
