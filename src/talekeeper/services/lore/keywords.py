"""Keys of other tools as Talekeeper keywords.

Invariants:

- A keyword is plain text, matched by Talekeeper's own rule; no pattern is ever
  compiled or run. A key is a pattern only where its format says so: written
  ``/…/flags`` in formats whose tools read such keys as regular expressions
  (SillyTavern, NovelAI, character books, RisuAI), or every key of an entry
  marked as regex (``use_regex``, ``useRegex``). SillyTavern marks many plain
  keys as regex, so nothing else counts as one.
- A pattern that is only an alternation of literals, optionally grouped and
  bounded by ``\\b`` (``/\\b(sword|blade)\\b/i``), becomes those literals. Any other
  pattern, and an Agnai key with a wildcard (``*``, ``?``), is dropped: its text goes
  to the card's notes and the report says so.
- Written back out (``written_key``), a keyword that would read as a pattern is
  written as the pattern matching exactly that text, so it reads back unchanged.
- Keywords are trimmed, empty ones dropped, duplicates (ignoring case) dropped,
  order kept. A keyword over ``limits.CARD_KEYWORD_MAX`` characters is dropped
  and reported; past ``limits.CARD_KEYWORDS_MAX`` keywords, the rest go to the
  notes, reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

from talekeeper.services.common import limits
from talekeeper.services.lore.fields import quote

SLASHED = re.compile(r"/(.+)/([A-Za-z]*)\Z", re.DOTALL)
_META = set(".^$*+?{}[]()|")
_WILDCARDS = ("*", "?")


class KeyMode(Enum):
    PLAIN = "plain"  # every key is text (AI Dungeon, KoboldAI)
    SLASHED = "slashed"  # a key written /…/flags is a pattern
    PATTERN = "pattern"  # every key is a pattern (use_regex)
    WILDCARD = "wildcard"  # * and ? are wildcards (Agnai)


@dataclass
class Keywords:
    """The keywords kept, the note lines for what was not, and the report's sentences."""

    kept: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)


def _tokens(pattern: str) -> list[str] | None:
    """The pattern as literal characters, "\\b", "|", "(" and ")"; None at anything else."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            if i + 1 >= len(pattern):
                return None
            escaped = pattern[i + 1]
            if escaped == "b":
                out.append("\\b")
            elif escaped.isalnum() or escaped == "_":
                return None  # a class (\d, \w, \s) or a back-reference
            else:
                out.append("L" + escaped)
            i += 2
            continue
        if pattern.startswith("(?:", i):
            out.append("(")
            i += 3
            continue
        if char in "|()":
            out.append(char)
        elif char in _META:
            return None
        else:
            out.append("L" + char)
        i += 1
    return out


def _strip_bounds(tokens: list[str]) -> list[str]:
    while tokens and tokens[0] == "\\b":
        tokens = tokens[1:]
    while tokens and tokens[-1] == "\\b":
        tokens = tokens[:-1]
    return tokens


def literals_of(pattern: str) -> list[str] | None:
    """The literals a pattern is only an alternation of, or None."""
    tokens = _tokens(pattern)
    if tokens is None:
        return None
    tokens = _strip_bounds(tokens)
    if tokens[:1] == ["("] and tokens[-1:] == [")"]:
        inner = tokens[1:-1]
        if "(" in inner or ")" in inner:
            return None
        tokens = _strip_bounds(inner)
    if "(" in tokens or ")" in tokens:
        return None
    words: list[str] = []
    alternative: list[str] = []
    for token in [*tokens, "|"]:
        if token != "|":
            alternative.append(token)
            continue
        alternative = _strip_bounds(alternative)
        if not alternative or any(not t.startswith("L") for t in alternative):
            return None
        words.append("".join(t[1:] for t in alternative))
        alternative = []
    return words


def _expand(key: str, mode: KeyMode, out: Keywords) -> list[str]:
    """One key of the file as the literal keywords it stands for (maybe none)."""
    slashed = SLASHED.match(key) if mode in (KeyMode.SLASHED, KeyMode.PATTERN) else None
    if slashed is None and mode is not KeyMode.PATTERN:
        if mode is KeyMode.WILDCARD and any(w in key for w in _WILDCARDS):
            out.notes.append(f"Wildcard keyword not kept: {key}")
            out.changes.append(f"wildcard keyword {quote(key)} cannot be a keyword; it is in notes")
            return []
        return [key]
    pattern = slashed.group(1) if slashed else key
    words = literals_of(pattern)
    if words is None:
        out.notes.append(f"Pattern keyword not kept: {key}")
        out.changes.append(f"pattern {quote(key)} cannot be a keyword; it is in the notes")
        return []
    words = [w.strip() for w in words]
    if words != [key]:
        shown = ", ".join(quote(w) for w in words)
        out.changes.append(f"pattern {quote(key)} became the keyword(s) {shown}")
    return words


def clean_keywords(keys: list[str], mode: KeyMode) -> Keywords:
    """The keywords a card keeps from the file's keys (see the module's invariants)."""
    out = Keywords()
    seen: set[str] = set()
    extra: list[str] = []
    for raw in keys:
        key = raw.strip()
        for word in _expand(key, mode, out) if key else []:
            if not word or word.casefold() in seen:
                continue
            if len(word) > limits.CARD_KEYWORD_MAX:
                out.notes.append(f"Keyword over {limits.CARD_KEYWORD_MAX} characters: {word}")
                out.changes.append(
                    f"keyword {quote(word)} is {len(word):,} characters, over the "
                    f"{limits.CARD_KEYWORD_MAX} a keyword may have; it is in the notes"
                )
                continue
            seen.add(word.casefold())
            (out.kept if len(out.kept) < limits.CARD_KEYWORDS_MAX else extra).append(word)
    if extra:
        out.notes.append(f"Keywords past the first {limits.CARD_KEYWORDS_MAX}: " + ", ".join(extra))
        out.changes.append(
            f"{len(out.kept) + len(extra)} keywords; a card keeps "
            f"{limits.CARD_KEYWORDS_MAX}, the other {len(extra)} are in the notes"
        )
    return out


_ESCAPED = set("\\^$.|?*+()[]{}/")


def written_key(keyword: str) -> str:
    """``keyword`` as a key of a format that reads ``/…/`` as a pattern: itself, or, when it
    looks like a pattern, the pattern of exactly its text."""
    if SLASHED.match(keyword) is None:
        return keyword
    return "/" + "".join("\\" + c if c in _ESCAPED else c for c in keyword) + "/"
