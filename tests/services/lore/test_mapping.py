"""The mapping rules every format shares: names, types, keywords, always-on, disabled
entries, order, long entries, notes and provenance."""

from __future__ import annotations

from typing import Any

import pytest
from tests.services.lore.builders import lore, messages

from talekeeper.services.common import limits
from talekeeper.services.lore.mapping import card_type, instruction_like, split_parts

pytestmark = pytest.mark.no_database


def st(*entries: dict[str, Any], **options: Any) -> Any:
    """A SillyTavern World Info file of ``entries`` (uids 0, 1, ...), read."""
    book = {"entries": {str(i): {"uid": i, **e} for i, e in enumerate(entries)}}
    return lore(book, "Eldoria.json", **options)


def cards(*items: dict[str, Any], **options: Any) -> Any:
    """AI Dungeon story cards, read."""
    return lore(list(items), "cards.json", **options)


def entry(**fields: Any) -> dict[str, Any]:
    return {"key": ["k"], "content": "text", **fields}


# -- names --------------------------------------------------------------------------------


def test_the_name_is_the_title_with_whitespace_collapsed() -> None:
    assert st(entry(comment="  The \n  King  ")).cards[0].name == "The King"


def test_without_a_title_the_name_is_the_first_keyword_then_untitled_n() -> None:
    result = st(entry(key=["  ", "/a.b/", "Harbor"]), entry(key=[]), entry(key=[]))
    assert [c.name for c in result.cards] == ["Harbor", "Untitled entry 2", "Untitled entry 3"]


def test_a_long_name_is_cut_and_reported() -> None:
    result = st(entry(comment="N" * 130))
    assert result.cards[0].name == "N" * limits.CARD_NAME_MAX
    assert any("is 130 characters; cut to 120" in m for m in messages(result, "changed"))


def test_duplicate_names_are_kept_and_reported() -> None:
    result = st(entry(comment="Mara"), entry(comment="mara"), entry(comment="Other"))
    assert [c.name for c in result.cards] == ["Mara", "mara", "Other"]
    assert '2 cards are named "Mara"; all were kept' in messages(result, "info")


# -- types --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Characters", "character"),
        ("NPCs", "character"),
        ("Important People", "character"),
        ("Cast", "character"),
        ("Person", "character"),
        ("Locations", "location"),
        ("Places", "location"),
        ("Cities", "location"),
        ("Regions of the north", "location"),
        ("World", "location"),
        ("Items", "item"),
        ("Weapons", "item"),
        ("Armor", "item"),
        ("Artifacts", "item"),
        ("Factions", "faction"),
        ("Guilds", "faction"),
        ("Great Houses", "faction"),
        ("Clans", "faction"),
        ("Knightly orders", "faction"),
        ("History", "lore"),
        ("Races", "lore"),
        ("Magic", "lore"),
        ("Culture", "lore"),
        ("Religions", "lore"),
        ("Events", "lore"),
        ("Creatures", "lore"),
        ("Spaceships", "lore"),
        ("class", "lore"),
    ],
)
def test_a_type_name_is_matched_by_its_words(text: str, expected: str) -> None:
    assert card_type(text) == (expected, f"Original type: {text}")


@pytest.mark.parametrize("exact", ["character", "location", "item", "faction", "lore", "other"])
def test_an_exact_type_keeps_no_note(exact: str) -> None:
    assert card_type(exact) == (exact, "")
    assert card_type(exact.title()) == (exact, "")


def test_no_type_at_all_is_lore_without_a_note() -> None:
    assert card_type("") == ("lore", "")
    card = cards({"title": "A", "keys": "a", "value": "b", "type": "Weapons"}).cards[0]
    assert (card.type, "Original type: Weapons" in card.notes) == ("item", True)


# -- keywords -----------------------------------------------------------------------------


def test_keywords_are_trimmed_deduplicated_ignoring_case_in_order() -> None:
    result = st(entry(key=[" Mara ", "", "mara", "the smuggler", "MARA", "Boat"]))
    assert result.cards[0].keywords == ("Mara", "the smuggler", "Boat")
    assert messages(result, "changed") == []


@pytest.mark.parametrize(
    ("key", "words"),
    [
        ("/\\b(sword|blade)\\b/i", ("sword", "blade")),
        ("/(?:axe|hatchet)/", ("axe", "hatchet")),
        ("/\\bsword\\b|\\bsabre\\b/gi", ("sword", "sabre")),
        ("/the\\-end/", ("the-end",)),
        ("/Lord Ash/", ("Lord Ash",)),
        ("/\\/etc\\//", ("/etc/",)),
    ],
)
def test_a_pattern_of_literals_becomes_those_keywords(key: str, words: tuple[str, ...]) -> None:
    result = st(entry(comment="Card", key=[key]))
    assert result.cards[0].keywords == words


@pytest.mark.parametrize(
    "key", ["/a.b/", "/sw(o|0)rd/", "/\\d+ coins/", "/^start/", "/[ab]c/", "/colou?r/"]
)
def test_any_other_pattern_is_dropped_into_the_notes_and_reported(key: str) -> None:
    result = st(entry(comment="Card", key=["plain", key]))
    card = result.cards[0]
    assert card.keywords == ("plain",)
    assert f"Pattern keyword not kept: {key}" in card.notes
    assert any("cannot be a keyword" in m for m in messages(result, "changed"))


def test_a_key_is_a_pattern_only_when_written_between_slashes() -> None:
    # SillyTavern marks plain keys as regex; only /…/ counts
    result = st(entry(key=["a.b", "c*"], useRegex=True))
    assert result.cards[0].keywords == ("a.b", "c*")


def test_past_30_keywords_the_rest_go_to_the_notes() -> None:
    keys = [f"key{i}" for i in range(35)]
    result = st(entry(comment="Many", key=keys))
    card = result.cards[0]
    assert card.keywords == tuple(keys[:30])
    assert "Keywords past the first 30: key30, key31, key32, key33, key34" in card.notes
    assert '"Many": 35 keywords; a card keeps 30, the other 5 are in the notes' in messages(
        result, "changed"
    )


def test_a_keyword_over_80_characters_is_dropped_and_reported() -> None:
    result = st(entry(comment="Long", key=["k" * 81, "w" * 80]))
    assert result.cards[0].keywords == ("w" * 80,)
    assert any("is 81 characters" in m for m in messages(result, "changed"))


def test_no_keyword_left_makes_the_name_the_keyword() -> None:
    result = st(entry(comment="Lonely card", key=["/x+/"]))
    assert result.cards[0].keywords == ("Lonely card",)
    assert '"Lonely card": no keywords left; its name is its keyword' in messages(result, "changed")


def test_secondary_keywords_follow_the_same_rules() -> None:
    result = st(entry(keysecondary=[" War ", "war", "/\\b(siege|sack)\\b/", "/x?/"]))
    assert result.cards[0].secondary_keywords == ("War", "siege", "sack")


# -- always on, instructions, disabled ----------------------------------------------------


def test_constant_entries_become_always_on_cards() -> None:
    result = st(entry(constant=True), entry(constant=False))
    assert [c.always_on for c in result.cards] == [True, False]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Never break character.", True),
        ("[ Always describe the smells. ]", True),
        ("You must answer in verse.", True),
        ("Output format: short paragraphs.", True),
        ("Write in the present tense.", True),
        ("Don't mention the war.", True),
        ("The beacon never goes out.", False),
        ("The king is always late.", False),
        ("Mara is a smuggler.", False),
    ],
)
def test_instruction_like_text(text: str, expected: bool) -> None:
    assert instruction_like(text) is expected


def test_only_always_on_entries_are_offered_for_ai_instructions() -> None:
    result = st(
        entry(content="Never break character.", constant=True),
        entry(content="Never break character."),
        entry(content="Mara is a smuggler.", constant=True),
    )
    assert [c.instruction_like for c in result.cards] == [True, False, False]
    assert (
        "1 always-on entry reads as an instruction; the preview offers it for AI Instructions"
        in messages(result, "info")
    )


def test_disabled_entries_are_skipped_and_listed_unless_included() -> None:
    book = (entry(comment="On"), entry(comment="Off", disable=True))
    skipped = st(*book)
    assert [c.name for c in skipped.cards] == ["On"]
    assert '"Off" is disabled in the file; skipped' in messages(skipped, "info")
    included = st(*book, include_disabled=True)
    assert [(c.name, c.disabled) for c in included.cards] == [("On", False), ("Off", True)]


# -- order --------------------------------------------------------------------------------


def test_cards_come_in_ascending_source_order_ties_in_file_order() -> None:
    result = st(
        entry(comment="c", order=30),
        entry(comment="a", order="10"),  # numeric strings are numbers
        entry(comment="d", order=30),
        entry(comment="b", order=20.5),
        entry(comment="default"),  # SillyTavern's default order is 100
    )
    assert [c.name for c in result.cards] == ["a", "b", "c", "d", "default"]
    assert [c.order for c in result.cards] == [1, 2, 3, 4, 5]


def test_formats_without_an_order_keep_the_file_order() -> None:
    result = cards(*({"title": t, "keys": t, "value": "v"} for t in ("z", "a", "m")))
    assert [c.name for c in result.cards] == ["z", "a", "m"]


# -- long entries -------------------------------------------------------------------------


def test_an_entry_of_8000_characters_is_kept_whole() -> None:
    assert len(st(entry(content="x" * 8000)).cards[0].entry) == 8000


def test_a_longer_entry_is_refused_with_its_length_unless_split() -> None:
    text = ("A sentence of the old chronicle. " * 300).strip()  # 9,899 characters
    refused = st(entry(comment="Chronicle", content=text), entry(comment="Short"))
    assert [c.name for c in refused.cards] == ["Short"]
    assert messages(refused, "refused") == [
        f'"Chronicle": the entry is {len(text):,} characters, over the 8,000 a card holds; '
        'choose "split into parts" to import it as 2 cards'
    ]
    split = st(entry(comment="Chronicle", key=["old", "tale"], content=text), split_long=True)
    assert [c.name for c in split.cards] == ["Chronicle (1)", "Chronicle (2)"]
    assert all(c.keywords == ("old", "tale") for c in split.cards)
    assert all(len(c.entry) <= 8000 for c in split.cards)
    assert " ".join(c.entry for c in split.cards) == text
    assert split.cards[0].entry.endswith("chronicle.")  # cut where a sentence ends


def test_split_parts_prefers_paragraphs_and_never_loses_text() -> None:
    text = "a" * 5000 + "\n\n" + "b" * 5000 + "\n" + "c" * 7000
    parts = split_parts(text)
    assert parts == ["a" * 5000, "b" * 5000, "c" * 7000]
    unbroken = "x" * 17_000
    assert split_parts(unbroken) == ["x" * 8000, "x" * 8000, "x" * 1000]


# -- notes and provenance -----------------------------------------------------------------


def test_notes_carry_provenance_comment_and_dropped_settings() -> None:
    book = {
        "entries": [
            {
                "keys": ["harbor"],
                "content": "The harbor.",
                "name": "Harbor",
                "comment": "written in a hurry",
                "id": 3,
                "priority": 10,
                "case_sensitive": True,
            }
        ]
    }
    notes = lore(book, "Harbor book.json").cards[0].notes
    assert notes == (
        "Imported from character book (Character Card V2) `Harbor book.json`, entry id 3.\n"
        "Comment: written in a hurry\n"
        "Dropped settings: case_sensitive true, priority 10."
    )


def test_the_provenance_names_the_sillytavern_uid() -> None:
    assert st(entry(), entry()).cards[1].notes == (
        "Imported from SillyTavern World Info `Eldoria.json`, entry uid 1."
    )


def test_notes_over_the_limit_are_cut_and_reported() -> None:
    result = cards({"title": "A", "keys": "a", "value": "b", "description": "n" * 9000})
    assert len(result.cards[0].notes) == limits.CARD_NOTES_MAX
    assert any("the first 8,000 were kept" in m for m in messages(result, "changed"))


def test_lost_settings_are_counted_per_setting() -> None:
    result = st(*(entry(position=4, depth=2) for _ in range(14)), entry())
    lost = [i for i in result.report.items if i.level == "lost"]
    assert [(i.message, i.count, i.path) for i in lost] == [
        (
            "14 entries set an insertion position; story cards have one place in the context.",
            14,
            'entries["0"]',
        ),
        (
            "14 entries set an insertion depth; story cards have one place in the context.",
            14,
            'entries["0"]',
        ),
    ]


def test_the_report_opens_with_totals() -> None:
    result = st(
        entry(comment="a"), entry(key="a, b"), entry(comment="c", position=1), entry(disable=True)
    )
    shown = result.to_json()["report"]
    assert list(shown) == ["totals", "items"]
    assert shown["totals"] == {"cards": 2, "refused": 1, "changed": 0, "lost": 1, "info": 1}
    assert [i["level"] for i in shown["items"]] == ["refused", "lost", "info"]


def test_one_bad_entry_is_refused_with_its_path_and_the_rest_read() -> None:
    result = st(entry(comment="good"), entry(key="a, b"), entry(content=None), entry(content=7))
    assert [c.name for c in result.cards] == ["good"]
    assert messages(result, "refused") == [
        'entries["1"].key must be a list of text; got text "a, b"',
        'entries["2"].content is missing; an entry needs its text',
        'entries["3"].content must be text; got number 7',
    ]
    assert [i.path for i in result.report.items if i.level == "refused"] == [
        'entries["1"]',
        'entries["2"]',
        'entries["3"]',
    ]


def test_missing_optional_fields_take_defaults_and_unknown_fields_are_ignored() -> None:
    result = st({"key": ["k"], "content": "c", "brandNewSetting": {"x": 1}})
    card = result.cards[0]
    assert (card.always_on, card.disabled, card.secondary_keywords) == (False, False, ())
    assert result.report.items == ()


def test_an_empty_text_where_a_key_list_goes_is_no_keys_not_a_refusal() -> None:
    """Exporters of other tools write ``"keysecondary": ""`` for none: the entry is made."""
    book = {
        "entries": {
            "0": {"uid": 0, "key": ["Reva"], "keysecondary": "", "comment": "Reva", "content": "x"},
            "1": {"uid": 1, "key": "lantern, lamp", "comment": "Lamp", "content": "y"},
        }
    }
    found = lore(book)
    assert [(c.name, c.keywords, c.secondary_keywords) for c in found.cards] == [
        ("Reva", ("Reva",), ())
    ]
    # a key list written as text with keys in it is still refused, with where and why
    assert messages(found, "refused") == [
        'entries["1"].key must be a list of text; got text "lantern, lamp"'
    ]
