"""One declaration of a card's fields: ``Card``. What carries more subclasses it, what a
client sends is read by its names, a stored card keeps every field, and the export file's
entry declares the same fields."""

from __future__ import annotations

import json
from dataclasses import MISSING, fields

import pytest

from talekeeper.core.errors import InvalidInput
from talekeeper.services.cards.model import CARD_FIELDS, Card, card_json
from talekeeper.services.cards.rules import (
    CardView,
    SecondaryRule,
    card_columns,
    clean_card,
    clean_card_changes,
)
from talekeeper.services.exchange.fileformat import CardEntry
from talekeeper.services.lore import CardDraft
from talekeeper.storage.models import StoryCard

pytestmark = pytest.mark.no_database

# Every field away from its default: a field that is dropped anywhere shows.
FULL = Card(
    name="Storm Lore",
    type="lore",
    keywords=("storm", "gale"),
    entry="Storms come from the west.",
    notes="Kept for the finale.",
    always_on=True,
    secondary_keywords=("sea", "night"),
    secondary_rule=SecondaryRule.ALL,
)
FULL_JSON = {
    "name": "Storm Lore",
    "type": "lore",
    "keywords": ["storm", "gale"],
    "entry": "Storms come from the west.",
    "notes": "Kept for the finale.",
    "always_on": True,
    "secondary_keywords": ["sea", "night"],
    "secondary_rule": "all",
}


def test_the_sample_sets_every_field_away_from_its_default() -> None:
    assert list(FULL_JSON) == list(CARD_FIELDS)
    for field in fields(Card):
        assert field.default is MISSING or getattr(FULL, field.name) != field.default, field.name


def test_a_card_as_json_is_its_fields_in_order_then_a_subclass_s_own() -> None:
    assert card_json(FULL) == FULL_JSON
    assert list(card_json(FULL)) == list(CARD_FIELDS)
    view = CardView(id=7, **vars(FULL))
    assert list(card_json(view)) == [*CARD_FIELDS, "id", "known_by"]
    assert card_json(view)["known_by"] is None
    assert card_json(CardView(id=7, **vars(FULL), known_by=("Mara",)))["known_by"] == ["Mara"]
    draft = CardDraft(**vars(FULL), order=2, source="$.entries[0]")
    assert list(card_json(draft))[: len(CARD_FIELDS)] == list(CARD_FIELDS)
    assert list(card_json(draft))[len(CARD_FIELDS) :] == [
        "disabled",
        "order",
        "instruction_like",
        "source",
    ]


def test_a_client_s_card_keeps_every_field_and_a_card_reads_as_its_json() -> None:
    assert clean_card(FULL_JSON) == FULL
    assert clean_card(FULL) == FULL
    draft = CardDraft(**vars(FULL), disabled=True, source="$.entries[0]")
    assert clean_card(draft) == FULL  # a draft's own fields are not a card's


def test_a_client_s_card_takes_the_defaults_for_what_it_leaves_out() -> None:
    assert clean_card({"name": "Mara"}) == Card(name="Mara", type="other", keywords=(), entry="")


@pytest.mark.parametrize("name", CARD_FIELDS)
def test_a_change_holds_exactly_the_fields_given(name: str) -> None:
    assert clean_card_changes({name: FULL_JSON[name]}) == {name: getattr(FULL, name)}


def test_a_change_is_validated_as_a_new_card_is() -> None:
    assert clean_card_changes({}) == {}
    assert clean_card_changes(FULL_JSON) == vars(FULL)
    with pytest.raises(InvalidInput, match="'name' must not be empty"):
        clean_card_changes({"name": " "})


def test_a_stored_card_keeps_every_field() -> None:
    columns = card_columns(FULL)
    assert list(columns) == list(CARD_FIELDS)
    assert json.loads(str(columns["keywords"])) == FULL_JSON["keywords"]
    assert columns["secondary_rule"] == "all"
    row = StoryCard(id=7, adventure_id=1, **columns)
    assert CardView.of(row) == CardView(id=7, **vars(FULL))
    assert card_columns(clean_card_changes({"keywords": ["a"]})) == {"keywords": '["a"]'}


def test_what_carries_more_than_a_card_adds_only_its_own_fields() -> None:
    assert [f.name for f in fields(CardView)] == [*CARD_FIELDS, "id", "known_by"]
    assert [f.name for f in fields(CardDraft)] == [
        *CARD_FIELDS,
        "disabled",
        "order",
        "instruction_like",
        "source",
    ]


def test_the_export_file_s_card_declares_the_card_s_fields() -> None:
    assert list(CardEntry.model_fields) == [*CARD_FIELDS, "known_by", "created_at", "updated_at"]
