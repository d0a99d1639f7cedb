"""Split a document into passages of bounded token length, each knowing where it came from.

Invariants:

- A passage never spans two sections (a chapter, a heading, a PDF page).
- Within a section, whole paragraphs are merged while the passage fits ``max_tokens``; a
  paragraph over ``max_tokens`` is cut at sentence ends, a sentence over it at word
  boundaries, never mid-word (only a single word longer than the whole budget is cut
  inside, as the last resort). A short last piece (under ``min_tokens``) joins its
  neighbour when together they fit.
- Every passage has ``0 < tokens <= max_tokens`` as counted by the given counter, except
  when one character alone is over the budget.
- Every character of the document's text, apart from whitespace, is in exactly one
  passage, in order. Paragraphs in a passage are separated by a blank line.
- Splitting is linear in the text (an upload is untrusted): the sentence-end pattern has no
  nested quantifiers over the same characters and starts only where a run of end marks
  starts, a word over the budget is cut by galloping from its start, not by halving
  the rest of it for every part, and pieces are grouped the same way (``_merge``), not by
  counting the group again for each piece added.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from talekeeper.core.tokens import TokenCounter
from talekeeper.services.library.documents import Document, Section

# The end kept, the space dropped. A match starts only where a run of end marks starts: a
# try from inside the run would reach the same place and fail the same way, and letting it
# try made a run of dots cost its length squared.
_SENTENCE_END = re.compile(r"(?<![.!?…])([.!?…]++[\"'”’»)\]]*+)\s+")
_PARAGRAPH = "\n\n"


@dataclass(frozen=True)
class Passage:
    ordinal: int
    text: str
    heading_path: tuple[str, ...]
    page: int | None
    tokens: int

    def location(self) -> str:
        """Where the passage came from, e.g. ``Book One › The Harbour, p. 12``."""
        where = " › ".join(self.heading_path)
        if self.page is None:
            return where
        return f"{where}, p. {self.page}" if where else f"p. {self.page}"


@dataclass(frozen=True)
class _Piece:
    text: str
    opens_paragraph: bool  # joined to the piece before with a blank line, else a space


def split_passages(
    document: Document, counter: TokenCounter, max_tokens: int = 200, min_tokens: int = 40
) -> list[Passage]:
    """The document's passages in reading order, numbered from 0."""
    if max_tokens < 1 or not 0 <= min_tokens <= max_tokens:
        raise ValueError("need 1 <= max_tokens and 0 <= min_tokens <= max_tokens")
    passages: list[Passage] = []
    for section in document.sections:
        for text in _section_texts(section, counter, max_tokens, min_tokens):
            passages.append(
                Passage(
                    ordinal=len(passages),
                    text=text,
                    heading_path=section.heading_path,
                    page=section.page,
                    tokens=counter.count(text),
                )
            )
    return passages


def _section_texts(
    section: Section, counter: TokenCounter, max_tokens: int, min_tokens: int
) -> list[str]:
    pieces: list[_Piece] = []
    for paragraph in section.paragraphs:
        if counter.count(paragraph) <= max_tokens:
            pieces.append(_Piece(paragraph, True))
            continue
        cut = _cut_paragraph(paragraph, counter, max_tokens)
        pieces += [_Piece(text, index == 0) for index, text in enumerate(cut)]
    groups = _merge(pieces, counter, max_tokens)
    if len(groups) > 1 and counter.count(_join(groups[-1])) < min_tokens:
        joined = groups[-2] + groups[-1]
        if counter.count(_join(joined)) <= max_tokens:
            groups[-2:] = [joined]
    return [_join(group) for group in groups]


def _join(pieces: list[_Piece]) -> str:
    parts: list[str] = []
    for piece in pieces:
        if parts:
            parts.append(_PARAGRAPH if piece.opens_paragraph else " ")
        parts.append(piece.text)
    return "".join(parts)


def _merge(pieces: list[_Piece], counter: TokenCounter, max_tokens: int) -> list[list[_Piece]]:
    """Consecutive pieces grouped greedily: each group is the longest run from its first
    piece whose joined text fits the budget (at least one piece).

    The run is found by galloping up from two pieces, then halving: a group of g pieces
    costs about 2 log g counts of its text, where trying one more piece at a time cost g
    (a paragraph of a million one-token sentences counted each group's text 200 times).
    A run's text is a slice of all the pieces joined once (the separator before a piece
    depends on that piece alone), not joined again for every try."""
    joined = _join(pieces)
    starts: list[int] = []
    ends: list[int] = []
    at = 0
    for index, piece in enumerate(pieces):
        if index:
            at += len(_PARAGRAPH) if piece.opens_paragraph else 1
        starts.append(at)
        at += len(piece.text)
        ends.append(at)

    def fits(first: int, size: int) -> bool:
        return counter.count(joined[starts[first] : ends[first + size - 1]]) <= max_tokens

    groups: list[list[_Piece]] = []
    first = 0
    while first < len(pieces):
        left = len(pieces) - first
        low, size = 1, 2
        while size <= left and fits(first, size):
            low, size = size, 2 * size
        high = min(size - 1, left)
        while low < high:
            middle = (low + high + 1) // 2
            if fits(first, middle):
                low = middle
            else:
                high = middle - 1
        groups.append(pieces[first : first + low])
        first += low
    return groups


def _cut_paragraph(paragraph: str, counter: TokenCounter, max_tokens: int) -> list[str]:
    """A paragraph over budget cut at sentence ends; a sentence over it at word boundaries."""
    pieces: list[_Piece] = []
    for sentence in _sentences(paragraph):
        if counter.count(sentence) <= max_tokens:
            pieces.append(_Piece(sentence, False))
            continue
        for word in sentence.split(" "):
            if counter.count(word) <= max_tokens:
                pieces.append(_Piece(word, False))
            else:
                pieces += [_Piece(part, False) for part in _cut_word(word, counter, max_tokens)]
    return [" ".join(p.text for p in group) for group in _merge(pieces, counter, max_tokens)]


def _sentences(paragraph: str) -> list[str]:
    parts = _SENTENCE_END.split(paragraph)  # text, end, text, end, ..., text
    sentences = [parts[i] + parts[i + 1] for i in range(0, len(parts) - 1, 2)] + parts[-1:]
    return [sentence for sentence in sentences if sentence]


def _cut_word(word: str, counter: TokenCounter, max_tokens: int) -> list[str]:
    """A single word over the whole budget, cut into the longest prefixes that fit."""
    parts: list[str] = []
    start = 0  # an offset, not a shorter copy: copying the rest for every part is quadratic
    while start < len(word):
        left = len(word) - start
        # The longest prefix that fits, at least one character. Gallop up from short
        # prefixes before halving: a search over the whole rest would count about half the
        # word for every part, and a word of a million dots has thousands of parts.
        low, size = 1, 2
        while size < left and counter.count(word[start : start + size]) <= max_tokens:
            low, size = size, 2 * size
        high = size - 1 if size < left else left
        while low < high:
            middle = (low + high + 1) // 2
            if counter.count(word[start : start + middle]) <= max_tokens:
                low = middle
            else:
                high = middle - 1
        parts.append(word[start : start + low])
        start += low
    return parts
