"""The knowledge library's documents as read: a kind, sections of paragraphs under heading
paths (and pages), and the caps that bound a reading (see ``documents``).

Invariants: a paragraph is non-empty, its whitespace collapsed to single spaces; a section
has at least one paragraph (``sections`` makes none of an empty list).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class DocumentKind(StrEnum):
    TXT = "txt"
    MD = "md"
    HTML = "html"
    PDF = "pdf"
    EPUB = "epub"


@dataclass(frozen=True)
class Section:
    """Paragraphs under one heading path (and, for a PDF, on one page)."""

    heading_path: tuple[str, ...]
    page: int | None
    paragraphs: list[str]


@dataclass(frozen=True)
class Document:
    title: str
    kind: DocumentKind
    sections: list[Section]
    # How the bytes were decoded: "utf-8", "utf-8-sig", "utf-16" or "cp1252" for txt, md
    # and html; None for pdf and epub, whose libraries decode their own text.
    encoding: str | None = None

    @property
    def text(self) -> str:
        return "\n\n".join(p for s in self.sections for p in s.paragraphs)


@dataclass(frozen=True)
class Caps:
    file_bytes: int = 50 * 1024 * 1024
    unpacked_bytes: int = 200 * 1024 * 1024  # all of an EPUB's entries, decompressed
    archive_entries: int = 5_000
    pdf_pages: int = 5_000
    text_chars: int = 20_000_000


CAPS = Caps()
_SPACE = re.compile(r"\s+")
_BLANK_LINES = re.compile(r"\n\s*\n")


def clean(text: str) -> str:
    return _SPACE.sub(" ", text.replace("\x00", "")).strip()


def paragraphs(text: str) -> list[str]:
    cleaned = (clean(block) for block in _BLANK_LINES.split(text.replace("\r\n", "\n")))
    return [p for p in cleaned if p]


def as_sections(path: tuple[str, ...], page: int | None, paragraphs: list[str]) -> list[Section]:
    return [Section(path, page, paragraphs)] if paragraphs else []
