"""A story card's fields, declared once: ``Card``.

Invariants:

- ``Card`` is the one declaration of what a card holds and of its defaults. What
  carries more subclasses it: a stored card adds its ``id`` (``rules.CardView``), a
  card read from another tool's file adds where it came from (``lore.CardDraft``); a
  scenario's card is a ``Card``. Every other list of a card's fields (the API's request
  body and answer, the export file's entry) is declared against ``CARD_FIELDS``, and the
  tests hold each to it.
- A ``Card`` holds what it was given: it is checked where it is made from outside
  (``rules.clean_card`` for a client's card and every card written to an adventure,
  ``story.scenarios`` for a scenario file, ``services.lore`` for other tools' files).
- In a ``Card`` the keyword lists are tuples and the rule a ``SecondaryRule``; as JSON
  (``card_json``), what a client sends and a preview shows, they are lists and the
  rule's value, in the fields' order.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from talekeeper.services.cards.match import SecondaryRule

__all__ = ["CARD_FIELDS", "LISTS", "Card", "CardJsonValue", "card_json"]


@dataclass(frozen=True)
class Card:
    name: str
    type: str  # one of ``match.CARD_TYPES``
    keywords: tuple[str, ...]
    entry: str
    notes: str = ""
    always_on: bool = False
    secondary_keywords: tuple[str, ...] = ()
    secondary_rule: SecondaryRule = SecondaryRule.ANY

    def line(self) -> str:
        """The card as the Story Cards section shows it."""
        return f"{self.name} ({self.type}): {self.entry}"


CARD_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Card))
LISTS = ("keywords", "secondary_keywords")  # the fields that are lists of text

CardJsonValue = str | int | bool | list[str] | None


def card_json(card: Card) -> dict[str, CardJsonValue]:
    """``card``'s fields as JSON values, ``Card``'s first and then a subclass's own, each
    in declaration order."""
    return {f.name: _json(getattr(card, f.name)) for f in fields(card)}


def _json(value: object) -> CardJsonValue:
    if value is None:  # a stored card's ``known_by``: no secret
        return None
    if isinstance(value, tuple):
        return [str(item) for item in value]
    if isinstance(value, SecondaryRule):
        return value.value
    if isinstance(value, str | int | bool):
        return value
    raise TypeError(f"a card field holds {type(value).__name__}, which JSON cannot")
