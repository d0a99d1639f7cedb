"""Story cards: validation, search, and which cards a turn's text triggers.

Invariants:

- A card enters the context when one of its keywords appears, as a whole word
  (or phrase) and ignoring case, in the recent story or in the player's input.
  "Mara" fires on "mara's boat" and "MARA", never on "Marathon".
- Each fired card records the keyword that fired it and where (the player's
  input is checked first, then the recent story); Insights shows both.
- Cards enter the context in card order (oldest first), one line each:
  "Name (type): entry".
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from talekeeper.core.errors import InvalidInput
from talekeeper.services import limits
from talekeeper.services.scenarios import CARD_TYPES
from talekeeper.storage.models import StoryCard

CARD_SCAN_ACTIONS = 6  # recent actions whose text can fire a card: the current scene, not the past


@dataclass(frozen=True)
class CardView:
    id: int
    name: str
    type: str
    keywords: tuple[str, ...]
    entry: str
    notes: str = ""

    @classmethod
    def of(cls, row: StoryCard) -> CardView:
        return cls(
            row.id, row.name, row.type, tuple(json.loads(row.keywords)), row.entry, row.notes
        )

    def public(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "type": self.type,
            "keywords": list(self.keywords),
            "entry": self.entry,
            "notes": self.notes,
        }

    def line(self) -> str:
        return f"{self.name} ({self.type}): {self.entry}"


@dataclass(frozen=True)
class FiredCard:
    card: CardView
    keyword: str
    where: Literal["input", "story"]

    def public(self) -> dict[str, Any]:
        return {
            "id": self.card.id,
            "name": self.card.name,
            "type": self.card.type,
            "keyword": self.keyword,
            "where": self.where,
        }


@lru_cache(maxsize=4096)
def _pattern(keyword: str) -> re.Pattern[str]:
    words = [re.escape(w) for w in keyword.split()]
    return re.compile(r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)", re.IGNORECASE)


def keyword_in(keyword: str, text: str, folded: str | None = None) -> bool:
    """Whether ``keyword`` occurs in ``text`` as a whole word or phrase, ignoring case.
    ``folded``: ``text.casefold()``, when the caller checks many keywords against it."""
    word = keyword.strip()
    if not word:
        return False
    # A plain substring test first: most keywords are absent, and the regex is the slow part.
    if len(word.split()) == 1 and word.casefold() not in (folded or text.casefold()):
        return False
    return _pattern(word).search(text) is not None


def fired_cards(cards: Iterable[CardView], recent_story: str, player_input: str) -> list[FiredCard]:
    fired: list[FiredCard] = []
    places: tuple[tuple[Literal["input", "story"], str, str], ...] = (
        ("input", player_input, player_input.casefold()),
        ("story", recent_story, recent_story.casefold()),
    )
    for card in cards:
        hit = next(
            (
                FiredCard(card, keyword, where)
                for where, text, folded in places
                for keyword in card.keywords
                if keyword_in(keyword, text, folded)
            ),
            None,
        )
        if hit is not None:
            fired.append(hit)
    return fired


def cards_section(fired: list[FiredCard]) -> tuple[str, str]:
    """The section text and its reason (which keyword fired each card, and where)."""
    text = "\n".join(f.card.line() for f in fired)
    reason = "; ".join(f"{f.card.name}: '{f.keyword}' in the {f.where}" for f in fired)
    return text, reason


def clean_card(data: dict[str, Any], *, partial: bool = False) -> dict[str, Any]:
    """Validated card fields from a client; with ``partial`` only the fields given."""
    out: dict[str, Any] = {}
    if not partial or "name" in data:
        out["name"] = limits.text_field(
            data.get("name", ""), "name", limits.CARD_NAME_MAX, required=True
        )
    if not partial or "type" in data:
        kind = limits.text_field(data.get("type", "other"), "type", 40).lower()
        if kind not in CARD_TYPES:
            raise InvalidInput(
                f"'type' must be one of {', '.join(CARD_TYPES)}; got {limits.quoted(kind)}."
            )
        out["type"] = kind
    if not partial or "keywords" in data:
        out["keywords"] = _keywords(data.get("keywords", []))
    for key, limit in (("entry", limits.CARD_ENTRY_MAX), ("notes", limits.CARD_NOTES_MAX)):
        if not partial or key in data:
            out[key] = limits.text_field(data.get(key, ""), key, limit)
    return out


def _keywords(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
        raise InvalidInput('\'keywords\' must be a list of text, e.g. ["mara", "the smuggler"].')
    cleaned: list[str] = []
    for keyword in value:
        word = limits.text_field(keyword, "keywords", limits.CARD_KEYWORD_MAX)
        if word and word.casefold() not in {k.casefold() for k in cleaned}:
            cleaned.append(word)
    if len(cleaned) > limits.CARD_KEYWORDS_MAX:
        raise InvalidInput(
            f"A card has at most {limits.CARD_KEYWORDS_MAX} keywords; this one has {len(cleaned)}."
        )
    return cleaned


def matches_search(card: CardView, query: str) -> bool:
    """Case-insensitive substring search over name, keywords, entry and notes."""
    needle = query.casefold()
    haystack = [card.name, card.entry, card.notes, *card.keywords]
    return any(needle in field.casefold() for field in haystack)
