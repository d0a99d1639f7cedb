from __future__ import annotations

import json
import re
from dataclasses import MISSING, fields
from pathlib import Path

import pytest

from talekeeper.core.errors import InvalidInput
from talekeeper.services.cards.match import SecondaryRule
from talekeeper.services.cards.model import Card, card_json
from talekeeper.services.story.scenarios import load_scenarios, parse_scenario

pytestmark = pytest.mark.no_database

MINIMAL = {
    "id": "x",
    "title": "X",
    "genre": "fantasy",
    "description": "d",
    "opening": "You stand at a gate.",
    "story_cards": [
        {"name": "Ilse", "type": "character", "keywords": ["ilse"], "entry": "A guard."},
        {"name": "Gate", "type": "location", "keywords": ["gate"], "entry": "Old iron."},
    ],
    "cast": [
        {"name": "ilse", "keywords": ["ilse"], "entry": "Another Ilse."},
        {"name": "Oren", "keywords": ["oren"], "entry": "A ferryman."},
    ],
}


def test_the_cast_becomes_character_cards_deduplicated_by_name() -> None:
    cards = parse_scenario(MINIMAL, "x.json").cards_for_creation()
    assert [(c.name, c.type) for c in cards] == [
        ("Ilse", "character"),
        ("Gate", "location"),
        ("Oren", "character"),
    ]
    assert cards[0].entry == "A guard."  # the scenario's own card wins


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"opening": ""}, "'opening' must be non-empty text"),
        (
            {"story_cards": [{"name": "A", "type": "spell", "keywords": ["a"], "entry": "e"}]},
            "spell",
        ),
        ({"cast": [{"name": "A", "keywords": [], "entry": "e"}]}, "cast[0]: 'keywords'"),
        ({"persona": "Mara"}, "'persona' must be an object"),
    ],
)
def test_a_bad_scenario_is_refused_naming_the_file_and_field(change: dict, says: str) -> None:
    with pytest.raises(InvalidInput, match=re.escape(says)) as caught:
        parse_scenario(MINIMAL | change, "bad.json")
    assert caught.value.message.startswith("bad.json")


def test_a_directory_with_broken_json_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps(MINIMAL))
    (tmp_path / "b.json").write_text("{")
    with pytest.raises(InvalidInput, match="b.json: not valid JSON"):
        load_scenarios(tmp_path)


def test_the_shipped_scenarios_are_complete() -> None:
    scenarios = load_scenarios()
    assert sorted(s.genre for s in scenarios.values()) == ["fantasy", "mystery", "science fiction"]
    for scenario in scenarios.values():
        assert scenario.opening and scenario.plot_essentials
        assert scenario.ai_instructions and scenario.authors_note
        assert scenario.persona.get("name")
        assert len(scenario.story_cards) >= 6 and len(scenario.cast) >= 3
        cards = scenario.cards_for_creation()
        names = [c.name.casefold() for c in cards]
        assert len(names) == len(set(names))
        assert {m.name.casefold() for m in scenario.cast} <= set(names)
        assert len(cards) < len(scenario.story_cards) + len(scenario.cast)  # a name was shared


def test_clients_are_shown_the_cards_an_adventure_starts_with() -> None:
    scenario = parse_scenario(MINIMAL, "x.json")
    detail = scenario.detail()
    assert detail.story_cards == scenario.cards_for_creation()  # the cast's Oren included
    assert scenario.summary().cards == len(detail.story_cards) == 3


def test_a_scenario_card_holds_every_field_of_a_card() -> None:
    """A scenario file's card is read by ``Card``'s field names: each one set away from its
    default comes back as written (a field added to ``Card`` and not read here fails)."""
    full = Card(
        name="Storm Lore",
        type="lore",
        keywords=("storm", "gale"),
        entry="Storms come from the west.",
        notes="Kept for the finale.",
        always_on=True,
        secondary_keywords=("sea", "night"),
        secondary_rule=SecondaryRule.NONE,
    )
    for field in fields(Card):
        assert field.default is MISSING or getattr(full, field.name) != field.default, field.name
    scenario = parse_scenario(MINIMAL | {"story_cards": [card_json(full)]}, "x.json")
    assert scenario.story_cards == (full,)
