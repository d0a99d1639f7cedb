"""What the summary model is shown of a block: the whole of it, or its opening and its end.

Invariants:

- Text of at most ``budget`` tokens is returned unchanged.
- Longer text becomes ``head + SEPARATED_MARKER + tail``: the opening and the end
  of the block, in order, with the marker on a line of its own between them. The
  newlines around the marker are part of it and are counted with it.
- The split fills the budget exactly: the room left after the marker is halved and
  the odd token goes to the end (``tail = head`` or ``head + 1`` tokens), so with a
  one-character-one-token counter ``count(result) == budget``. With a real BPE
  counter the pieces can re-tokenize differently where they are joined; the split
  is then shrunk until ``count(result) <= budget``, which always holds.
- A budget too small to hold the marker and a token on each side gives the opening
  alone, cut to the budget (no marker the model could copy, and still in budget).
- ``strip_marker`` removes the marker, and the variants a model writes back when it
  copies it (any case, other brackets, "..." or "…", "was" for "is", a bare "[...]"),
  from anything the model returns, and closes the gap it leaves, in time linear in the
  text (a model can write a long run of blanks): the marker's pattern starts at its first
  mark, with no quantifiers over the same characters in a row, and the blanks before it are
  read back once.
"""

from __future__ import annotations

import re

from talekeeper.core.tokens import TokenCounter

# docs/memory.md §2: a block longer than this is shown as its opening and its end
BLOCK_TOKENS = 2000
MARKER = "[... the middle of this passage is left out ...]"
SEPARATED_MARKER = f"\n{MARKER}\n"  # on a line of its own; the newlines count toward the budget
MIN_SIDE_TOKENS = 1  # below one token of opening and one of ending a marker says nothing
MAX_SHRINK_STEPS = 64  # re-tokenizing at the joins costs a token or two; never loop unbounded

_ELLIPSIS = r"(?:\.\s*\.\s*\.|…)"
_MARKER_WORDS = (
    r"(?:the\s+)?middle\s+of\s+(?:this|the)\s+(?:passage|text|block)\s+"
    r"(?:is|was|has\s+been)\s+(?:left\s+out|omitted)"
)
_COPY = rf"(?:{_ELLIPSIS}\s*)?{_MARKER_WORDS}\s*(?:{_ELLIPSIS}\s*)?[\])>}}]?"
# The marker from its first mark on, and the blanks after it. The blanks before it go with
# it too, but they are found by reading back from its first mark (``_markers``): a pattern
# that began with them was tried from every blank of a run and read the run again each
# time, in more than one way (``\s*`` after ``[ \t\n]*``): cubic in the run's length.
_MARKER_PATTERN = re.compile(
    r"(?:"
    rf"[\[(<{{]\s*{_COPY}"
    rf"|{_COPY}"
    rf"|[\[(]\s*{_ELLIPSIS}\s*[\])]"  # a bare bracketed ellipsis: the marker, shortened
    r")"
    r"[ \t\n]*+",  # and the whitespace after it
    re.IGNORECASE,
)
_OPENING_BRACKETS = "[(<{"
_PUNCTUATION_AFTER = ".,;:!?)]}”’"  # no space between a word and what closes it (a straight
# quote could open the next sentence, so it keeps its space)


def excerpt(text: str, counter: TokenCounter, budget: int = BLOCK_TOKENS) -> str:
    """``text`` if it fits ``budget`` tokens, else its opening and end around the marker."""
    if counter.count(text) <= budget:
        return text
    room = budget - counter.count(SEPARATED_MARKER)
    if room < 2 * MIN_SIDE_TOKENS:
        return counter.head(text, budget)
    for _ in range(MAX_SHRINK_STEPS):
        head_tokens = room // 2
        tail_tokens = room - head_tokens  # the odd token goes to the end
        joined = (
            counter.head(text, head_tokens) + SEPARATED_MARKER + counter.tail(text, tail_tokens)
        )
        over = counter.count(joined) - budget
        if over <= 0:
            return joined
        room -= over
        if room < 2 * MIN_SIDE_TOKENS:
            break
    return counter.head(text, budget)


def _markers(text: str) -> list[tuple[int, int]]:
    """Where the markers are, with the blanks around them, in order: the spans the pattern
    did replace when it began with the blanks. Before a bracket only spaces, tabs and line
    breaks go with the marker; before an unbracketed copy any white space does. Never back
    past the previous marker."""
    spans: list[tuple[int, int]] = []
    done = 0
    for match in _MARKER_PATTERN.finditer(text):
        start, end = match.span()
        before = text[done:start]
        if text[start] in _OPENING_BRACKETS:
            start = done + len(before.rstrip(" \t\n"))
        else:
            start = done + len(before.rstrip())
        spans.append((start, end))
        done = end
    return spans


def strip_marker(text: str) -> str:
    """``text`` without the excerpt marker or a copy of it; the gap closes to one space
    (one newline where the marker stood on a line of its own), and nothing at either end
    or before punctuation."""
    out: list[str] = []
    done = 0
    for start, end in _markers(text):
        out.append(text[done:start])
        if start > 0 and end < len(text) and text[end] not in _PUNCTUATION_AFTER:
            out.append("\n" if "\n" in text[start:end] else " ")
        done = end
    out.append(text[done:])
    return "".join(out).strip()
