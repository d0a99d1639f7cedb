"""Documents built in the tests (PDFs with fpdf2 and pypdf, EPUBs with ebooklib, ZIPs with
zipfile): no binary fixture is copied from anywhere."""

from __future__ import annotations

import io
import random
import struct
import zipfile
import zlib
from typing import Any

from ebooklib import epub
from fpdf import FPDF
from pypdf import PdfReader, PdfWriter
from pypdf.generic import DictionaryObject, NameObject, StreamObject


def pdf(pages: list[tuple[str | None, int, list[str]]], *, title: str | None = None) -> bytes:
    """One page per (outline heading or None, outline level, paragraphs)."""
    document = FPDF()
    document.set_font("helvetica", size=11)
    if title:
        document.set_title(title)
    for heading, level, paragraphs in pages:
        document.add_page()
        if heading:
            document.start_section(heading, level=level)
            document.multi_cell(0, 8, text=heading)
            document.ln()
        for paragraph in paragraphs:
            document.multi_cell(0, 6, text=paragraph)
            document.ln()
    return bytes(document.output())


def blank_pdf(pages: int = 1) -> bytes:
    """Pages without any text, like a scan."""
    document = FPDF()
    for _ in range(pages):
        document.add_page()
        document.rect(20, 20, 50, 50)
    return bytes(document.output())


def encrypted(data: bytes, password: str = "secret") -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password=password, owner_password="owner", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def chapter(file_name: str, title: str, body: str) -> Any:
    item = epub.EpubHtml(title=title, file_name=file_name, lang="en")
    item.content = f"<html><body>{body}</body></html>"
    return item


def ebook(chapters: list[Any], toc: list[Any] | None = None, *, title: str = "Tales") -> bytes:
    book = epub.EpubBook()
    book.set_identifier("talekeeper-test")
    book.set_title(title)
    book.set_language("en")
    for item in chapters:
        book.add_item(item)
    book.toc = toc if toc is not None else chapters
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *chapters]
    out = io.BytesIO()
    epub.write_epub(out, book)
    return out.getvalue()


def zip_of(entries: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, body in entries.items():
            archive.writestr(name, body)
    return out.getvalue()


# --- hostile files: what a player may upload to exhaust the server ---------------------------


def zeros_deflated(mib: int) -> bytes:
    """A raw deflate stream that inflates to ``mib`` MiB of zeros (about 1,000 to 1), made
    by repeating one fully flushed block instead of compressing the whole."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    block = packer.compress(bytes(1 << 20)) + packer.flush(zlib.Z_FULL_FLUSH)
    return block * mib + packer.flush()


def raw_zip(members: list[tuple[str, bytes, int, int, int]]) -> bytes:
    """A ZIP written by hand from (name, stored bytes, method, declared size, CRC), so a
    member may declare any size and CRC whatever its bytes inflate to."""
    body, directory = io.BytesIO(), io.BytesIO()
    for name, stored, method, size, crc in members:
        encoded = name.encode()
        fields = struct.pack("<HHHHHIII", 20, 0, method, 0, 0, crc, len(stored), size)
        directory.write(
            b"PK\x01\x02"
            + struct.pack("<H", 20)
            + fields
            + struct.pack("<HHHHHII", len(encoded), 0, 0, 0, 0, 0, body.tell())
            + encoded
        )
        body.write(b"PK\x03\x04" + fields + struct.pack("<HH", len(encoded), 0) + encoded)
        body.write(stored)
    offset, size = body.tell(), directory.tell()
    count = len(members)
    end = b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, count, count, size, offset, 0)
    return body.getvalue() + directory.getvalue() + end


def lying_epub(mib: int, declared: int = 100, *, crc_of_prefix: bool = True) -> bytes:
    """A real EPUB whose chapter declares ``declared`` bytes but inflates to ``mib`` MiB of
    zeros. Its CRC is that of the declared prefix, so a reader that stops at the declared
    size sees nothing wrong (``crc_of_prefix=False``: a CRC that matches nothing)."""
    book = ebook([chapter("c.xhtml", "C", "<p>Small.</p>")])
    members = []
    with zipfile.ZipFile(io.BytesIO(book)) as archive:
        for info in archive.infolist():
            body = archive.read(info)
            if info.filename.endswith("c.xhtml"):
                crc = zlib.crc32(bytes(declared)) if crc_of_prefix else 1234
                members.append(
                    (info.filename, zeros_deflated(mib), zipfile.ZIP_DEFLATED, declared, crc)
                )
            else:
                members.append(
                    (info.filename, body, zipfile.ZIP_STORED, len(body), zlib.crc32(body))
                )
    return raw_zip(members)


def empty_tags_epub(tags: int, words_every: int = 0) -> bytes:
    """An EPUB whose one chapter is ``tags`` empty paragraphs; every ``words_every``-th
    holds a few random words instead, which lowers how far it packs. The chapter is put in
    after ebooklib wrote the book (its writer would take minutes over millions of tags)."""
    rng = random.Random(7)
    parts = []
    for n in range(tags):
        if words_every and n % words_every == 0:
            parts.append("<p>" + " ".join(f"{rng.getrandbits(40):x}" for _ in range(3)) + "</p>")
        else:
            parts.append("<p></p>")
    markup = f"<html><body>{''.join(parts)}</body></html>".encode()
    book = ebook([chapter("c.xhtml", "C", "<p>Small.</p>")])
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(book)) as source, zipfile.ZipFile(out, "w") as archive:
        for info in source.infolist():
            body = markup if info.filename.endswith("c.xhtml") else source.read(info)
            method = zipfile.ZIP_STORED if info.filename == "mimetype" else zipfile.ZIP_DEFLATED
            archive.writestr(info.filename, body, method, 9)
    return out.getvalue()


def shared_stream_pdf(pages: int, operators: int) -> bytes:
    """A PDF of ``pages`` pages that all draw one content stream of ``operators`` state
    changes and a line of text: small on disk, each page read anew by the text extractor."""
    writer = PdfWriter()
    first = writer.add_blank_page(612, 792)
    ops = b"q 1 0 0 1 0 0 cm Q\n" * operators + b"BT /F1 12 Tf 72 720 Td (Shared words.) Tj ET"
    stream = StreamObject()
    stream.set_data(ops)
    stream = stream.flate_encode()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    resources = DictionaryObject(
        {NameObject("/Font"): DictionaryObject({NameObject("/F1"): writer._add_object(font)})}
    )
    shared, shared_resources = writer._add_object(stream), writer._add_object(resources)
    first[NameObject("/Contents")] = shared
    first[NameObject("/Resources")] = shared_resources
    for _ in range(pages - 1):
        page = writer.add_blank_page(612, 792)
        page[NameObject("/Contents")] = shared
        page[NameObject("/Resources")] = shared_resources
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def png(text: dict[str, str], size: int = 4) -> bytes:
    """A grey ``size`` x ``size`` PNG, written chunk by chunk, with ``tEXt`` chunks (where
    a character card keeps its base64 JSON)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body)
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", size, size, 8, 0, 0, 0, 0)  # 8-bit greyscale
    pixels = zlib.compress(b"".join(b"\x00" + b"\x80" * size for _ in range(size)))
    texts = b"".join(chunk(b"tEXt", k.encode() + b"\x00" + v.encode()) for k, v in text.items())
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + texts
        + chunk(b"IDAT", pixels)
        + chunk(b"IEND", b"")
    )
