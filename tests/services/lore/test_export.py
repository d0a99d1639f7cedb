"""Exports: each format read back by ``read_lore`` gives the same cards, and what the other
tool will not do as Talekeeper does is a warning."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.services.lore.builders import fixture

from talekeeper.core.errors import InvalidInput
from talekeeper.services.cards.match import CARD_TYPES
from talekeeper.services.cards.rules import SecondaryRule
from talekeeper.services.common import limits
from talekeeper.services.lore import (
    CardDraft,
    ExportFormat,
    LoreFormat,
    export_cards,
    read_lore,
)

pytestmark = pytest.mark.no_database


@dataclass(frozen=True)
class Card:
    """A story card as the database holds one (any object with these fields exports)."""

    name: str
    type: str
    keywords: list[str]
    entry: str
    notes: str = ""
    always_on: bool = False
    secondary_keywords: list[str] = field(default_factory=list)
    secondary_rule: str = "any"


CARDS = [
    Card("Mara Vell", "character", ["Mara", "the smuggler"], "A smuggler.", "Main NPC.\nOwes."),
    Card("Saltmarsh", "location", ["Saltmarsh"], "A drowned town.\n\nBells ring.", ""),
    Card("Lantern", "item", ["lantern", "/etc/", "a.b*"], "@@activate is just text here."),
    Card("Tide Guild", "faction", ["guild"], "Keepers of tides.", always_on=True),
    Card("The Drowning", "lore", ["flood"], "", "", secondary_keywords=["spring"]),
    Card(
        "Rules",
        "other",
        ["rules"],
        "Never break character.",
        "Kept.",
        always_on=True,
        secondary_keywords=["rain", "/x/"],
        secondary_rule="all",
    ),
    Card(
        "Ghost  Ship",
        "lore",
        ["東京", "ghost"],
        "Only at night.",
        secondary_keywords=["fog"],
        secondary_rule="none",
    ),
]
EXPECTED_FORMAT = {
    ExportFormat.AIDUNGEON: LoreFormat.AIDUNGEON_CARDS,
    ExportFormat.SILLYTAVERN: LoreFormat.SILLYTAVERN_WORLD_INFO,
    ExportFormat.CCV3: LoreFormat.LOREBOOK_V3,
    ExportFormat.NOVELAI: LoreFormat.NOVELAI_LOREBOOK,
}


def shown(card: Card | CardDraft) -> tuple[object, ...]:
    return (
        card.name,
        card.type,
        tuple(card.keywords),
        card.entry,
        card.notes,
        card.always_on,
        tuple(card.secondary_keywords),
        str(card.secondary_rule),
    )


@pytest.mark.parametrize("fmt", list(ExportFormat))
def test_an_export_read_back_gives_the_same_cards(fmt: ExportFormat) -> None:
    exported = export_cards(CARDS, fmt, title="Lantern Coast")
    back = read_lore(exported.data, exported.filename)
    assert back.format is EXPECTED_FORMAT[fmt]
    assert [shown(c) for c in back.cards] == [shown(c) for c in CARDS]
    levels = {item.level for item in back.report.items}
    assert levels <= {"changed", "info"}  # the escaped /etc/ and /x/ read as their text


@pytest.mark.parametrize("fmt", list(ExportFormat))
def test_drafts_read_from_another_tool_export_and_come_back(fmt: ExportFormat) -> None:
    drafts = read_lore(fixture("sillytavern_world_info.json"), "Eldoria.json").cards
    back = read_lore(export_cards(drafts, fmt).data, "again.json").cards
    assert [shown(c) for c in back] == [shown(c) for c in drafts]


def test_the_ai_dungeon_export_has_the_story_card_shape() -> None:
    exported = export_cards(CARDS[:1], "aidungeon", title="Lantern Coast")
    assert exported.filename == "lantern-coast.story-cards.json"
    (card,) = json.loads(exported.data)
    assert {k: card[k] for k in ("title", "type", "keys", "value", "description")} == {
        "title": "Mara Vell",
        "type": "character",
        "keys": "Mara,the smuggler",
        "value": "A smuggler.",
        "description": "Main NPC.\nOwes.",
    }


def test_the_ai_dungeon_export_warns_of_what_ai_dungeon_will_not_keep() -> None:
    cards = [
        Card("Long", "lore", ["a, b"], "x" * 1001),
        Card("On", "lore", ["on"], "y", always_on=True, secondary_keywords=["z"]),
    ]
    assert export_cards(cards, "aidungeon").warnings == (
        "'Long': its entry is 1,001 characters; AI Dungeon keeps 1,000 of a story card's",
        "'Long': keyword 'a, b' holds a comma; AI Dungeon reads it as separate keywords",
        "1 card: always on; AI Dungeon has no always-on cards",
        "1 card: AI Dungeon has no secondary keywords",
    )


def test_the_sillytavern_export_matches_whole_words_ignoring_case_by_uid() -> None:
    exported = export_cards(CARDS, "sillytavern")
    entries = json.loads(exported.data)["entries"]
    assert list(entries) == [str(i) for i in range(len(CARDS))]
    rules = entries["5"]
    assert (rules["matchWholeWords"], rules["caseSensitive"]) == (True, False)
    assert (rules["keysecondary"], rules["selectiveLogic"]) == (["rain", "/\\/x\\//"], 3)
    assert entries["6"]["selectiveLogic"] == 2
    assert entries["2"]["key"] == ["lantern", "/\\/etc\\//", "a.b*"]
    assert exported.warnings == ()


def test_the_v3_export_keeps_type_and_notes_under_extensions_talekeeper() -> None:
    exported = export_cards(CARDS, "ccv3", title="Coast")
    book = json.loads(exported.data)
    assert book["spec"] == "lorebook_v3"
    first = book["data"]["entries"][0]
    assert first["extensions"]["talekeeper"] == {
        "type": "character",
        "notes": "Main NPC.\nOwes.",
        "secondary_rule": "any",
    }
    assert exported.warnings == (
        "2 cards: a secondary rule other than 'any'; other tools read V3 secondary keys as 'any'",
    )


def test_the_novelai_export_makes_types_categories() -> None:
    exported = export_cards(CARDS, "novelai")
    book = json.loads(exported.data)
    assert [c["name"] for c in book["categories"]] == [
        "Character",
        "Location",
        "Item",
        "Faction",
        "Lore",
        "Other",
    ]
    assert book["entries"][0]["category"] == "talekeeper-character"
    assert book["entries"][2]["keys"] == ["lantern", "/\\/etc\\//", "a.b*"]
    assert exported.warnings == ("3 cards: NovelAI has no secondary keywords",)


def test_an_unknown_export_format_is_refused() -> None:
    with pytest.raises(InvalidInput):
        export_cards(CARDS, "docx")


texts = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))
stripped = texts.map(str.strip)
words = stripped.filter(lambda w: 0 < len(w) <= limits.CARD_KEYWORD_MAX)
cards = st.builds(
    Card,
    name=stripped.filter(lambda n: 0 < len(n) <= limits.CARD_NAME_MAX),
    type=st.sampled_from(CARD_TYPES),
    keywords=st.lists(words, min_size=1, max_size=5, unique_by=str.casefold),
    entry=stripped,
    notes=stripped,
    always_on=st.booleans(),
    secondary_keywords=st.lists(words, max_size=3, unique_by=str.casefold),
    secondary_rule=st.sampled_from([str(rule) for rule in SecondaryRule]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(cards, max_size=6), st.sampled_from(list(ExportFormat)))
def test_any_valid_cards_come_back_the_same(made: list[Card], fmt: ExportFormat) -> None:
    if fmt is ExportFormat.AIDUNGEON:  # its keys are one comma-separated text
        made = [c for c in made if not any("," in k for k in c.keywords + c.secondary_keywords)]
        if not made:
            return  # an empty list is no AI Dungeon file: nothing says what it is
    back = read_lore(export_cards(made, fmt).data, "back.json")
    assert [shown(c) for c in back.cards] == [shown(c) for c in made]
    assert all(len(c.name) <= limits.CARD_NAME_MAX for c in back.cards)
