"""The card rules beyond one keyword: always-on cards, secondary keywords with their rule,
and keywords in scripts written without spaces (matched as substrings). Pure functions;
the matcher is held to a per-keyword reference, as in ``test_card_matcher``."""

from __future__ import annotations

import _sre  # type: ignore[import-not-found]
import sys
import time
from re import _casefix  # type: ignore[attr-defined]
from typing import Literal

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from talekeeper.services.cards.match import SPACELESS, fold, keyword_in
from talekeeper.services.cards.rules import (
    CardView,
    FiredCard,
    SecondaryRule,
    cards_section,
    fired_cards,
    in_section,
)
from talekeeper.services.prompt.insights import CardPart

pytestmark = pytest.mark.no_database

ANY, ALL, NONE = SecondaryRule.ANY, SecondaryRule.ALL, SecondaryRule.NONE


def card(
    id_: int,
    keywords: tuple[str, ...],
    secondary: tuple[str, ...] = (),
    rule: SecondaryRule = ANY,
    *,
    always_on: bool = False,
    name: str = "",
) -> CardView:
    return CardView(
        id=id_,
        name=name or f"Card {id_}",
        type="other",
        keywords=keywords,
        entry=f"Entry {id_}.",
        always_on=always_on,
        secondary_keywords=secondary,
        secondary_rule=rule,
    )


# -- always-on cards ---------------------------------------------------------------------------


def test_always_on_cards_come_first_every_turn_and_say_so() -> None:
    mara = card(1, ("mara",), name="Mara")
    rules = card(2, ("never said",), always_on=True, name="House Rules")
    port = card(3, ("port",), name="Port")
    oath = card(4, ("port",), always_on=True, name="Oath")  # fires too, but is always on
    cards = [mara, rules, port, oath]
    fired = fired_cards(cards, "Rain on the port.", "ask Mara")
    section = in_section(cards, fired)
    assert [(f.card.name, f.keyword, f.where) for f in section] == [
        ("House Rules", "", None),
        ("Oath", "", None),
        ("Mara", "mara", "input"),
        ("Port", "port", "story"),
    ]
    text, reason = cards_section(section)
    assert text.splitlines()[:2] == ["House Rules (other): Entry 2.", "Oath (other): Entry 4."]
    assert reason.startswith("House Rules: always on; Oath: always on; Mara: 'mara' in the input")
    assert CardPart.of(section[0]).public() == {
        "id": 2,
        "name": "House Rules",
        "type": "other",
        "keyword": None,
        "where": None,
        "always_on": True,
    }
    quiet = in_section(cards, fired_cards(cards, "Nothing here.", ""))  # no keyword at all
    assert [f.card.name for f in quiet] == ["House Rules", "Oath"]


def test_an_always_on_card_still_fires_by_its_keywords_for_the_scene() -> None:
    oath = card(4, ("port",), always_on=True)
    assert [(f.keyword, f.where) for f in fired_cards([oath], "the port", "")] == [
        ("port", "story")
    ]


# -- secondary keywords --------------------------------------------------------------------------

STORM = ("storm", "thunder")


@pytest.mark.parametrize(
    ("rule", "story", "player", "fires", "held"),
    [
        (ANY, "Mara waits.", "", False, ()),  # no secondary keyword
        (ANY, "Mara waits in the storm.", "", True, ("storm",)),
        (ANY, "Mara waits.", "listen for THUNDER", True, ("thunder",)),  # in the input
        (ANY, "Thunder, then the storm; Mara waits.", "", True, ("storm", "thunder")),
        (ALL, "Mara waits in the storm.", "", False, ()),
        (ALL, "Mara waits in the storm.", "count the thunder", True, ("storm", "thunder")),
        (NONE, "Mara waits.", "", True, ()),
        (NONE, "Mara waits in the storm.", "", False, ()),
        (NONE, "Mara waits.", "thunder!", False, ()),
        (ANY, "Mara waits in the stormy night.", "", False, ()),  # whole words, as primaries
        (NONE, "Storm-tossed, Mara waits.", "", False, ()),
    ],
)
def test_secondary_keywords_join_a_primary_one_by_their_rule(
    rule: SecondaryRule, story: str, player: str, fires: bool, held: tuple[str, ...]
) -> None:
    mara = card(1, ("mara",), STORM, rule)
    fired = fired_cards([mara], story, player)
    assert bool(fired) is fires
    if fired:
        assert (fired[0].keyword, fired[0].where, fired[0].secondary) == ("mara", "story", held)


def test_secondary_keywords_alone_fire_nothing() -> None:
    mara = card(1, ("mara",), STORM, ANY)
    assert fired_cards([mara], "storm and thunder", "") == []
    assert fired_cards([card(2, ("mara",), STORM, NONE)], "storm", "") == []


def test_a_card_without_secondary_keywords_fires_on_a_primary_whatever_its_rule() -> None:
    for rule in SecondaryRule:
        assert [f.keyword for f in fired_cards([card(1, ("mara",), (), rule)], "Mara", "")] == [
            "mara"
        ]


def test_insights_records_the_primary_and_the_secondary_keywords_that_held() -> None:
    any_card = card(1, ("mara", "smuggler"), STORM, ANY, name="Mara")
    none_card = card(2, ("port",), ("war", "plague"), NONE, name="Port")
    fired = fired_cards([any_card, none_card], "The port at night. A storm.", "find the smuggler")
    assert [CardPart.of(f).public() for f in fired] == [
        {
            "id": 1,
            "name": "Mara",
            "type": "other",
            "keyword": "smuggler",
            "where": "input",
            "always_on": False,
            "secondary_rule": "any",
            "secondary": ["storm"],
            "secondary_keywords": ["storm", "thunder"],
        },
        {
            "id": 2,
            "name": "Port",
            "type": "other",
            "keyword": "port",
            "where": "story",
            "always_on": False,
            "secondary_rule": "none",
            "secondary": [],
            "secondary_keywords": ["war", "plague"],
        },
    ]
    assert cards_section(fired)[1] == (
        "Mara: 'smuggler' in the input, with 'storm'; "
        "Port: 'port' in the story, and none of 'war', 'plague'"
    )


# -- scripts without spaces ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("keyword", "text", "fires"),
    [
        ("東京", "我们去東京吧", True),
        ("東京", "我们去东京吧", False),  # another character, not another case
        ("さくら", "さくらが来た", True),
        ("サクラ", "さくらが来た", False),  # katakana is not hiragana
        ("서울", "서울에서", True),
        ("กรุงเทพ", "ไปกรุงเทพวันนี้", True),
        ("กรุงเทพ", "ไปกรุงเ ทพวันนี้", False),
        ("東京 タワー", "東京  タワーに行く", True),  # words of a phrase apart by any white space
        ("Tokyo東京", "I love TOKYO東京!", True),  # ignoring case, as a substring
        ("mara", "Marathon", False),  # Latin keywords keep whole words
        ("mara", "東京のmaraさん", False),  # \w joins them to the kana around them
        ("mara", "東京の mara さん", True),
    ],
)
def test_keywords_of_spaceless_scripts_match_as_substrings(
    keyword: str, text: str, fires: bool
) -> None:
    assert keyword_in(keyword, text) is fires
    assert bool(fired_cards([card(1, (keyword,))], text, "")) is fires  # the matcher agrees


def test_spaceless_secondary_keywords_and_a_latin_primary() -> None:
    tokyo = card(1, ("Mara",), ("東京", "서울"), ALL)
    fired = fired_cards([tokyo], "Mara flew from 서울에서 to 我们去東京吧.", "")
    assert [(f.keyword, f.secondary) for f in fired] == [("Mara", ("東京", "서울"))]


def _case_classes() -> list[set[int]]:
    """The classes of code points ``re`` matches to each other ignoring case (see
    ``test_card_matcher``): equal simple lower case, or listed in its extra cases."""
    classes: dict[int, set[int]] = {}
    for code in range(sys.maxunicode + 1):
        lower = _sre.unicode_tolower(code)
        if lower != code:
            classes.setdefault(lower, {lower}).add(code)
    for lower, extra in _casefix._EXTRA_CASES.items():
        merged = set().union(*(classes.get(c, {c}) for c in (lower, *extra)))
        for member in merged:
            classes[member] = merged
    return list(classes.values())


def test_no_letter_of_a_spaceless_script_has_another_case() -> None:
    """What the substring index rests on: a spaceless keyword's letters appear in the text
    as they are (``re`` ignoring case matches them to no other letter) and fold to
    themselves, so the pairs of letters it is indexed by are the text's own."""
    for members in _case_classes():
        letters = [chr(c) for c in members]
        assert not any(SPACELESS.match(c) for c in letters), letters
    for code in range(sys.maxunicode + 1):
        letter = chr(code)
        if SPACELESS.match(letter):
            assert fold(letter) == letter, hex(code)


# -- the matcher against the reference, rules and scripts included -------------------------------

Place = Literal["input", "story"]
LETTERS = "aAmMrRıİkK東京都さくら서울กรุงเทพ_"
SPACE = " \n"
MARKS = "'-.,"


def reference(
    cards: list[CardView], story: str, player: str
) -> list[tuple[int, str, Place, tuple[str, ...]]]:
    """Every keyword of every card checked with ``keyword_in``: the input first, then the
    story; then the secondary keywords in either, by the card's rule."""
    places: tuple[tuple[Place, str], ...] = (("input", player), ("story", story))
    out: list[tuple[int, str, Place, tuple[str, ...]]] = []
    for view in cards:
        hit = next(
            ((k, where) for where, text in places for k in view.keywords if keyword_in(k, text)),
            None,
        )
        if hit is None:
            continue
        secondary = view.secondary_keywords
        held = tuple(k for k in secondary if keyword_in(k, player) or keyword_in(k, story))
        rule = view.secondary_rule
        met = (
            not secondary
            or (rule is ANY and bool(held))
            or (rule is ALL and len(held) == len(secondary))
            or (rule is NONE and not held)
        )
        if met:
            out.append((view.id, hit[0], hit[1], held))
    return out


words = st.text(LETTERS, min_size=1, max_size=4)
keywords = st.one_of(
    words,
    st.builds(lambda a, s, b: a + s + b, words, st.sampled_from([" ", "-", ". "]), words),
    st.text(LETTERS + SPACE + MARKS, max_size=5),
)


@st.composite
def scenes(draw: st.DrawFn) -> tuple[list[CardView], str, str]:
    specs = draw(
        st.lists(
            st.tuples(
                st.lists(keywords, max_size=3),
                st.lists(keywords, max_size=3),
                st.sampled_from(list(SecondaryRule)),
                st.booleans(),
            ),
            min_size=1,
            max_size=6,
        )
    )
    cards = [
        card(i + 1, tuple(p), tuple(s), rule, always_on=on)
        for i, (p, s, rule, on) in enumerate(specs)
    ]
    known = [k for p, s, _, _ in specs for k in (*p, *s)] or ["x"]
    piece = st.one_of(
        st.text(LETTERS + SPACE + MARKS, max_size=3),
        st.sampled_from(known),
        st.sampled_from(known).map(str.upper),
    )
    story = draw(st.lists(piece, max_size=8).map("".join))
    player = draw(st.lists(piece, max_size=4).map("".join))
    return cards, story, player


def _one(primary: str, secondary: tuple[str, ...], rule: SecondaryRule, story: str) -> object:
    return [card(1, (primary,), secondary, rule)], story, ""


@settings(max_examples=500, deadline=None)
@given(scenes())
@example(_one("東京", ("都",), ALL, "東京都"))
@example(_one("さく", ("くら",), NONE, "さくら"))
@example(_one("a", ("", "ก"), ALL, "a ก"))
def test_the_matcher_fires_exactly_what_the_reference_fires(
    scene: tuple[list[CardView], str, str],
) -> None:
    cards, story, player = scene
    fired = fired_cards(cards, story, player)
    assert [(f.card.id, f.keyword, f.where, f.secondary) for f in fired] == reference(
        cards, story, player
    )


def test_two_thousand_cards_of_spaceless_keywords_match_in_milliseconds() -> None:
    """The substring path keeps the matcher's cost: 2,000 cards of 30 Chinese keywords
    (secondary ones too) against a long Chinese scene, every keyword checked only when its
    first pair of letters is in the text."""
    base = 0x4E00

    def name(i: int, k: int) -> str:
        return chr(base + 3 * i % 20_000) + chr(base + 20_000 + k) + chr(base + 7 * k % 900)

    cards = [
        card(i + 1, tuple(name(i, k) for k in range(20)), tuple(name(i, k) for k in range(20, 30)))
        for i in range(2_000)
    ]
    story = "今天风很大，灯塔的光在雾里摇晃。" * 150 + name(1500, 7) + "。" + name(1500, 25)
    started = time.perf_counter()
    fired = fired_cards(cards, story, "")
    built = time.perf_counter() - started
    started = time.perf_counter()
    for _ in range(20):
        assert fired_cards(cards, story, "我等着") == fired
    per_turn = (time.perf_counter() - started) / 20
    assert [(f.card.id, f.keyword, f.secondary) for f in fired] == [
        (1501, name(1500, 7), (name(1500, 25),))
    ]
    assert built < 3.0, built
    assert per_turn < 0.05, per_turn


def test_an_always_on_fired_card_is_listed_once() -> None:
    oath = card(4, ("port",), always_on=True)
    section = in_section([oath], fired_cards([oath], "the port", ""))
    assert section == [FiredCard(oath, "", None)]
