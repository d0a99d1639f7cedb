"""Scenarios: templates an adventure starts from, shipped as JSON files in the package.

Invariants:

- A scenario file is validated whole when it is loaded; a bad file is refused
  with a message naming the file and the field, never half-used.
- At creation a scenario's NPC cast becomes character story cards, after the
  scenario's own cards, de-duplicated by name (case-insensitive): a cast
  member whose name already has a card adds nothing, so the scenario author's
  card wins.
- A card is read into a ``Card``, each field under the name ``Card`` gives it. It may
  say ``always_on`` (true or false), ``secondary_keywords`` (a list of text) and
  ``secondary_rule`` (any, all or none); without them it is not always on and fires on
  its keywords alone.
- What clients are shown of a scenario (``summary``, ``detail``) counts and lists the
  cards an adventure made from it starts with: its own cards and then its cast.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from talekeeper.core.errors import InvalidInput
from talekeeper.services.cards.match import CARD_TYPES, SecondaryRule
from talekeeper.services.cards.model import Card

SCENARIO_DIR = Path(__file__).resolve().parents[2] / "scenarios"
TEXT_FIELDS = ("id", "title", "genre", "description", "opening")
OPTIONAL_TEXT = ("ai_instructions", "plot_essentials", "authors_note")


@dataclass(frozen=True)
class Scenario:
    id: str
    title: str
    genre: str
    description: str
    opening: str
    ai_instructions: str = ""
    plot_essentials: str = ""
    authors_note: str = ""
    persona: dict[str, str] = field(default_factory=dict)
    story_cards: tuple[Card, ...] = ()
    cast: tuple[Card, ...] = ()

    def summary(self) -> ScenarioSummary:
        return ScenarioSummary(
            id=self.id,
            title=self.title,
            genre=self.genre,
            description=self.description,
            persona=self.persona,
            cards=len(self.cards_for_creation()),
        )

    def detail(self) -> ScenarioDetail:
        return ScenarioDetail(
            id=self.id,
            title=self.title,
            genre=self.genre,
            description=self.description,
            opening=self.opening,
            ai_instructions=self.ai_instructions,
            plot_essentials=self.plot_essentials,
            authors_note=self.authors_note,
            persona=self.persona,
            story_cards=self.cards_for_creation(),
        )

    def cards_for_creation(self) -> list[Card]:
        """The scenario's cards, then its cast as character cards not already named."""
        cards = list(self.story_cards)
        names = {c.name.casefold() for c in cards}
        for member in self.cast:
            if member.name.casefold() not in names:
                cards.append(member)
                names.add(member.name.casefold())
        return cards


@dataclass(frozen=True)
class ScenarioSummary:
    """A scenario in the list of them; ``cards``: how many an adventure starts with."""

    id: str
    title: str
    genre: str
    description: str
    persona: dict[str, str]
    cards: int


@dataclass(frozen=True)
class ScenarioDetail:
    """A scenario to start from; ``story_cards``: the cards an adventure starts with."""

    id: str
    title: str
    genre: str
    description: str
    opening: str
    ai_instructions: str
    plot_essentials: str
    authors_note: str
    persona: dict[str, str]
    story_cards: list[Card]


def _text(data: dict[str, object], key: str, where: str, *, required: bool) -> str:
    value = data.get(key, "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise InvalidInput(f"{where}: '{key}' must be {'non-empty ' if required else ''}text.")
    return value.strip()


def _card(data: object, where: str, *, cast: bool) -> Card:
    """A scenario file's card: its fields as ``Card`` names them (a cast member's type is
    always character)."""
    if not isinstance(data, dict):
        raise InvalidInput(f"{where}: each card must be an object.")
    kind = "character" if cast else _text(data, "type", where, required=True)
    if kind not in CARD_TYPES:
        raise InvalidInput(f"{where}: type {kind!r} is not one of {', '.join(CARD_TYPES)}.")
    keywords = _words(data, "keywords", where)
    if not keywords:
        raise InvalidInput(f"{where}: 'keywords' must be a non-empty list of text.")
    name = _text(data, "name", where, required=True)
    entry = _text(data, "entry", where, required=True)
    notes = _text(data, "notes", where, required=False)
    always_on = data.get("always_on", False)
    if not isinstance(always_on, bool):
        raise InvalidInput(f"{where}: 'always_on' must be true or false.")
    secondary = _words(data, "secondary_keywords", where)
    rule = data.get("secondary_rule", SecondaryRule.ANY)
    if not isinstance(rule, str) or rule not in tuple(SecondaryRule):
        rules = ", ".join(r.value for r in SecondaryRule)
        raise InvalidInput(f"{where}: 'secondary_rule' must be one of {rules}.")
    return Card(
        name=name,
        type=kind,
        keywords=keywords,
        entry=entry,
        notes=notes,
        always_on=always_on,
        secondary_keywords=secondary,
        secondary_rule=SecondaryRule(rule),
    )


def _words(data: dict[str, object], key: str, where: str) -> tuple[str, ...]:
    """A list of text, each item stripped; a missing list is empty."""
    words = data.get(key, [])
    if not isinstance(words, list) or not all(isinstance(w, str) and w.strip() for w in words):
        what = "a non-empty list" if key == "keywords" else "a list"
        raise InvalidInput(f"{where}: '{key}' must be {what} of text.")
    return tuple(w.strip() for w in words)


def parse_scenario(data: object, where: str) -> Scenario:
    if not isinstance(data, dict):
        raise InvalidInput(f"{where}: a scenario must be a JSON object.")
    persona = data.get("persona", {})
    if not isinstance(persona, dict) or not all(isinstance(v, str) for v in persona.values()):
        raise InvalidInput(f"{where}: 'persona' must be an object of text fields.")
    lists = {}
    for key in ("story_cards", "cast"):
        items = data.get(key, [])
        if not isinstance(items, list):
            raise InvalidInput(f"{where}: '{key}' must be a list.")
        lists[key] = tuple(
            _card(item, f"{where} {key}[{i}]", cast=key == "cast") for i, item in enumerate(items)
        )
    return Scenario(
        **{key: _text(data, key, where, required=True) for key in TEXT_FIELDS},
        **{key: _text(data, key, where, required=False) for key in OPTIONAL_TEXT},
        persona={k: v.strip() for k, v in persona.items()},
        story_cards=lists["story_cards"],
        cast=lists["cast"],
    )


def load_scenarios(directory: Path = SCENARIO_DIR) -> dict[str, Scenario]:
    """Every ``*.json`` scenario in ``directory``, by id, in file-name order."""
    scenarios: dict[str, Scenario] = {}
    for path in sorted(directory.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise InvalidInput(
                f"{path.name}: not valid JSON ({exc.msg}, line {exc.lineno})."
            ) from None
        scenario = parse_scenario(data, path.name)
        if scenario.id in scenarios:
            raise InvalidInput(f"{path.name}: scenario id {scenario.id!r} is used twice.")
        scenarios[scenario.id] = scenario
    return scenarios
