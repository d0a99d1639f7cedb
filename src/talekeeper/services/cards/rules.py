"""Story cards: validation, search, and which cards enter a turn's context.

Invariants:

- A card fires when one of its keywords appears in the recent story or in the
  player's input and its secondary keywords, if any, satisfy its ``SecondaryRule``
  (``cards.match``: ``keyword_in`` is the one definition of "appears", whole words
  for most scripts, substrings for those written without spaces; everything else
  here only decides which keywords are worth asking it about).
- Each fired card records the keyword that fired it and where (the player's
  input is checked first, then the recent story; within a place, the card's
  first keyword that appears), and the secondary keywords that held; Insights
  shows them.
- The Story Cards section holds the always-on cards first, every turn, whether
  or not a keyword appears, then the other fired cards; each group in card order
  (oldest first), one line each: "Name (type): entry". When the budget cuts the
  section it cuts from its end, so always-on cards are the last to go. Insights
  says "always on" for such a card instead of a keyword. An always-on card still
  fires by its keywords for the scene (``fired``), as any card does.
- A card set is matched by one ``CardMatcher``, built once per set of card keys
  (card id, keywords, secondary keywords, rule) and cached by exactly that. A turn
  costs the words of its text plus the keywords that could fire, not the number of
  cards; only the cards that fire, and the always-on ones, are read whole.
- A card is stored as ``clean_card`` makes it, whoever wrote it (a client, a scenario,
  another tool's file); a change (``clean_card_changes``) touches only the fields given,
  named as ``Card`` names them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sqlalchemy.orm import Session

from talekeeper.core.errors import InvalidInput
from talekeeper.services.cards.match import (
    CARD_TYPES,
    CardKeys,
    CardMatcher,
    SecondaryRule,
    Where,
    keyword_in,
    matcher_for,
)
from talekeeper.services.cards.model import CARD_FIELDS, LISTS, Card, card_json
from talekeeper.services.common import limits
from talekeeper.storage.models import StoryCard
from talekeeper.storage.repositories.story import StoryRepository

__all__ = [
    "CARD_SCAN_ACTIONS",
    "CardMatcher",
    "CardView",
    "FiredCard",
    "SecondaryRule",
    "TurnCards",
    "card_columns",
    "clean_keywords",
    "cards_section",
    "clean_card",
    "clean_card_changes",
    "fired_cards",
    "fired_in",
    "in_section",
    "keyword_in",
    "matches_search",
    "turn_cards",
]

CARD_SCAN_ACTIONS = 6  # recent actions whose text can fire a card: the current scene, not the past


@dataclass(frozen=True, kw_only=True)
class CardView(Card):
    """A stored card: a ``Card``, its row's id, and the characters it is a secret of
    (``known_by``: None for no secret; docs/world.md, "Who knows what")."""

    id: int
    known_by: tuple[str, ...] | None = None

    @classmethod
    def of(cls, row: StoryCard) -> CardView:
        return cls(
            id=row.id,
            name=row.name,
            type=row.type,
            keywords=tuple(json.loads(row.keywords)),
            entry=row.entry,
            notes=row.notes,
            always_on=bool(row.always_on),
            secondary_keywords=tuple(json.loads(row.secondary_keywords or "[]")),
            secondary_rule=SecondaryRule(row.secondary_rule or SecondaryRule.ANY),
            known_by=None if row.known_by is None else tuple(json.loads(row.known_by)),
        )

    def keys(self) -> CardKeys:
        return CardKeys(self.id, self.keywords, self.secondary_keywords, self.secondary_rule)


@dataclass(frozen=True)
class FiredCard:
    """A card in the context: fired by ``keyword`` in ``where``, or always on (``where``
    None, ``keyword`` empty)."""

    card: CardView
    keyword: str
    where: Where | None
    secondary: tuple[str, ...] = ()  # the card's secondary keywords that appeared

    @property
    def always(self) -> bool:
        return self.where is None

    def reason(self) -> str:
        if self.always:
            return f"{self.card.name}: always on"
        if self.where == "earlier":
            return f"{self.card.name}: fired earlier in the scene, kept while the history holds"
        said = f"{self.card.name}: '{self.keyword}' in the {self.where}"
        if not self.card.secondary_keywords:
            return said
        if self.card.secondary_rule is SecondaryRule.NONE:
            return said + ", and none of " + _listed(self.card.secondary_keywords)
        return said + ", with " + _listed(self.secondary)


def _listed(words: Iterable[str]) -> str:
    return ", ".join(f"'{w}'" for w in words)


def fired_cards(cards: Iterable[CardView], recent_story: str, player_input: str) -> list[FiredCard]:
    """The cards that fire by their keywords, in card order, each with its keyword, where
    it appeared and the secondary keywords that held."""
    views = tuple(cards)
    matcher = matcher_for(tuple(c.keys() for c in views))
    return [
        FiredCard(views[hit.card], hit.keyword, hit.where, hit.secondary)
        for hit in matcher.fire(recent_story, player_input)
    ]


def in_section(cards: Iterable[CardView], fired: Iterable[FiredCard]) -> list[FiredCard]:
    """The Story Cards section's cards: the always-on ones of ``cards`` first, then the
    other ``fired`` ones, each group in the order given."""
    always = [FiredCard(card, "", None) for card in cards if card.always_on]
    return always + [f for f in fired if not f.card.always_on]


@dataclass(frozen=True)
class TurnCards:
    fired: list[FiredCard]  # the cards that fire by their keywords (the scene reads these)
    section: list[FiredCard]  # the Story Cards section (``in_section``)


def turn_cards(
    session: Session,
    adventure_id: int,
    recent_story: str,
    player_input: str,
    *,
    always_on: bool = True,
) -> TurnCards:
    """``fired_cards`` and ``in_section`` over an adventure's stored cards: their keys are
    read (not their entries), and only the cards that fire or are always on (with
    ``always_on``) are read whole."""
    repo = StoryRepository(session)
    rows = repo.card_keys(adventure_id)
    keys = tuple(
        CardKeys(int(r.id), str(r.keywords), str(r.secondary_keywords), str(r.secondary_rule))
        for r in rows
    )
    matcher = matcher_for(keys)
    hits = matcher.fire(recent_story, player_input)
    ids = [matcher.card_ids[hit.card] for hit in hits]
    with_always_on = always_on and any(row.always_on for row in rows)
    if not ids and not with_always_on:
        return TurnCards([], [])
    whole = repo.fired_or_always_on(adventure_id, ids, always_on=with_always_on)
    read = {r.id: CardView.of(r) for r in whole}
    fired = [
        FiredCard(read[cid], hit.keyword, hit.where, hit.secondary)
        for cid, hit in zip(ids, hits, strict=True)
        if cid in read  # deleted since its keys were read
    ]
    always = [view for view in read.values() if always_on and view.always_on]
    return TurnCards(fired, in_section(always, fired))


def fired_in(
    session: Session, adventure_id: int, recent_story: str, player_input: str
) -> list[FiredCard]:
    """The cards of an adventure that fire by their keywords (``turn_cards``' ``fired``)."""
    return turn_cards(session, adventure_id, recent_story, player_input, always_on=False).fired


def held_cards(
    session: Session, adventure_id: int, section: list[FiredCard], held: list[int]
) -> tuple[list[FiredCard], list[FiredCard]]:
    """(the cards a Story Cards section held, as they stand; the cards of ``section`` it did
    not hold). A held card that no longer fires is kept as fired ``earlier``; one deleted
    since is gone."""
    current = {f.card.id: f for f in section}
    missing = [card_id for card_id in held if card_id not in current]
    read: dict[int, CardView] = {}
    if missing:
        rows = StoryRepository(session).cards_among(adventure_id, missing)
        read = {row.id: CardView.of(row) for row in rows}
    kept = [
        current[i] if i in current else FiredCard(read[i], "", "earlier")
        for i in held
        if i in current or i in read
    ]
    return kept, [f for f in section if f.card.id not in set(held)]


def cards_section(cards: list[FiredCard]) -> tuple[str, str]:
    """The section text and its reason (which keyword fired each card, and where, or that
    it is always on)."""
    text = "\n".join(f.card.line() for f in cards)
    reason = "; ".join(f.reason() for f in cards)
    return text, reason


def clean_card(data: Mapping[str, object] | Card) -> Card:
    """A client's card, validated: text stripped, the type in lower case, keywords without
    repeats, every limit held (a value past one is refused, naming it). A field not given
    takes its default; only the name must be given. A ``Card`` made elsewhere (a scenario,
    another tool's file) is checked the same way before it is stored."""
    given = card_json(data) if isinstance(data, Card) else data
    return Card(
        name=limits.text_field(given.get("name", ""), "name", limits.CARD_NAME_MAX, required=True),
        type=_type(given.get("type", "other")),
        keywords=clean_keywords(given.get("keywords", []), "keywords"),
        secondary_keywords=clean_keywords(
            given.get("secondary_keywords", []), "secondary_keywords"
        ),
        entry=limits.text_field(given.get("entry", ""), "entry", limits.CARD_ENTRY_MAX),
        notes=limits.text_field(given.get("notes", ""), "notes", limits.CARD_NOTES_MAX),
        always_on=_flag(given.get("always_on", False)),
        secondary_rule=_rule(given.get("secondary_rule", SecondaryRule.ANY)),
    )


UNCHANGED_NAME = "-"  # stands in for a name a change does not give; never kept


def clean_card_changes(data: Mapping[str, object]) -> dict[str, object]:
    """The fields a client changes (a PATCH): only those given, by ``Card``'s names,
    each validated as ``clean_card`` validates it."""
    card = clean_card({"name": UNCHANGED_NAME, **data})
    return {key: getattr(card, key) for key in CARD_FIELDS if key in data}


def _type(value: object) -> str:
    kind = limits.text_field(value, "type", 40).lower()
    if kind not in CARD_TYPES:
        raise InvalidInput(
            f"'type' must be one of {', '.join(CARD_TYPES)}; got {limits.quoted(kind)}."
        )
    return kind


def _flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise InvalidInput(f"'always_on' must be true or false; got {limits.quoted(value)}.")
    return value


def _rule(value: object) -> SecondaryRule:
    rules = ", ".join(rule.value for rule in SecondaryRule)
    if isinstance(value, str):
        try:
            return SecondaryRule(value.strip().lower())
        except ValueError:
            pass
    raise InvalidInput(f"'secondary_rule' must be one of {rules}; got {limits.quoted(value)}.")


def clean_keywords(value: object, key: str) -> tuple[str, ...]:
    """A list of keywords as a card keeps them (each stripped, repeats dropped, every limit
    held); a refusal names the field ``key``."""
    what = "secondary keywords" if key == "secondary_keywords" else "keywords"
    if not isinstance(value, list) or not all(isinstance(k, str) for k in value):
        raise InvalidInput(f'\'{key}\' must be a list of text, e.g. ["mara", "the smuggler"].')
    cleaned: list[str] = []
    seen: set[str] = set()
    for keyword in value:
        word = limits.text_field(keyword, key, limits.CARD_KEYWORD_MAX)
        if word and word.casefold() not in seen:
            if len(cleaned) == limits.CARD_KEYWORDS_MAX:  # stop here: the list may be huge
                raise InvalidInput(
                    f"A card has at most {limits.CARD_KEYWORDS_MAX} {what}; this one has "
                    f"more ({len(value):,} given)."
                )
            seen.add(word.casefold())
            cleaned.append(word)
    return tuple(cleaned)


def card_columns(card: Card | Mapping[str, object]) -> dict[str, object]:
    """A card, or some of its fields by ``Card``'s names (``clean_card_changes``), as a
    ``StoryCard`` row holds them: keyword lists as JSON text, the rule as its value."""
    given = card_json(card) if isinstance(card, Card) else card
    out: dict[str, object] = {}
    for key in CARD_FIELDS:
        if key not in given:
            continue
        value = given[key]
        if key in LISTS:
            value = json.dumps(value)  # a tuple is written as the list it holds
        elif key == "secondary_rule":
            value = SecondaryRule(str(value)).value
        out[key] = value
    return out


def matches_search(card: CardView, query: str) -> bool:
    """Case-insensitive substring search over name, keywords (secondary ones too), entry
    and notes."""
    needle = query.casefold()
    haystack = [card.name, card.entry, card.notes, *card.keywords, *card.secondary_keywords]
    return any(needle in field.casefold() for field in haystack)
