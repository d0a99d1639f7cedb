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
  from anything the model returns, and closes the gap it leaves.
"""

from __future__ import annotations

import re

from talekeeper.core.tokens import TokenCounter

BLOCK_TOKENS = 2000  # memory.md §2: a block longer than this is shown as its opening and its end
MARKER = "[... the middle of this passage is left out ...]"
SEPARATED_MARKER = f"\n{MARKER}\n"  # on a line of its own; the newlines count toward the budget
MIN_SIDE_TOKENS = 1  # below one token of opening and one of ending a marker says nothing
MAX_SHRINK_STEPS = 64  # re-tokenizing at the joins costs a token or two; never loop unbounded

_ELLIPSIS = r"(?:\.\s*\.\s*\.|…)"
_MARKER_WORDS = (
    r"(?:the\s+)?middle\s+of\s+(?:this|the)\s+(?:passage|text|block)\s+"
    r"(?:is|was|has\s+been)\s+(?:left\s+out|omitted)"
)
_MARKER_PATTERN = re.compile(
    r"[ \t]*(?:\n[ \t]*)*"  # the whitespace before the marker goes with it
    r"(?:"
    rf"[\[(<{{]?\s*(?:{_ELLIPSIS}\s*)?{_MARKER_WORDS}\s*(?:{_ELLIPSIS}\s*)?[\])>}}]?"
    rf"|[\[(]\s*{_ELLIPSIS}\s*[\])]"  # a bare bracketed ellipsis: the marker, shortened
    r")"
    r"[ \t]*(?:\n[ \t]*)*",  # and the whitespace after it
    re.IGNORECASE,
)
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


def strip_marker(text: str) -> str:
    """``text`` without the excerpt marker or a copy of it; the gap closes to one space
    (one newline where the marker stood on a line of its own), and nothing at either end
    or before punctuation."""

    def gap(match: re.Match[str]) -> str:
        start, end = match.start(), match.end()
        if start == 0 or end == len(text) or text[end] in _PUNCTUATION_AFTER:
            return ""
        return "\n" if "\n" in match.group(0) else " "

    return _MARKER_PATTERN.sub(gap, text).strip()
