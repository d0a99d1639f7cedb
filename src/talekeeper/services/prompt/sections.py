"""What a prompt is made of: its sections and history entries, the orders they keep, how
each renders, and what each is charged against the budget.

Invariants:

- A section renders under its title (``TITLES``) from its stripped text; the AI
  Instructions render bare, and a section of blank text renders as nothing (it takes
  no place and no tokens).
- Parts are joined by ``SEPARATOR``. A part is charged its own tokens, counted apart, plus
  the separator's and the chat template's per-message overhead (``Cost``): BPE merges
  across a join only ever shorten the real prompt, so the sum is a safe upper bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from talekeeper.core.tokens import TokenCounter

AUTHORS_NOTE_DEPTH = 3  # actions before the end: close enough to steer, not the last word
SEPARATOR = "\n\n"
FIXED_ORDER = (
    "ai_instructions",
    "plot_essentials",
    "story_summary",
    "current_state",
    "memories",
    "story_cards",
    "knowledge",
    "story_cards_new",  # ``cache`` only: the cards fired since a card last left
)
# Cut first when the fixed sections alone overflow: the least essential first.
TRIM_ORDER = (
    "knowledge",
    "story_cards_new",
    "story_cards",
    "memories",
    "current_state",
    "story_summary",
    "plot_essentials",
    "authors_note",
    "ai_instructions",
)
TITLES = {
    "plot_essentials": "Plot Essentials",
    "story_summary": "Story Summary",
    "current_state": "Current state",
    "memories": "Memories",
    "story_cards": "World",
    "story_cards_new": "World",
    "knowledge": "Knowledge",
    "authors_note": "Author's Note",
}


@dataclass(frozen=True)
class Section:
    name: str
    text: str
    reason: str = ""
    shorter: tuple[str, ...] = ()  # shorter forms of ``text``, longest first
    budget: int | None = None  # its own budget, when it has one (``budgets``), for the report


@dataclass(frozen=True)
class HistoryEntry:
    id: int
    role: Literal["player", "narrator"]
    text: str
    depth: int | None = None  # its place on the path; None: its index in the list given


def with_depths(history: list[HistoryEntry]) -> list[HistoryEntry]:
    """``history`` with every entry's depth known: an entry without one takes its index."""
    if all(e.depth is not None for e in history):
        return history
    return [HistoryEntry(e.id, e.role, e.text, index) for index, e in enumerate(history)]


def depth(entry: HistoryEntry) -> int:
    assert entry.depth is not None  # ``with_depths`` gave every entry one
    return entry.depth


def render_note(note: str) -> str:
    return f"[{TITLES['authors_note']}: {note}]"


def render_fixed(section: Section) -> str:
    if not section.text.strip():
        return ""
    if section.name == "ai_instructions":
        return section.text.strip()
    return f"[{TITLES[section.name]}]\n{section.text.strip()}"


@dataclass(frozen=True)
class Cost:
    """What a part of the prompt is charged: its own tokens (counted apart, so each text's
    count is cached whole), the separator that joins it and ``entry_overhead``, the tokens
    a chat template adds around each message (role markers). An empty part costs nothing."""

    counter: TokenCounter
    separator: int  # the tokens of ``SEPARATOR``
    entry_overhead: int

    @classmethod
    def of(cls, counter: TokenCounter, entry_overhead: int) -> Cost:
        return cls(counter, counter.count(SEPARATOR), entry_overhead)

    @property
    def overhead(self) -> int:
        """What a part is charged beyond its own tokens."""
        return self.separator + self.entry_overhead

    def __call__(self, text: str) -> int:
        return self.counter.count(text) + self.separator + self.entry_overhead if text else 0
