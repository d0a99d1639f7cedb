"""Story card triggers, validation and search (pure functions)."""

from __future__ import annotations

import pytest

from talekeeper.core.errors import InvalidInput
from talekeeper.services.cards.model import Card
from talekeeper.services.cards.rules import (
    CardView,
    SecondaryRule,
    cards_section,
    clean_card,
    clean_card_changes,
    fired_cards,
    keyword_in,
    matches_search,
)

pytestmark = pytest.mark.no_database

MARA = CardView(
    id=1,
    name="Mara",
    type="character",
    keywords=("mara", "the smuggler"),
    entry="A smuggler with a limp.",
)
KEY = CardView(
    id=2, name="Brass Key", type="item", keywords=("brass key",), entry="Opens the lamp room."
)
PORT = CardView(
    id=3, name="Saltmouth", type="location", keywords=("saltmouth", "port"), entry="A harbour town."
)


@pytest.mark.parametrize(
    ("keyword", "text", "fires"),
    [
        ("mara", "You follow Mara.", True),
        ("mara", "MARA!", True),
        ("mara", "Mara's boat rocks.", True),
        ("mara", "The marathon begins.", False),
        ("mara", "Samara waves.", False),
        ("brass key", "a brass   key glints", True),
        ("brass key", "the brass keyhole", False),
        ("port", "the port-side rail", True),
        ("port", "a report", False),
        ("", "anything", False),
    ],
)
def test_keywords_fire_as_whole_words_ignoring_case(keyword: str, text: str, fires: bool) -> None:
    assert keyword_in(keyword, text) is fires


def test_the_input_is_checked_before_the_story_and_the_keyword_is_named() -> None:
    fired = fired_cards([MARA, KEY, PORT], "You reach the port. Mara waits.", "ask the smuggler")
    assert [(f.card.name, f.keyword, f.where) for f in fired] == [
        ("Mara", "the smuggler", "input"),
        ("Saltmouth", "port", "story"),
    ]
    text, reason = cards_section(fired)
    assert text == (
        "Mara (character): A smuggler with a limp.\nSaltmouth (location): A harbour town."
    )
    assert reason == "Mara: 'the smuggler' in the input; Saltmouth: 'port' in the story"


def test_nothing_fires_on_unrelated_text() -> None:
    assert fired_cards([MARA, KEY], "Rain falls on the empty square.", "wait") == []


def test_card_validation_states_what_to_fix() -> None:
    card = clean_card({"name": " Mara ", "type": "Character", "keywords": ["mara", "MARA", " x "]})
    assert card == Card(name="Mara", type="character", keywords=("mara", "x"), entry="")
    with pytest.raises(InvalidInput, match="'type' must be one of character, location"):
        clean_card({"name": "A", "type": "spell"})
    with pytest.raises(InvalidInput, match="'name' must not be empty"):
        clean_card({"name": " "})
    with pytest.raises(InvalidInput, match="'keywords' must be a list of text"):
        clean_card({"name": "A", "keywords": "mara"})
    with pytest.raises(InvalidInput, match="at most 30 keywords"):
        clean_card({"name": "A", "keywords": [f"k{i}" for i in range(31)]})
    with pytest.raises(InvalidInput, match="the limit is 8,000"):
        clean_card({"name": "A", "entry": "x" * 8001})
    assert clean_card_changes({"notes": "n"}) == {"notes": "n"}


def test_search_looks_at_name_keywords_entry_and_notes() -> None:
    assert matches_search(MARA, "SMUGGLER") and matches_search(KEY, "lamp room")
    assert not matches_search(PORT, "mara")


def test_the_card_rules_are_validated_like_keywords_and_state_what_to_fix() -> None:
    card = clean_card(
        {
            "name": "Storm",
            "always_on": True,
            "secondary_keywords": [" night ", "NIGHT", "rain", ""],
            "secondary_rule": " ALL ",
        }
    )
    assert card.always_on is True
    assert card.secondary_keywords == ("night", "rain")  # trimmed, no empties, de-duplicated
    assert card.secondary_rule is SecondaryRule.ALL
    assert clean_card_changes({"secondary_rule": "none"}) == {"secondary_rule": SecondaryRule.NONE}
    with pytest.raises(InvalidInput, match="'always_on' must be true or false; got 'yes'"):
        clean_card({"name": "A", "always_on": "yes"})
    with pytest.raises(InvalidInput, match="'secondary_keywords' must be a list of text"):
        clean_card({"name": "A", "secondary_keywords": "night"})
    with pytest.raises(InvalidInput, match="at most 30 secondary keywords"):
        clean_card({"name": "A", "secondary_keywords": [f"k{i}" for i in range(31)]})
    with pytest.raises(InvalidInput, match="'secondary_keywords' is 81 characters"):
        clean_card({"name": "A", "secondary_keywords": ["k" * 81]})
    with pytest.raises(InvalidInput, match="'secondary_rule' must be one of any, all, none; got"):
        clean_card({"name": "A", "secondary_rule": "some"})
    with pytest.raises(InvalidInput, match="'secondary_rule' must be one of any, all, none"):
        clean_card({"name": "A", "secondary_rule": 1})


def test_search_looks_at_secondary_keywords_too() -> None:
    storm = CardView(
        id=4,
        name="Storm",
        type="lore",
        keywords=("storm",),
        entry="",
        secondary_keywords=("lighthouse",),
    )
    assert matches_search(storm, "LIGHTHOUSE") and not matches_search(storm, "harbour")
