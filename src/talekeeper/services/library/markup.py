"""Markdown and HTML as sections: heading paths from ``#`` headings or ``<h1>``..``<h6>``.

Invariants: nothing in markup is run or kept as markup: scripts, styles and navigation
chrome are dropped, the rest is text; a Markdown code fence is text, never a heading.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from talekeeper.services.library.model import Section, as_sections, clean, paragraphs

# --- Markdown ------------------------------------------------------------------------------

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


class _Outline:
    """Sections under a stack of headings: a heading closes the deeper and equal ones."""

    def __init__(self, base: tuple[str, ...] = ()) -> None:
        self.base = base
        self.stack: list[tuple[int, str]] = []
        self.sections: list[Section] = []
        self.paragraphs: list[str] = []

    def path(self) -> tuple[str, ...]:
        return self.base + tuple(title for _, title in self.stack)

    def close(self) -> None:
        self.sections += as_sections(self.path(), None, self.paragraphs)
        self.paragraphs = []

    def heading(self, level: int, title: str) -> None:
        self.close()
        while self.stack and self.stack[-1][0] >= level:
            self.stack.pop()
        if title:
            self.stack.append((level, title))


def markdown_sections(text: str) -> tuple[str, list[Section]]:
    """The first level-1 heading (the title) and the sections under ``#`` headings."""
    outline, fenced, title = _Outline(), False, ""
    block: list[str] = []

    def flush() -> None:
        outline.paragraphs += paragraphs(_LINK.sub(r"\1", "\n".join(block)))
        block.clear()

    for line in text.replace("\r\n", "\n").split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        heading = None if fenced else _ATX.match(line)
        if heading is None:
            block.append(line)
            continue
        flush()
        words = clean(_LINK.sub(r"\1", heading.group(2) or ""))
        level = len(heading.group(1))
        title = title or (words if level == 1 else "")
        outline.heading(level, words)
    flush()
    outline.close()
    return title, outline.sections


# --- HTML (pages and EPUB chapters) --------------------------------------------------------

_SKIP = {"script", "style", "noscript", "template", "nav", "aside", "footer", "menu", "form"}
_SKIP |= {"svg", "math", "iframe", "object", "embed", "canvas", "select", "button", "head"}
_CHROME_ROLES = {"navigation", "banner", "contentinfo", "search", "complementary"}
_BLOCKS = {"p", "div", "li", "ul", "ol", "dl", "dt", "dd", "blockquote", "pre", "table", "tr"}
_BLOCKS |= {"section", "article", "main", "header", "figure", "figcaption", "hr", "body"}
_BLOCKS |= {"td", "th", "caption", "address", "details", "summary"}
_VOID = {"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "wbr", "source"}


class _HtmlText(HTMLParser):
    def __init__(self, base: tuple[str, ...]) -> None:
        super().__init__(convert_charrefs=True)
        self.outline = _Outline(base)
        self.skipping: list[str] = []
        self.buffer: list[str] = []
        self.heading_level = 0
        self.title: list[str] = []
        self.in_title = False
        self.first_heading = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title" and self.skipping in ([], ["head"]):
            self.in_title = True
            return
        if tag in _VOID:
            self.buffer.append(" ")
            return
        if tag == "body":
            self.skipping.clear()  # a body ends an unclosed head
        named = dict(attrs)
        chrome = named.get("role") in _CHROME_ROLES or "hidden" in named
        if self.skipping or tag in _SKIP or chrome:
            if not self.skipping or tag == self.skipping[0]:
                self.skipping.append(tag)
            return
        if re.fullmatch(r"h[1-6]", tag):
            self.flush()
            self.heading_level = int(tag[1])
        elif tag in _BLOCKS:
            self.flush()

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        elif self.skipping:
            if tag == self.skipping[-1]:
                self.skipping.pop()
        elif self.heading_level and tag == f"h{self.heading_level}":
            words = clean("".join(self.buffer))
            self.buffer.clear()
            self.first_heading = self.first_heading or words
            self.outline.heading(self.heading_level, words)
            self.heading_level = 0
        elif tag in _BLOCKS:
            self.flush()

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
        elif not self.skipping:
            self.buffer.append(data)

    def flush(self) -> None:
        if self.heading_level:
            return  # a block inside a heading stays part of the heading
        words = clean("".join(self.buffer))
        self.buffer.clear()
        if words:
            self.outline.paragraphs.append(words)

    def finish(self) -> list[Section]:
        self.close()
        self.heading_level = 0
        self.flush()
        self.outline.close()
        return self.outline.sections


def html_sections(markup: str, base: tuple[str, ...] = ()) -> tuple[str, list[Section]]:
    """The page's title (``<title>``, else its first heading) and its sections."""
    parser = _HtmlText(base)
    parser.feed(markup)
    sections = parser.finish()
    return clean("".join(parser.title)) or parser.first_heading, sections
