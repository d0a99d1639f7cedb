"""What a dense probe measures, as pure functions of texts, ranges and snapshots.

Definitions (the tests pin them on hand-made inputs):

- A text **holds** a statement when every one of its answer words is a word of
  the text (lowercase runs of letters and digits: case and punctuation do not
  matter). Answer words are never "you" or "your" (the extractive writer turns
  "you" into the protagonist's name), so a memory that keeps the sentence
  holds it.
- **Fact in prompt**: the Memories section's text holds every statement the
  probe needs. The same test on the Story Summary and on the raw history is
  reported apart (the history must never hold it: probes lie beyond it).
- **In one line**: every statement is held by a single line of the section
  (a memory, or the passage it carries), not by words gathered across
  memories: a check that "fact in prompt" is no coincidence of words (a
  "ninth" from one date and a "March" from another). The raw history is read
  a line (an action) at a time and the Story Summary a sentence at a time, for
  the same reason.
- **Memory cover**: every stating depth lies in the source range
  (``source_start``..``source_end``) of an injected memory.
- **Injected tokens**: the Memories section's tokens, as the snapshot counts them.
- **Key kinds**: where the product says which key won a memory its place
  (``matched``: its own text or a source sentence), how often each did.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from benchmarks.recall.dense.generator import Statement

_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE_END = re.compile(r"(?<=[.!?\u2026])\s+")


def words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def fact_in(text: str, statements: Sequence[Statement]) -> bool:
    """Whether ``text`` holds every statement (False for a probe that needs none)."""
    found = words(text)
    return bool(statements) and all(set(s.answer) <= found for s in statements)


def in_one_piece(text: str, statements: Sequence[Statement], unit: str = "line") -> bool:
    """Whether each statement is held by a single line (or, ``unit`` "sentence", a sentence
    of a line) of ``text``."""
    lines = text.splitlines()
    pieces = lines if unit == "line" else [s for x in lines for s in _SENTENCE_END.split(x)]
    found = [words(piece) for piece in pieces]
    return bool(statements) and all(any(set(s.answer) <= w for w in found) for s in statements)


def covers(ranges: Iterable[tuple[int | None, int | None]], depths: Iterable[int]) -> bool:
    """Whether every depth lies in one of the (start, end) source ranges."""
    spans = [(a, b) for a, b in ranges if a is not None and b is not None]
    wanted = list(depths)
    return bool(wanted) and all(any(a <= d <= b for a, b in spans) for d in wanted)


def sections(snapshot: Mapping[str, Any]) -> dict[str, tuple[str, int]]:
    """Each context section's (text, tokens), by name."""
    return {
        s["name"]: (s.get("text") or "", int(s.get("tokens") or 0)) for s in snapshot["sections"]
    }


def source_ranges(memories: Iterable[Mapping[str, Any]]) -> list[tuple[int | None, int | None]]:
    return [
        (m.get("source", {}).get("source_start"), m.get("source", {}).get("source_end"))
        for m in memories
    ]


def key_kinds(memories: Iterable[Mapping[str, Any]]) -> Counter[str]:
    """How often each kind of key won an injected memory its place (when the product says)."""
    out: Counter[str] = Counter()
    for m in memories:
        matched = m.get("matched")
        if isinstance(matched, str) and matched:
            out[matched] += 1
        elif isinstance(matched, Mapping) and matched.get("kind"):
            out[str(matched["kind"])] += 1
    return out
