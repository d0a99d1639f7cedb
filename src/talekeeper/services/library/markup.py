"""Markdown and HTML as sections: heading paths from ``#`` headings or ``<h1>``..``<h6>``.

Invariants: nothing in markup is run or kept as markup: scripts, styles and navigation
chrome are dropped, the rest is text; a Markdown code fence is text, never a heading.
Reading Markdown is linear in the text (an upload is untrusted): its patterns have no
nested or overlapping quantifiers over the same characters, and links are found by a scan.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from talekeeper.services.library.model import Section, as_sections, clean, paragraphs

# --- Markdown ------------------------------------------------------------------------------

# The heading's text is taken whole and trimmed by ``_heading_words``: a lazy ``(.*?)`` tried
# the closing ``#``s and trailing blanks at every character, which a long run of blanks in
# a heading made quadratic.
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*))?$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


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


def _heading_words(text: str) -> str:
    """An ATX heading's text without its closing sequence: the trailing blanks, and a run of
    ``#`` after a blank ("## Title ##" -> "Title"; "# C#" keeps its "#")."""
    text = text.rstrip(" \t")
    bare = text.rstrip("#")
    if len(bare) < len(text) and bare[-1:] in (" ", "\t"):
        return bare.rstrip(" \t")
    return text


def _unlink(text: str) -> str:
    """``text`` with each Markdown link or image, ``[words](target)`` or ``![words](target)``,
    as its words: the first "]" after a "[" closes it, the first ")" after "](" ends it.

    A scan with ``find``, not a regex: a regex tries each "[" anew and reads on to the next
    "]" (and from there to the next ")"), so a run of "[" with no "]" was quadratic. Every
    "[" before a "]" shares that "]", so when it fails they all do and the scan skips past
    it; with no "]" or no ")" left, no link is left either."""
    out: list[str] = []
    done = 0  # text[:done] is in out
    at = text.find("[")
    while at != -1:
        close = text.find("]", at + 1)
        if close == -1:
            break
        if not text.startswith("(", close + 1):
            at = text.find("[", close + 1)
            continue
        end = text.find(")", close + 2)
        if end == -1:
            break
        start = at - 1 if at > done and text[at - 1] == "!" else at
        out += [text[done:start], text[at + 1 : close]]
        done = end + 1
        at = text.find("[", done)
    out.append(text[done:])
    return "".join(out)


def markdown_sections(text: str) -> tuple[str, list[Section]]:
    """The first level-1 heading (the title) and the sections under ``#`` headings."""
    outline, fenced, title = _Outline(), False, ""
    block: list[str] = []

    def flush() -> None:
        outline.paragraphs += paragraphs(_unlink("\n".join(block)))
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
        words = clean(_unlink(_heading_words(heading.group(2) or "")))
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
