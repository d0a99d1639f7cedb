"""Story cards: validation, search, and which cards a turn's text triggers.

Invariants:

- A card enters the context when one of its keywords appears, as a whole word
  (or phrase) and ignoring case, in the recent story or in the player's input.
  "Mara" fires on "mara's boat" and "MARA", never on "Marathon". ``keyword_in``
  is the one definition of "appears"; everything else here only decides which
  keywords are worth asking it about.
- Each fired card records the keyword that fired it and where (the player's
  input is checked first, then the recent story; within a place, the card's
  first keyword that appears); Insights shows both.
- Cards enter the context in card order (oldest first), one line each:
  "Name (type): entry".
- A card set is matched by one ``CardMatcher``, built once per set of (card id,
  keywords) and cached by exactly that, so any change to a card's keywords, a
  card added or a card deleted builds a new one. A turn costs the words of its
  text plus the keywords that could fire, not the number of cards.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from talekeeper.core.errors import InvalidInput
from talekeeper.services import limits
from talekeeper.services.scenarios import CARD_TYPES
from talekeeper.storage.models import StoryCard

CARD_SCAN_ACTIONS = 6  # recent actions whose text can fire a card: the current scene, not the past
MATCHERS_KEPT = 4  # card sets whose matcher stays built: the adventures being played now

Where = Literal["input", "story"]
WORD = re.compile(r"\w+")
# Under IGNORECASE, ``re`` treats I, i, İ and ı as one letter, but ``casefold`` keeps ı and
# İ apart; every other case class of Unicode casefolds to one string (a test checks every
# code point against ``re``'s own tables).
_DOTTED_I = str.maketrans({"İ": "i", "ı": "i"})
# The one case class that mixes a word character with a non-word one (ι, Ι, ι and the
# combining ypogegrammeni): a keyword with it can match across what ``\w+`` splits.
_IOTA = "ι"


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
    where: Where

    def public(self) -> dict[str, Any]:
        return {
            "id": self.card.id,
            "name": self.card.name,
            "type": self.card.type,
            "keyword": self.keyword,
            "where": self.where,
        }


def _compile(word: str) -> re.Pattern[str]:
    words = [re.escape(w) for w in word.split()]
    return re.compile(r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)", re.IGNORECASE)


_pattern = lru_cache(maxsize=4096)(_compile)


def _found(word: str, pattern: re.Pattern[str], text: str, folded: str) -> bool:
    # A plain substring test first: most keywords are absent, and the regex is the slow part.
    if len(word.split()) == 1 and word.casefold() not in folded:
        return False
    return pattern.search(text) is not None


def keyword_in(keyword: str, text: str, folded: str | None = None) -> bool:
    """Whether ``keyword`` occurs in ``text`` as a whole word or phrase, ignoring case.
    ``folded``: ``text.casefold()``, when the caller checks many keywords against it."""
    word = keyword.strip()
    if not word:
        return False
    return _found(word, _pattern(word), text, folded or text.casefold())


def fold(text: str) -> str:
    """``text`` folded so that two words ``re`` matches ignoring case fold alike."""
    return text.translate(_DOTTED_I).casefold()


class CardMatcher:
    """The keywords of a card set, indexed by one word each.

    A keyword made of words can only appear where its longest word is a whole word of
    the text (its words are bounded by the keyword's own edges, spaces or punctuation),
    so it is indexed by that word, folded; a text's words, folded, name the only
    keywords worth checking, and ``keyword_in``'s test decides. Keywords without a word
    character, or with the iota class, are checked on every text. A keyword is named by
    one number, ``card * stride + position``, to keep a large set small in memory.
    """

    def __init__(self, cards: Sequence[tuple[int, Sequence[str]]]) -> None:
        self.card_ids = [card_id for card_id, _ in cards]
        self._cards = [tuple(keywords) for _, keywords in cards]
        self._stride = max(map(len, self._cards), default=0) + 1
        self._index: dict[str, list[int]] = {}
        self._always: list[int] = []
        self._patterns: dict[str, re.Pattern[str]] = {}
        buckets: dict[str, list[int] | None] = {}  # each distinct keyword: where it is kept
        for card, keywords in enumerate(self._cards):
            for position, keyword in enumerate(keywords):
                word = keyword.strip()
                if word not in buckets:
                    buckets[word] = self._bucket(word)
                bucket = buckets[word]
                if bucket is not None:  # None: an empty keyword fires on nothing
                    bucket.append(card * self._stride + position)

    def _bucket(self, word: str) -> list[int] | None:
        if not word:
            return None
        atoms = WORD.findall(word)
        if not atoms or _IOTA in fold(word):
            return self._always
        return self._index.setdefault(max(map(fold, atoms), key=len), [])

    def _first(self, text: str, done: dict[int, tuple[int, Where]]) -> dict[int, int]:
        """Per card not ``done``: the position of its first keyword that appears in
        ``text``. Each card's possible keywords are checked in its order, up to the first
        that appears, so a card costs one check however many of its keywords appear."""
        folded = text.casefold()
        codes = [c for w in {fold(w) for w in WORD.findall(text)} for c in self._index.get(w, ())]
        options: dict[int, list[int]] = {}
        for code in (*codes, *self._always):
            card, position = divmod(code, self._stride)
            if card not in done:
                options.setdefault(card, []).append(position)
        seen: dict[str, bool] = {}
        first: dict[int, int] = {}
        for card, positions in options.items():
            for position in sorted(positions):
                word = self._cards[card][position].strip()
                found = seen.get(word)
                if found is None:
                    found = seen[word] = _found(word, self._compiled(word), text, folded)
                if found:
                    first[card] = position
                    break
        return first

    def _compiled(self, word: str) -> re.Pattern[str]:
        pattern = self._patterns.get(word)
        if pattern is None:
            pattern = self._patterns[word] = _compile(word)
        return pattern

    def fire(self, recent_story: str, player_input: str) -> list[tuple[int, str, Where]]:
        """(card position, keyword, where) of every card that fires, in card order: its
        first keyword in the input, else its first keyword in the recent story."""
        fired: dict[int, tuple[int, Where]] = {}
        places: tuple[tuple[Where, str], ...] = (("input", player_input), ("story", recent_story))
        for where, text in places:
            fired.update((card, (at, where)) for card, at in self._first(text, fired).items())
        return [
            (card, self._cards[card][position], where)
            for card, (position, where) in sorted(fired.items())
        ]


@lru_cache(maxsize=MATCHERS_KEPT)
def matcher_for(cards: tuple[tuple[int, tuple[str, ...] | str], ...]) -> CardMatcher:
    """The matcher of a card set given as (card id, keywords) pairs, keywords as a tuple or
    as the JSON list a row stores."""
    return CardMatcher(
        [(cid, json.loads(kws) if isinstance(kws, str) else kws) for cid, kws in cards]
    )


def fired_cards(cards: Iterable[CardView], recent_story: str, player_input: str) -> list[FiredCard]:
    """The cards that fire, in card order, each with its keyword and where it appeared."""
    views = tuple(cards)
    matcher = matcher_for(tuple((c.id, c.keywords) for c in views))
    return [
        FiredCard(views[card], keyword, where)
        for card, keyword, where in matcher.fire(recent_story, player_input)
    ]


def fired_in(
    session: Session, adventure_id: int, recent_story: str, player_input: str
) -> list[FiredCard]:
    """``fired_cards`` over an adventure's stored cards: their keywords are read (not their
    entries), and only the cards that fire are read whole."""
    query = select(StoryCard.id, StoryCard.keywords).where(StoryCard.adventure_id == adventure_id)
    stored = tuple((int(i), str(k)) for i, k in session.execute(query.order_by(StoryCard.id)))
    matcher = matcher_for(stored)
    hits = matcher.fire(recent_story, player_input)
    if not hits:
        return []
    ids = [matcher.card_ids[card] for card, _, _ in hits]
    rows = {r.id: r for r in session.scalars(select(StoryCard).where(StoryCard.id.in_(ids)))}
    return [
        FiredCard(CardView.of(rows[cid]), keyword, where)
        for cid, (_, keyword, where) in zip(ids, hits, strict=True)
        if cid in rows  # deleted since its keywords were read
    ]


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
    seen: set[str] = set()
    for keyword in value:
        word = limits.text_field(keyword, "keywords", limits.CARD_KEYWORD_MAX)
        if word and word.casefold() not in seen:
            if len(cleaned) == limits.CARD_KEYWORDS_MAX:  # stop here: the list may be huge
                raise InvalidInput(
                    f"A card has at most {limits.CARD_KEYWORDS_MAX} keywords; this one has "
                    f"more ({len(value):,} given)."
                )
            seen.add(word.casefold())
            cleaned.append(word)
    return cleaned


def matches_search(card: CardView, query: str) -> bool:
    """Case-insensitive substring search over name, keywords, entry and notes."""
    needle = query.casefold()
    haystack = [card.name, card.entry, card.notes, *card.keywords]
    return any(needle in field.casefold() for field in haystack)
