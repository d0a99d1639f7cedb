"""Read an uploaded document (.txt, .md, .html, .pdf, .epub) into sections of paragraphs.

Invariants:

- The kind is recognised by content first (``%PDF-``; a ZIP whose ``mimetype`` entry is
  ``application/epub+zip``; markup with html/body/p/h1... tags); the file name's extension
  only tells Markdown from plain text.
- Every cap in ``Caps`` is checked before the work it bounds: the file's size before
  anything is decoded, an archive's entry count, declared sizes and paths before any entry
  is decompressed, a PDF's page count before any page is read, the text's length as it grows.
- An EPUB's every member is inflated in bounded pieces and checked (``services.common.archives``:
  never past its declared size + 1, its CRC, at most 100 to 1 once over 1 MB) before
  ebooklib sees the file; ebooklib then reads exactly the bytes that were checked.
- Bytes that are no text are refused before they are decoded, naming what they look like:
  a known image, audio, archive or program signature, or NUL bytes that are not UTF-16's.
- This module bounds the input, not the time a reader takes over it: uploads are read in
  a child process with CPU and memory limits (``services.library.parsing``). A
  ``MemoryError`` is passed on for that reader to tell.
- ``read_document`` returns a ``Document`` or raises ``InvalidInput`` whose message says what
  to do; no other exception leaves it, whatever the bytes, but ``MemoryError``. The
  libraries' errors are caught at that boundary only.
- Nothing in a document is run: scripts, styles and navigation chrome are dropped.
- Paragraphs are non-empty with whitespace collapsed to single spaces; sections without
  paragraphs are dropped; a document without any paragraph is refused.
"""

from __future__ import annotations

import io
import re
from pathlib import PurePosixPath
from typing import Any

from talekeeper.core.errors import InvalidInput
from talekeeper.services.common import archives
from talekeeper.services.library.markup import html_sections, markdown_sections
from talekeeper.services.library.model import (
    CAPS,
    Caps,
    Document,
    DocumentKind,
    Section,
    as_sections,
    clean,
    paragraphs,
)

_MB = 1024 * 1024
_MIMETYPE_MAX = 100  # "application/epub+zip" and some whitespace
_TAGS = re.compile(r"<(?:!doctype\s+html|html|head|body|p|div|h[1-6]|title|article)\b", re.I)
_SPACE = re.compile(r"\s+")
_BLANK_LINES = re.compile(r"\n\s*\n")


def read_document(data: bytes, filename: str, *, caps: Caps = CAPS) -> Document:
    """The document in ``data``; ``filename`` gives its title and tells .md from .txt."""
    name = PurePosixPath(filename.replace("\\", "/")).name or "document"
    if len(data) > caps.file_bytes:
        raise InvalidInput(
            f"{name} is {len(data) / _MB:.1f} MB; the library takes files up to "
            f"{caps.file_bytes / _MB:.0f} MB. Split it into smaller files."
        )
    try:
        document = _read(data, name, caps)
    except (InvalidInput, MemoryError):  # out of memory is the bounded reader's to tell
        raise
    except Exception as exc:  # the libraries' own errors, at this one boundary
        reason = (str(exc) or type(exc).__name__)[:200]
        raise InvalidInput(
            f"{name} cannot be read: {reason}. Check that the file is complete, or export "
            "it again from the program that made it."
        ) from exc
    if not document.sections:
        raise InvalidInput(f"{name} has no text to read. Upload a document that contains text.")
    return document


def _read(data: bytes, name: str, caps: Caps) -> Document:
    if data[:1024].find(b"%PDF-") != -1:
        return _read_pdf(data, name, caps)
    if data.startswith(b"PK\x03\x04"):
        return _read_epub(data, name, caps)
    _check_not_binary(data, name)
    text, encoding = decode_text(data)
    stem = PurePosixPath(name).stem or name
    if text.lstrip().startswith("<") and _TAGS.search(text[:4096]):
        title, sections = html_sections(text)
        _check_chars(sum(len(p) for s in sections for p in s.paragraphs), name, caps)
        return Document(title or stem, DocumentKind.HTML, sections, encoding)
    _check_chars(len(text), name, caps)
    if PurePosixPath(name).suffix.lower() in {".md", ".markdown", ".mdown", ".mkd"}:
        title, sections = markdown_sections(text)
        return Document(title or stem, DocumentKind.MD, sections, encoding)
    return Document(stem, DocumentKind.TXT, as_sections((), None, paragraphs(text)), encoding)


# Formats a text never starts with, each with what to call it. PDF and ZIP are read above.
_MAGICS: tuple[tuple[int, bytes, str], ...] = (
    (0, b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (0, b"\xff\xd8\xff", "a JPEG image"),
    (0, b"GIF87a", "a GIF image"),
    (0, b"GIF89a", "a GIF image"),
    (8, b"WEBP", "a WebP image"),
    (0, b"II*\x00", "a TIFF image"),
    (0, b"MM\x00*", "a TIFF image"),
    (4, b"ftyp", "a video or an HEIC/AVIF image"),
    (0, b"OggS", "an Ogg audio file"),
    (0, b"ID3", "an MP3 audio file"),
    (0, b"fLaC", "a FLAC audio file"),
    (8, b"WAVE", "a WAV audio file"),
    (0, b"\x1f\x8b", "a gzip archive"),
    (0, b"BZh", "a bzip2 archive"),
    (0, b"\xfd7zXZ\x00", "an xz archive"),
    (0, b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
    (0, b"Rar!\x1a\x07", "a RAR archive"),
    (0, b"\x28\xb5\x2f\xfd", "a Zstandard archive"),
    (0, b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Microsoft Office document"),
    (0, b"SQLite format 3\x00", "an SQLite database"),
    (0, b"\x7fELF", "a program (ELF)"),
    (0, b"MZ\x90\x00", "a Windows program"),  # the usual DOS stub: no text starts so
    (0, b"\xca\xfe\xba\xbe", "a Java class or macOS program"),
    (0, b"\xcf\xfa\xed\xfe", "a macOS program"),
    (0, b"\x00asm", "a WebAssembly program"),
)
_SNIFF_BYTES = 64 * 1024


def _check_not_binary(data: bytes, name: str) -> None:
    """Refuse an image, archive or program under a text name: decoded, its bytes would be
    stored as text (a PNG character card holds pages of base64 that pass as words)."""
    looks = next((what for at, magic, what in _MAGICS if data[at:].startswith(magic)), None)
    if looks is not None:
        raise InvalidInput(_not_text(name, f"it looks like {looks}"))
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return  # UTF-16 with its mark: NULs are half its ASCII
    head = data[:_SNIFF_BYTES]
    nuls = head.count(0)
    # UTF-16 without a mark has its NULs on one side of each pair (ASCII as 'a\0'); a
    # binary format has them everywhere. A stray NUL or two (a cut log) is let through.
    odd = head[1::2].count(0)
    if nuls > 2 and max(odd, nuls - odd) < 0.9 * nuls:
        raise InvalidInput(
            _not_text(name, f"it holds NUL bytes ({nuls:,} in its first {len(head):,} bytes)")
        )


def _not_text(name: str, why: str) -> str:
    return (
        f"{name} is not a text document: {why}. Upload a .txt, .md, .html, .pdf or .epub "
        "file (save or export it as text first)."
    )


def decode_text(data: bytes) -> tuple[str, str]:
    """UTF-8 (with or without BOM), else UTF-16 with BOM, else cp1252; and which it was."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace"), "utf-8-sig"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace"), "utf-16"
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace"), "cp1252"


def _check_chars(count: int, name: str, caps: Caps) -> None:
    if count > caps.text_chars:
        raise InvalidInput(
            f"{name} holds more than {caps.text_chars:,} characters of text; the library "
            "takes less per file. Split it into several files."
        )


# --- PDF -----------------------------------------------------------------------------------


def _read_pdf(data: bytes, name: str, caps: Caps) -> Document:
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted and not reader.decrypt(""):
        raise InvalidInput(
            f"{name} is protected by a password. Save an unprotected copy and upload that."
        )
    if len(reader.pages) > caps.pdf_pages:
        raise InvalidInput(
            f"{name} has {len(reader.pages):,} pages; the library takes up to "
            f"{caps.pdf_pages:,}. Split it into smaller files."
        )
    starts = _pdf_outline(reader, reader.outline, ())
    sections: list[Section] = []
    path: tuple[str, ...] = ()
    total = 0
    for number, page in enumerate(reader.pages, start=1):
        text = page.extract_text() or ""
        total += len(text)
        _check_chars(total, name, caps)
        for title_path, before, after in _split_at_headings(text, starts.get(number - 1, [])):
            sections += as_sections(path, number, _pdf_paragraphs(before))
            path, text = title_path, after
        sections += as_sections(path, number, _pdf_paragraphs(text))
    if not sections:
        raise InvalidInput(
            f"{name} has no text that can be extracted; it may be a scan: run OCR first "
            "(for example with OCRmyPDF) and upload the result."
        )
    metadata = reader.metadata
    title = metadata.title if metadata is not None and isinstance(metadata.title, str) else ""
    return Document(clean(title) or PurePosixPath(name).stem, DocumentKind.PDF, sections)


def _pdf_outline(
    reader: Any, items: Any, parent: tuple[str, ...]
) -> dict[int, list[tuple[str, ...]]]:
    """Page index -> the outline entries (heading paths) that start on it, in order."""
    starts: dict[int, list[tuple[str, ...]]] = {}
    last = parent
    for item in items:
        if isinstance(item, list):
            for page, paths in _pdf_outline(reader, item, last).items():
                starts.setdefault(page, []).extend(paths)
            continue
        last = parent + (clean(str(item.title or "")),)
        page = reader.get_destination_page_number(item)
        if page is not None and page >= 0:
            starts.setdefault(page, []).append(last)
    return starts


def _split_at_headings(
    text: str, paths: list[tuple[str, ...]]
) -> list[tuple[tuple[str, ...], str, str]]:
    """(path, text before its heading, text from it on) for each heading starting here."""
    cuts = []
    for path in paths:
        at = text.find(path[-1]) if path[-1] else -1
        at = max(at, 0)
        cuts.append((path, text[:at], text[at:]))
        text = text[at:]
    return cuts


def _pdf_paragraphs(text: str) -> list[str]:
    return paragraphs(re.sub(r"(\w)-\n(?=[a-z])", r"\1", text))


# --- EPUB ----------------------------------------------------------------------------------


def _read_epub(data: bytes, name: str, caps: Caps) -> Document:
    _check_archive(data, name, caps)
    from ebooklib import epub

    # Every member was inflated within its declared size above: ebooklib's unbounded
    # ZipFile.read now reads exactly the bytes that were verified.
    book = epub.read_epub(io.BytesIO(data), options={"ignore_ncx": False})
    toc = _toc_paths(book.toc, ())
    sections: list[Section] = []
    total = 0
    for idref, _linear in book.spine:
        item = book.get_item_with_id(idref)
        if item is None or isinstance(item, epub.EpubNav) or not item.get_name():
            continue
        base = toc.get(item.get_name(), ())
        markup = bytes(item.content or b"").decode("utf-8", errors="replace")
        _title, chapter = html_sections(markup)
        for section in chapter:
            path = section.heading_path
            if base and path[: len(base[-1:])] == base[-1:]:
                path = path[1:]  # the chapter's own heading repeats its TOC entry
            sections.append(Section(base + path, None, section.paragraphs))
            total += sum(len(p) for p in section.paragraphs)
        _check_chars(total, name, caps)
    titles = book.get_metadata("DC", "title")
    title = clean(str(titles[0][0])) if titles else ""
    return Document(title or PurePosixPath(name).stem, DocumentKind.EPUB, sections)


def _check_archive(data: bytes, name: str, caps: Caps) -> None:
    """Refuse a ZIP that is no EPUB, a zip bomb, a member that lies about its size or a path
    out of the archive; every member is inflated in bounded pieces and dropped."""
    limits = archives.Limits(caps.archive_entries, caps.unpacked_bytes)
    entries = archives.members(data, name, "an EPUB", limits)
    mimetype = next((e for e in entries if e.filename == "mimetype"), None)
    kind = b""
    if mimetype is not None and mimetype.file_size <= _MIMETYPE_MAX:
        kind = archives.unpack(data, name, mimetype).strip()
    if kind != b"application/epub+zip":
        raise InvalidInput(
            f"{name} is a ZIP archive, not an EPUB. Upload the .txt, .md, .html, .pdf or "
            ".epub files inside it one by one."
        )
    archives.verify(data, name, entries)


def _toc_paths(items: Any, parent: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    """Chapter file -> its path of TOC titles (parts above chapters); the first entry wins."""
    paths: dict[str, tuple[str, ...]] = {}
    for item in items if isinstance(items, list | tuple) else [items]:
        node, children = item if isinstance(item, tuple | list) else (item, [])
        path = parent + (clean(str(getattr(node, "title", "") or "")),)
        href = str(getattr(node, "href", "") or "").split("#")[0]
        if href:
            paths.setdefault(href, path)
        for key, value in _toc_paths(children, path).items():
            if paths.get(key) in (None, path):  # a part's link to its first chapter yields
                paths[key] = value
    return paths


__all__ = ["CAPS", "Caps", "Document", "DocumentKind", "Section", "read_document"]
