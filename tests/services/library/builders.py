"""Documents built in the tests (PDFs with fpdf2 and pypdf, EPUBs with ebooklib, ZIPs with
zipfile): no binary fixture is copied from anywhere."""

from __future__ import annotations

import io
import zipfile
from typing import Any

from ebooklib import epub
from fpdf import FPDF
from pypdf import PdfReader, PdfWriter


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
