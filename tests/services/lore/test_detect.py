"""Recognition by content: every format of the list, in its order, and every whole-file
refusal (with what is wrong and where)."""

from __future__ import annotations

import json

import pytest
from tests.services.lore.builders import fixture, lore, refusal

from talekeeper.core.errors import InvalidInput
from talekeeper.services.lore import LoreFormat, read_lore, read_scenario
from talekeeper.services.lore.detect import recognise
from talekeeper.services.lore.fields import MAX_ENTRIES, MAX_FILE_BYTES
from talekeeper.services.lore.model import LABELS

pytestmark = pytest.mark.no_database

EXPECTED = {
    "aidungeon_cards.json": LoreFormat.AIDUNGEON_CARDS,
    "aidungeon_world_info.json": LoreFormat.AIDUNGEON_WORLD_INFO,
    "aidungeon_scenario.json": LoreFormat.AIDUNGEON_SCENARIO,
    "aidungeon_adventure.json": LoreFormat.AIDUNGEON_ADVENTURE,
    "novelai_lorebook.json": LoreFormat.NOVELAI_LOREBOOK,
    "novelai_scenario.json": LoreFormat.NOVELAI_SCENARIO,
    "novelai_story.json": LoreFormat.NOVELAI_STORY,
    "sillytavern_world_info.json": LoreFormat.SILLYTAVERN_WORLD_INFO,
    "character_book.json": LoreFormat.CHARACTER_BOOK,
    "lorebook_v3.json": LoreFormat.LOREBOOK_V3,
    "character_card_v1.json": LoreFormat.CHARACTER_CARD_V1,
    "pygmalion_card.json": LoreFormat.CHARACTER_CARD_V1,
    "character_card_v2.json": LoreFormat.CHARACTER_CARD_V2,
    "character_card_v3.json": LoreFormat.CHARACTER_CARD_V3,
    "agnai_memory.json": LoreFormat.AGNAI_MEMORY_BOOK,
    "risu_lorebook.json": LoreFormat.RISU_LOREBOOK,
    "kobold_world_info.json": LoreFormat.KOBOLD_WORLD_INFO,
    "kobold_story.json": LoreFormat.KOBOLD_STORY,
    "kobold_united.json": LoreFormat.KOBOLD_UNITED_STORY,
    "kobold_lite_scenario.json": LoreFormat.KOBOLD_LITE_SCENARIO,
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_fixture_is_recognised_by_its_content_whatever_its_name(name: str) -> None:
    data = fixture(name)
    assert read_lore(data, name).format is EXPECTED[name]
    assert read_lore(data, "misleading.lorebook.png").format is EXPECTED[name]


def test_every_format_has_a_fixture() -> None:
    assert set(EXPECTED.values()) == set(LoreFormat)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        # spec first: a V2 card with a stray "entries" is still a card
        ({"spec": "chara_card_v2", "data": {"name": "A"}, "entries": []}, "character_card_v2"),
        ({"spec": "chara_card_v3", "data": {"name": "A"}, "kind": "memory"}, "character_card_v3"),
        ({"spec": "lorebook_v3", "data": {"entries": []}}, "lorebook_v3"),
        # a NovelAI lorebook before an Agnai book (both have an entries list)
        ({"lorebookVersion": 5, "kind": "memory", "entries": []}, "novelai_lorebook"),
        ({"lorebookVersion": "4", "entries": []}, "novelai_lorebook"),
        ({"kind": "memory", "entries": []}, "agnai_memory_book"),
        ({"type": "risu", "data": []}, "risu_lorebook"),
        ({"entries": {"0": {"uid": 0}}}, "sillytavern_world_info"),
        ({"entries": {"a": {"key": ["x"], "content": "y"}}}, "sillytavern_world_info"),
        ({"entries": [{"keys": ["x"], "content": "y"}]}, "character_book"),
        ({"gamestarted": True, "worldinfo": []}, "koboldai_story"),
        ({"gamestarted": True, "file_version": 2}, "koboldai_united_story"),
        ({"gamestarted": True, "worldinfo_v2": {}}, "koboldai_united_story"),
        # a story save holds prompt, memory and worldinfo too: gamestarted decides first
        ({"gamestarted": True, "prompt": "", "memory": "", "worldinfo": []}, "koboldai_story"),
        ({"prompt": "", "memory": "", "worldinfo": []}, "kobold_lite_scenario"),
        ({"data": {"scenario": {"storyCards": []}}}, "aidungeon_scenario"),
        ({"data": {"adventure": {"storyCards": []}}}, "aidungeon_adventure"),
        ({"name": "A", "first_mes": "Hi", "description": ""}, "character_card_v1"),
        ({"char_name": "A", "char_greeting": "Hi", "char_persona": ""}, "character_card_v1"),
        # AI Dungeon cards do not need useForCharacterCreation
        ([{"keys": "a", "value": "b"}], "aidungeon_cards"),
        ([{"keys": "a", "entry": "b"}], "aidungeon_world_info"),
        ([{"key": "a", "content": "b"}], "kobold_world_info"),
        # one malformed item does not hide the shape of the others
        ([{"keys": ["a"], "value": "b"}, {"keys": "a", "value": "b"}], "aidungeon_cards"),
    ],
)
def test_the_first_matching_shape_wins(value: object, expected: str) -> None:
    assert recognise(value) == expected


@pytest.mark.parametrize(
    "value",
    [
        {"hello": "world"},
        {"name": "A"},  # one card field is not a card
        {"spec": "chara_card_v9", "data": {}},
        {"entries": [{"keys": "a", "content": "b"}]},
        [1, 2],
        [{"keys": ["a"], "value": "b"}],
        "text",
        42,
        None,
    ],
)
def test_anything_else_is_refused_listing_what_is_accepted(value: object) -> None:
    message = refusal(json.dumps(value).encode())
    assert "not a lore file Talekeeper recognises" in message
    assert all(label in message for label in LABELS.values())


def test_an_empty_list_or_object_holds_nothing() -> None:
    assert refusal(b"[]") == "The file holds nothing: an empty list or object, no entries."
    assert refusal(b" {} ") == "The file holds nothing: an empty list or object, no entries."


def test_text_and_binary_files_are_not_lore_files() -> None:
    assert "not a lore file Talekeeper recognises" in refusal(b"Once upon a time")
    assert "not a lore file Talekeeper recognises" in refusal(b"\x00\xff\xfe binary")
    assert "not a lore file Talekeeper recognises" in refusal(b"")


def test_invalid_json_is_refused_with_its_line_and_column() -> None:
    message = refusal(b'{\n  "entries": {,}\n}')
    assert message == (
        "The file is not valid JSON: Expecting property name enclosed in double quotes "
        "at line 2, column 15."
    )


def test_a_byte_order_mark_is_allowed() -> None:
    data = b"\xef\xbb\xbf" + fixture("agnai_memory.json")
    assert read_lore(data, "book.json").format is LoreFormat.AGNAI_MEMORY_BOOK


def test_a_risu_memory_preset_is_refused_as_such() -> None:
    message = refusal(json.dumps({"type": "risu", "data": {"name": "preset"}}).encode())
    assert message.startswith("This is a RisuAI memory preset, not a lorebook")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"entries": "a, b"}, 'entries must be a list or an object; got text "a, b".'),
        ({"entries": 3}, "entries must be a list or an object; got number 3."),
        ({"spec": "chara_card_v2", "data": []}, "data must be an object in a chara_card_v2 file"),
        ({"spec": "chara_card_v3"}, "data must be an object in a chara_card_v3 file; got null."),
        ({"spec": "lorebook_v3", "data": "x"}, "data must be an object in a lorebook_v3 file"),
        ({"lorebookVersion": 5, "entries": {}}, "entries must be a list in a NovelAI lorebook"),
        (
            {"spec": "chara_card_v2", "data": {"name": "A", "character_book": {"entries": {}}}},
            "data.character_book.entries must be a list of entries; got an object.",
        ),
        (
            {"spec": "chara_card_v2", "data": {"name": "A", "character_book": []}},
            "data.character_book must be an object; got a list.",
        ),
        ({"spec": "lorebook_v3", "data": {}}, "data.entries must be a list of entries; got null."),
        ({"data": {"scenario": {"storyCards": {}}}}, "data.scenario.storyCards must be a list"),
        ({"scenarioVersion": 1, "lorebook": []}, "lorebook must be an object; got a list."),
        ({"storyContainerVersion": 1}, "content must be an object; got null."),
        ({"gamestarted": True, "worldinfo": {}}, "worldinfo must be a list; got an object."),
        ({"gamestarted": True, "worldinfo_v2": []}, "worldinfo_v2 must be an object"),
        ({"prompt": "", "memory": "", "worldinfo": "x"}, "worldinfo must be a list"),
    ],
)
def test_a_container_field_of_the_wrong_type_refuses_the_file(value: object, message: str) -> None:
    assert message in refusal(json.dumps(value).encode())


def test_the_size_cap_is_checked_before_anything_is_decoded() -> None:
    message = refusal(b"\xff" * (MAX_FILE_BYTES + 1))  # not UTF-8: decoding would say so
    assert message == (
        f"The file is {MAX_FILE_BYTES + 1:,} bytes; Talekeeper reads lore files of at most 20 MB."
    )


def test_more_than_5000_entries_refuse_the_file_before_any_entry_is_read() -> None:
    # every entry malformed: were they read first, the answer would be 5,001 refusals
    entries = {str(i): {"uid": i, "key": "bad"} for i in range(MAX_ENTRIES + 1)}
    message = refusal(json.dumps({"entries": entries}).encode())
    assert message.startswith("entries holds 5,001 entries; Talekeeper reads at most 5,000")
    cards = [{"keys": "k", "value": "v"}] * (MAX_ENTRIES + 1)
    assert "holds 5,001 entries" in refusal(json.dumps(cards).encode())


def test_5000_entries_are_read() -> None:
    cards = [{"title": f"Card {i}", "keys": f"k{i}", "value": "v"} for i in range(MAX_ENTRIES)]
    assert len(lore(cards).cards) == MAX_ENTRIES


def test_json_nested_too_deeply_or_with_huge_numbers_is_refused() -> None:
    assert "nests its JSON too deeply" in refusal(b"[" * 100_000 + b"]" * 100_000)
    assert "not valid JSON" in refusal(b'{"entries": ' + b"9" * 5000 + b"}")


def test_a_lore_only_file_cannot_start_an_adventure() -> None:
    with pytest.raises(InvalidInput) as refused:
        read_scenario(fixture("sillytavern_world_info.json"), "Eldoria.json")
    assert refused.value.message == (
        "The file is lore only (SillyTavern World Info), with no opening to start an "
        "adventure from. Import it into an adventure's story cards instead."
    )
