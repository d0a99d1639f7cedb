"""Each format's own fields: what it reads them as, what it reports lost, and the scenario
parts of the files that start an adventure."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.services.lore.builders import fixture, lore, messages

from talekeeper.services.cards.rules import SecondaryRule
from talekeeper.services.common import limits
from talekeeper.services.lore import read_scenario

pytestmark = pytest.mark.no_database


def scenario(value: Any, filename: str = "story.json", **options: Any) -> Any:
    return read_scenario(json.dumps(value).encode("utf-8"), filename, **options)


def lost(result: Any) -> list[str]:
    return messages(result, "lost")


# -- SillyTavern --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("logic", "rule"),
    [(0, SecondaryRule.ANY), (2, SecondaryRule.NONE), (3, SecondaryRule.ALL), (None, "any")],
)
def test_sillytavern_selective_logic_becomes_the_secondary_rule(logic: Any, rule: str) -> None:
    item = {"key": ["a"], "keysecondary": ["b"], "content": "c", "selectiveLogic": logic}
    card = lore({"entries": {"0": item}}).cards[0]
    assert (card.secondary_keywords, card.secondary_rule) == (("b",), rule)


def test_sillytavern_not_all_keeps_the_secondary_keys_in_the_notes() -> None:
    item = {"key": ["a"], "keysecondary": ["b", "c"], "content": "x", "selectiveLogic": 1}
    result = lore({"entries": {"0": item}})
    assert result.cards[0].secondary_keywords == ()
    assert "Secondary keys (NOT ALL rule): b, c" in result.cards[0].notes
    assert lost(result)[0].startswith("1 entry used the NOT ALL rule for secondary keys")


def test_sillytavern_defaults_are_not_reported_lost() -> None:
    item = {
        "key": ["a"],
        "content": "x",
        "position": 0,
        "depth": 4,
        "probability": 100,
        "useProbability": True,
        "caseSensitive": None,
        "matchWholeWords": None,
        "group": "",
        "scanDepth": None,
        "selective": True,
        "keysecondary": [],
    }
    assert lore({"entries": {"0": item}}).report.items == ()


def test_sillytavern_probability_counts_only_when_used() -> None:
    item = {"key": ["a"], "content": "x", "probability": 10, "useProbability": False}
    assert lost(lore({"entries": {"0": item}})) == []


# -- character books ----------------------------------------------------------------------


def test_a_book_entry_named_by_name_keeps_its_comment_as_a_memo() -> None:
    result = lore(json.loads(fixture("character_book.json")), "Harbor.json")
    harbor = next(c for c in result.cards if c.name == "Harbor")
    assert "Comment: written in a hurry" in harbor.notes
    assert (harbor.secondary_keywords, harbor.secondary_rule) == (("night",), "any")
    lighthouse = next(c for c in result.cards if c.name == "Lighthouse")
    assert lighthouse.secondary_keywords == ()
    assert "Secondary keys (switched off in the file): storm" in lighthouse.notes
    assert [c.name for c in result.cards] == ["Lighthouse", "Harbor"]  # insertion_order


def test_v3_decorators_go_to_the_notes_and_activate_makes_always_on() -> None:
    result = lore(json.loads(fixture("lorebook_v3.json")))
    skyships = next(c for c in result.cards if c.name == "Skyships")
    assert skyships.entry == "Skyships sail on wind-stone."
    assert skyships.always_on
    assert "Decorators: @@depth 4; @@activate" in skyships.notes
    wind = next(c for c in result.cards if c.name == "Wind")
    assert "Dropped settings" not in wind.notes  # @@activate alone is acted on
    assert lost(result) == [
        "1 entry used @@decorators; they are in the card's notes, not acted on."
    ]


def test_use_regex_makes_every_key_a_pattern() -> None:
    book = {
        "entries": [{"keys": ["\\b(isle|island)\\b", "a.b"], "content": "x", "use_regex": True}]
    }
    card = lore(book).cards[0]
    assert card.keywords == ("isle", "island")
    assert "Pattern keyword not kept: a.b" in card.notes


# -- NovelAI ------------------------------------------------------------------------------


def test_novelai_categories_give_types_and_budget_priority_orders() -> None:
    result = lore(json.loads(fixture("novelai_lorebook.json")))
    assert [(c.name, c.type) for c in result.cards] == [
        ("Sir Kell", "character"),
        ("Aurelia", "location"),
        ("Style", "lore"),
    ]
    assert result.cards[2].always_on


def test_novelai_context_settings_are_lost_only_when_not_default() -> None:
    result = lore(json.loads(fixture("novelai_lorebook.json")))
    assert lost(result) == [
        "1 entry set a prefix; it was dropped.",
        "1 entry set a suffix; it was dropped.",
        "1 entry set a token budget; the Story Cards section has one budget for all.",
        "1 entry set an insertion position; story cards have one place in the context.",
    ]
    kell = result.cards[0]
    assert 'Dropped settings: prefix "[ ", suffix " ]", tokenBudget 200' in kell.notes


def test_a_novelai_scenario_and_story_fill_the_plot_components() -> None:
    draft = read_scenario(fixture("novelai_scenario.json"), "Eldoria.scenario")
    assert (draft.title, draft.opening) == (
        "Eldoria Rising",
        "The gates of ${city} close behind you.",
    )
    assert (draft.plot_essentials, draft.authors_note) == (
        "You are a knight of Eldoria.",
        "[ Style: epic ]",
    )
    assert (
        "Placeholders (${...}) were left as written: edit them once the adventure is made."
        in messages(draft, "info")
    )
    story = read_scenario(fixture("novelai_story.json"), "night.story")
    assert story.opening == "The bell tolls midnight. You draw your sword."
    assert [c.type for c in story.cards] == ["item"]


def test_a_novelai_story_without_readable_text_says_so() -> None:
    value = {"storyContainerVersion": 1, "content": {"document": "AAEC", "context": []}}
    draft = scenario(value, "Old Watch.story")
    assert draft.opening == ""
    assert draft.title == "Old Watch"
    assert lost(draft) == [
        "The story's text is stored in an encoded document Talekeeper cannot read; the "
        "opening is empty."
    ]


# -- AI Dungeon ---------------------------------------------------------------------------


def test_ai_dungeon_cards_read_title_type_keys_value_and_description() -> None:
    result = lore(json.loads(fixture("aidungeon_cards.json")), "cards.json")
    mara = result.cards[0]
    assert (mara.name, mara.type, mara.keywords, mara.entry) == (
        "Mara Vell",
        "character",
        ("Mara", "the smuggler"),
        "A smuggler who runs the Lantern Coast.",
    )
    assert "Comment: The main NPC." in mara.notes


def test_ai_dungeon_files_say_that_keys_no_longer_match_inside_words() -> None:
    for name in ("aidungeon_cards.json", "aidungeon_world_info.json", "aidungeon_scenario.json"):
        info = messages(lore(json.loads(fixture(name))), "info")
        assert any("Talekeeper fires a keyword only as a whole word" in m for m in info)


def test_ai_dungeon_world_info_is_named_by_its_first_key_and_keys_are_plain() -> None:
    result = lore(json.loads(fixture("aidungeon_world_info.json")))
    assert [(c.name, c.keywords) for c in result.cards] == [
        ("dragon", ("dragon", "wyrm")),
        ("/not a pattern/", ("/not a pattern/",)),
    ]


def test_an_ai_dungeon_scenario_fills_every_component_and_reports_scripts() -> None:
    draft = read_scenario(fixture("aidungeon_scenario.json"), "coast.json")
    assert draft.title == "The Lantern Coast"
    assert draft.opening == "You stand on the pier as the lanterns go out."
    assert draft.ai_instructions == "Write in second person, present tense."
    assert draft.plot_essentials == "Mara owes you money."
    assert draft.authors_note == "Keep it moody."
    assert lost(draft) == [
        "The file's scripts were not imported: Talekeeper never runs a file's code."
    ]


def test_an_ai_dungeon_adventure_opens_with_its_actions() -> None:
    value = {
        "data": {
            "adventure": {
                "title": "Run",
                "prompt": "You wake.",
                "actions": [{"text": " You run."}, {"text": " They follow."}, 5],
                "state": {"instructions": {"scenario": "Be terse."}, "memory": "Hunted."},
                "storyCards": [],
            }
        }
    }
    draft = scenario(value)
    assert draft.opening == "You wake. You run. They follow."
    assert (draft.ai_instructions, draft.plot_essentials) == ("Be terse.", "Hunted.")


# -- KoboldAI -----------------------------------------------------------------------------


def test_kobold_anti_keys_become_the_rule_none() -> None:
    result = lore(json.loads(fixture("kobold_world_info.json")))
    fog = next(c for c in result.cards if c.name == "Fog")
    assert (fog.secondary_keywords, fog.secondary_rule) == (("clear",), "none")
    storm = next(c for c in result.cards if c.name == "Storm")
    assert (storm.secondary_keywords, storm.secondary_rule) == (("sea",), "any")
    assert "Anti-keys: calm" in storm.notes
    tamsin = result.cards[0]
    assert (tamsin.type, tamsin.keywords) == ("character", ("Tamsin", "lighthouse keeper"))


def test_kobold_folders_give_types_in_classic_and_united_saves() -> None:
    classic = read_scenario(fixture("kobold_story.json"), "lighthouse.json")
    assert [(c.name, c.type) for c in classic.cards] == [("Lamp", "item")]
    assert classic.title == "lighthouse"
    assert (
        classic.opening == "The storm hits the lighthouse. You climb the stairs. The lamp flickers."
    )
    united = read_scenario(fixture("kobold_united.json"), "x.json")
    assert [(c.name, c.type, c.secondary_keywords) for c in united.cards] == [
        ("Keeper", "character", ("night",))
    ]
    assert (united.title, united.authors_note) == ("Lighthouse", "Slow.")


def test_kobold_united_keys_must_be_lists() -> None:
    value = {
        "gamestarted": True,
        "file_version": 2,
        "worldinfo_v2": {"entries": {"3": {"key": "a,b", "content": "x"}}},
    }
    result = lore(value)
    assert messages(result, "refused") == [
        'worldinfo_v2.entries["3"].key must be a list of text; got text "a,b"'
    ]


# -- Agnai and RisuAI ---------------------------------------------------------------------


def test_agnai_wildcards_go_to_the_notes_and_weight_orders() -> None:
    result = lore(json.loads(fixture("agnai_memory.json")))
    assert [c.name for c in result.cards] == ["Hall", "Gate"]
    gate = result.cards[1]
    assert gate.keywords == ("gate",)
    assert "Wildcard keyword not kept: door*" in gate.notes
    assert lost(result) == ["1 entry set a priority; cards keep their creation order instead."]


def test_risu_folders_give_types_and_folder_entries_make_no_card() -> None:
    result = lore(json.loads(fixture("risu_lorebook.json")))
    assert [(c.name, c.type) for c in result.cards] == [
        ("World rule", "lore"),
        ("Vessans", "lore"),
        ("Vessa", "location"),
    ]
    vessa = result.cards[2]
    assert vessa.secondary_keywords == ("gate", "wall")
    assert result.cards[0].always_on and result.cards[0].entry == "Magic is rare."
    assert result.cards[1].keywords == ("vessan", "vessans")


# -- character cards ----------------------------------------------------------------------


def test_a_v2_card_fills_the_scenario_and_makes_the_character_a_card() -> None:
    draft = read_scenario(fixture("character_card_v2.json"), "Seren.json", persona_name="Ada")
    assert draft.title == "Seren Ashdown"
    assert draft.opening == 'Seren Ashdown unrolls a map. "Ready, Ada?"'
    assert draft.alternate_greetings == ("Seren Ashdown waves from a hill.",)
    assert draft.ai_instructions == "Stay in character as Seren Ashdown."
    assert draft.authors_note == "Describe the land."
    assert draft.plot_essentials == "Ada and Seren Ashdown map the Sunken Vale."
    assert draft.description == "Best with long replies."
    seren = draft.cards[0]
    assert (seren.name, seren.type, seren.keywords) == (
        "Seren Ashdown",
        "character",
        ("Seren Ashdown", "Seren"),
    )
    assert seren.entry == "Seren Ashdown is a cartographer.\n\nCurious."
    assert "Example dialogue:\nAda: Where to?\nSeren Ashdown: North." in seren.notes
    assert "Tags: explorer, fantasy" in seren.notes
    assert "Creator: someone" in seren.notes


def test_placeholders_without_a_persona_become_you() -> None:
    draft = read_scenario(fixture("character_card_v1.json"), "Ysolde.json")
    assert draft.plot_essentials == "you has stowed away aboard the Gull."
    assert draft.cards[0].entry.startswith("Captain Ysolde Marr commands the Gull.")


def test_placeholder_spellings_comments_and_dice() -> None:
    card = {
        "name": "Bo",
        "first_mes": "{{Char}} and <bot> greet {{ USER }} and <User>.{{// secret}}",
        "description": "{{random:a,b}} {{roll:d6}} {{time}}",
    }
    draft = scenario(card, persona_name="Ada")
    assert draft.opening == "Bo and Bo greet Ada and Ada."
    assert draft.cards[0].entry == "{{random:a,b}} {{roll:d6}} {{time}}"
    assert messages(draft, "changed") == [
        "{{char}}/<BOT> became 'Bo' and {{user}}/<USER> became 'Ada' (4 places)",
        "1 {{// comment}} macro dropped",
    ]
    assert messages(draft, "info")[:2] == [
        "2 {{random}}/{{roll}} macros left as written; Talekeeper does not roll dice",
        "1 other {{...}} macro left as written",
    ]


def test_a_v3_nickname_is_who_char_is() -> None:
    draft = read_scenario(fixture("character_card_v3.json"), "c.json", persona_name="Ada")
    assert draft.opening == '"Welcome, Ada," says Corvina.'
    assert "1 group-only greeting not offered." in messages(draft, "info")


def test_card_scripts_are_reported_not_imported() -> None:
    for name in ("character_card_v2.json", "character_card_v3.json"):
        assert "The card's scripts were not imported: Talekeeper never runs a file's code." in lost(
            read_scenario(fixture(name), name)
        )


# -- scenario checks ----------------------------------------------------------------------


def test_overlong_scenario_parts_are_kept_whole_and_reported() -> None:
    card = {
        "name": "A",
        "first_mes": "o" * (limits.NARRATION_MAX + 1),
        "scenario": "p",
        "description": "",
    }
    draft = scenario(card)
    assert len(draft.opening) == limits.NARRATION_MAX + 1
    assert messages(draft, "refused") == [
        "The opening is 20,001 characters; an adventure holds at most 20,000. Shorten it in "
        "the preview."
    ]


def test_a_long_title_is_cut_and_a_missing_one_comes_from_the_file_name() -> None:
    lite = {"title": "T" * 250, "prompt": "p", "memory": "", "worldinfo": []}
    assert scenario(lite).title == "T" * limits.TITLE_MAX
    untitled = {"title": "", "prompt": "p", "memory": "", "worldinfo": []}
    draft = scenario(untitled, "Frost Harbor.json")
    assert draft.title == "Frost Harbor"
    assert "The file names no title; the adventure is called 'Frost Harbor'" in messages(
        draft, "info"
    )


def test_a_card_without_an_opening_says_so() -> None:
    draft = scenario({"name": "A", "description": "d", "personality": "p"})
    assert draft.opening == ""
    assert "The file has no opening; write one in the preview." in messages(draft, "info")
