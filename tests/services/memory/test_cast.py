"""The cast brief: order, the line cap, the cut, whole-word matching and the setting tail."""

from __future__ import annotations

import pytest

from talekeeper.core.tokens import BpeCounter, CharCounter
from talekeeper.services.cards.rules import CardView
from talekeeper.services.memory.cast import (
    CAST_LINES,
    LINE_CHARS,
    SETTING_TOKENS,
    Persona,
    cast_brief,
    collapse,
)

pytestmark = pytest.mark.no_database

CHARS = CharCounter()
MARA = Persona("Mara", "she/her", "A lamplighter's apprentice.")
NOBODY = Persona("", "", "")


def card(id_: int, name: str, type_: str, *keywords: str, entry: str = "") -> CardView:
    return CardView(
        id=id_,
        name=name,
        type=type_,
        keywords=keywords,
        entry=entry or f"About {name}.",
        notes="SECRET NOTE",
    )


MAREN = card(1, "Old Maren", "character", "maren", "old maren")
TOWER = card(2, "The Great Lantern", "location", "great lantern", "tower")
OIL = card(3, "Brine-Oil", "item", "brine-oil", "tin")
PIP = card(4, "Pip Haddow", "character", "pip")
VANE = card(5, "Alric Vane", "character", "alric", "vane")
CHOIR = card(6, "The Drowned Choir", "lore", "choir")
CARDS = [MAREN, TOWER, OIL, PIP, VANE, CHOIR]


def lines(brief: str) -> list[str]:
    return brief.split("\n")


def test_protagonist_then_named_cards_then_other_characters_then_the_setting() -> None:
    block = "You climb the tower with your tin. Alric Vane bars the door."
    brief = cast_brief(MARA, CARDS, block, "The coast is dark.", CHARS)
    assert lines(brief) == [
        'Protagonist, written as "you": Mara (she/her). A lamplighter\'s apprentice.',
        "The Great Lantern (location): About The Great Lantern.",
        "Brine-Oil (item): About Brine-Oil.",
        "Alric Vane (character): About Alric Vane.",
        "Old Maren (character): About Old Maren.",  # filler: characters only, card order
        "Pip Haddow (character): About Pip Haddow.",
        "Setting: The coast is dark.",
    ]
    assert "SECRET" not in brief  # notes never reach the summary model
    assert "Choir" not in brief  # not named, and lore never fills a line


def test_an_unnamed_protagonist_is_the_player() -> None:
    brief = cast_brief(NOBODY, [], "You wait.", "", CHARS)
    assert brief == 'Protagonist, written as "you": the player (unnamed).'
    described = Persona("  ", "they/them", "A drifter.")
    assert lines(cast_brief(described, [], "", "", CHARS)) == [
        'Protagonist, written as "you": the player (unnamed, they/them). A drifter.'
    ]


def test_keywords_match_whole_words_only_ignoring_case() -> None:
    mara_card = card(7, "Mara Vell", "location", "mara")
    assert "Mara Vell" not in cast_brief(MARA, [mara_card], "The Marathon began.", "", CHARS)
    assert "Mara Vell" in cast_brief(MARA, [mara_card], "MARA's boat rocked.", "", CHARS)
    phrase = card(8, "Keepers' Door", "location", "keepers' door")
    assert "Keepers' Door" in cast_brief(MARA, [phrase], "the keepers'   door", "", CHARS)


def test_the_protagonist_and_the_cards_make_at_most_eight_lines() -> None:
    many = [card(i, f"Person {i}", "character", f"p{i}") for i in range(20)]
    block = " ".join(f"p{i}" for i in range(15, 20))  # five named, late in card order
    brief = lines(cast_brief(MARA, many, block, "Setting text.", CHARS))
    assert len(brief) == CAST_LINES + 1  # the setting line is extra
    names = [line.split(" (")[0] for line in brief[1:CAST_LINES]]
    assert names == [f"Person {i}" for i in (15, 16, 17, 18, 19, 0, 1)]
    assert brief[-1] == "Setting: Setting text."


def test_named_cards_beyond_the_cap_are_left_out_in_card_order() -> None:
    many = [card(i, f"Place {i}", "location", f"k{i}") for i in range(12)]
    block = " ".join(f"k{i}" for i in range(12))
    brief = lines(cast_brief(MARA, many, block, "", CHARS))
    assert [line.split(" (")[0] for line in brief[1:]] == [f"Place {i}" for i in range(7)]


def test_each_entry_is_one_line_cut_at_240_characters_on_a_word_boundary() -> None:
    long_entry = "word " * 30 + "\n\n  lighthouse   keeper " + "x" * 20 + " " + "tide " * 40
    brief = lines(
        cast_brief(MARA, [card(9, "Long", "character", "z", entry=long_entry)], "", "", CHARS)
    )
    line = brief[1]
    assert len(line) <= LINE_CHARS and line.endswith("…")
    assert "\n" not in line and "  " not in line
    kept = line[: -len("…")]
    assert " ".join(long_entry.split()).startswith(kept.split(": ", 1)[1])
    whole = f"Long (character): {' '.join(long_entry.split())}"
    assert whole[len(kept)] == " "  # the cut fell between two words


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("short   text\n here", 240, "short text here"),
        ("alpha beta gamma", 16, "alpha beta gamma"),  # exactly at the limit: untouched
        ("alpha beta gamma", 15, "alpha beta…"),
        ("alpha beta gamma", 11, "alpha beta…"),  # the cut lands on the space: keep both words
        ("alpha beta gamma", 10, "alpha…"),
        ("alpha, beta gamma", 11, "alpha…"),  # no dangling comma before the ellipsis
        ("abcdefghijklmnop", 8, "abcdefg…"),  # one long word is cut inside: never over
        ("alpha beta", 0, ""),
    ],
)
def test_collapse(text: str, limit: int, expected: str) -> None:
    assert collapse(text, limit) == expected
    assert len(collapse(text, limit)) <= limit


def test_the_setting_is_the_last_300_tokens_of_the_plot_essentials() -> None:
    essentials = "a" * 100 + " " + "b" * (SETTING_TOKENS - 1)  # the cut falls on the space
    brief = cast_brief(MARA, [], "", essentials, CHARS)
    assert lines(brief)[-1] == "Setting: …" + "b" * (SETTING_TOKENS - 1)
    exact = "c" * SETTING_TOKENS
    assert lines(cast_brief(MARA, [], "", exact, CHARS))[-1] == f"Setting: {exact}"


def test_a_setting_cut_inside_a_word_drops_the_fragment() -> None:
    opening = "x" * 50 + "fragment"
    rest = " the lantern went dark "
    essentials = opening + rest + "y" * (SETTING_TOKENS - len("ent") - len(rest))
    tail = CHARS.tail(essentials, SETTING_TOKENS)
    assert tail.startswith("ent ")  # the counter's tail alone would show half a word
    brief = cast_brief(MARA, [], "", essentials, CHARS)
    assert lines(brief)[-1] == "Setting: …" + tail[len("ent ") :]


def test_the_setting_collapses_whitespace_and_real_tokens_stay_within_the_limit() -> None:
    bpe = BpeCounter()
    essentials = "The coast is dark.\n\n" + "The keepers argue about the tide. " * 80
    setting = lines(cast_brief(MARA, [], "", essentials, bpe))[-1]
    assert setting.startswith("Setting: …")
    assert bpe.count(setting.removeprefix("Setting: …")) <= SETTING_TOKENS
    assert setting.endswith("about the tide.")
    assert cast_brief(MARA, [], "", " \n ", bpe).count("Setting") == 0
