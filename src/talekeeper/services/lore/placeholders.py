"""The macros of character cards: who ``{{char}}`` and ``{{user}}`` are.

Invariants:

- ``{{char}}`` and ``<BOT>`` (any case) become the character's name (its V3
  nickname when it has one); ``{{user}}`` and ``<USER>`` the persona's name, or
  "you" when there is none.
- ``{{// …}}`` comments are dropped, and so is ``{{original}}`` (in another tool, the
  place of that tool's own system prompt; Talekeeper's narrator instructions always
  come before the adventure's AI Instructions, so there is nothing to put there).
- ``{{random:…}}``, ``{{roll:…}}`` and any other ``{{…}}`` macro are left as
  written (Talekeeper runs nothing from a file), and reported.
- Every substitution is counted; ``report`` says what was done, once per file.
"""

from __future__ import annotations

import re

from talekeeper.services.lore.report import ReportBuilder, counted

CHAR = re.compile(r"\{\{\s*+char\s*+\}\}|<BOT>", re.IGNORECASE)
USER = re.compile(r"\{\{\s*+user\s*+\}\}|<USER>", re.IGNORECASE)
# Possessive quantifiers: a macro's pattern never backtracks over a long text.
RANDOM = re.compile(r"\{\{\s*+(?:random|roll)\b[^{}]*+\}\}", re.IGNORECASE)
OTHER = re.compile(r"\{\{[^{}]*+\}\}")
ORIGINAL = re.compile(r"\{\{\s*+original\s*+\}\}\s*+", re.IGNORECASE)


def drop_comments(text: str) -> tuple[str, int]:
    """``text`` without its ``{{// …}}`` comments, and how many there were. A scan, not a
    pattern: an unclosed comment costs one pass, however many openers follow it."""
    kept: list[str] = []
    count = pos = 0
    while (start := text.find("{{//", pos)) != -1:
        end = text.find("}}", start + 4)
        if end == -1:
            break
        kept.append(text[pos:start])
        pos = end + 2
        count += 1
    kept.append(text[pos:])
    return "".join(kept), count


class Placeholders:
    """Substitutes the names into a card's texts, counting what it did."""

    def __init__(self, char: str, user: str | None) -> None:
        self.char = char
        self.user = user or "you"
        self.names = 0
        self.comments = 0
        self.random = 0
        self.other = 0
        self.originals = 0

    def __call__(self, text: str) -> str:
        text, dropped = drop_comments(text)
        text, originals = ORIGINAL.subn("", text)
        self.originals += originals
        text, chars = CHAR.subn(lambda _: self.char, text)
        text, users = USER.subn(lambda _: self.user, text)
        self.comments += dropped
        self.names += chars + users
        random = len(RANDOM.findall(text))
        self.random += random
        self.other += len(OTHER.findall(text)) - random
        return text

    def report(self, report: ReportBuilder) -> None:
        if self.names:
            report.change(
                f"{{{{char}}}}/<BOT> became {self.char!r} and {{{{user}}}}/<USER> became "
                f"{self.user!r} ({self.names} places)"
            )
        if self.originals:
            report.change(
                f"{counted(self.originals, '{{original}} macro')} dropped: it stands for the "
                "other tool's own system prompt, and Talekeeper's comes first anyway"
            )
        if self.comments:
            report.change(f"{counted(self.comments, '{{// comment}} macro')} dropped")
        if self.random:
            report.info(
                f"{counted(self.random, '{{random}}/{{roll}} macro')} left as written; "
                "Talekeeper does not roll dice"
            )
        if self.other:
            report.info(f"{counted(self.other, 'other {{...}} macro')} left as written")
