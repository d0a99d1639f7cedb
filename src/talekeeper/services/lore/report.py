"""Collecting a preview's report while a file is read.

Invariants:

- Refused, changed and info items are kept in the order they were met, each
  with the JSON path it concerns.
- Lost settings are counted per setting, never listed per entry: "14 entries set
  an insertion depth; ..." with the path of the first entry that did. Each
  setting's sentence says what Talekeeper does instead.
"""

from __future__ import annotations

from talekeeper.services.lore.model import Report, ReportItem, ReportLevel

# What each dropped setting meant, and what happens instead; the key is the name readers
# use, whatever the file calls it.
LOST = {
    "position": "set an insertion position; story cards have one place in the context",
    "depth": "set an insertion depth; story cards have one place in the context",
    "probability": "fired only by chance; they now fire whenever a keyword appears",
    "case_sensitive": "matched their keywords case-sensitively; keywords now ignore case",
    "whole_words": "set their own whole-word matching; keywords now follow Talekeeper's rule",
    "group": "belonged to an inclusion group; each now fires on its own",
    "scan_depth": "set their own scan depth; cards read the recent story",
    "priority": "set a priority; cards keep their creation order instead",
    "prefix": "set a prefix; it was dropped",
    "suffix": "set a suffix; it was dropped",
    "token_budget": "set a token budget; the Story Cards section has one budget for all",
    "not_all": (
        "used the NOT ALL rule for secondary keys, which Talekeeper has no equivalent for; "
        "they now fire on their primary keys alone (the secondary keys are in their notes)"
    ),
    "anti_keys": (
        "had anti-keys as well as secondary keys; a card keeps one rule, so the anti-keys "
        "were dropped (they are in the card's notes)"
    ),
    "inactive_secondary": (
        "had secondary keys that were switched off in the file; they are in the card's notes"
    ),
    "decorators": "used @@decorators; they are in the card's notes, not acted on",
}


def counted(count: int, word: str, words: str | None = None) -> str:
    """``count`` and the word in the right number: "1 entry", "3 entries"."""
    return f"{count:,} {word if count == 1 else (words or word + 's')}"


def entries(count: int) -> str:
    return counted(count, "entry", "entries")


class ReportBuilder:
    """The report of one reading, item by item."""

    def __init__(self) -> None:
        self._items: list[ReportItem] = []
        self._lost: dict[str, tuple[int, str]] = {}  # setting -> (count, first path)

    def refuse(self, message: str, path: str = "") -> None:
        self._items.append(ReportItem(ReportLevel.REFUSED, message, path))

    def change(self, message: str, path: str = "", count: int = 1) -> None:
        self._items.append(ReportItem(ReportLevel.CHANGED, message, path, count))

    def info(self, message: str, path: str = "", count: int = 1) -> None:
        self._items.append(ReportItem(ReportLevel.INFO, message, path, count))

    def lose(self, setting: str, path: str) -> None:
        count, first = self._lost.get(setting, (0, path))
        self._lost[setting] = (count + 1, first)

    def lose_whole(self, message: str, path: str = "") -> None:
        """Something of the file as a whole (its scripts, a book's settings) not kept."""
        self._items.append(ReportItem(ReportLevel.LOST, message, path))

    def build(self) -> Report:
        lost = [
            ReportItem(ReportLevel.LOST, f"{entries(count)} {LOST[setting]}.", path, count)
            for setting, (count, path) in self._lost.items()
        ]
        return Report(tuple(self._items + lost))
