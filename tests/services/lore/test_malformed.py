"""No input makes a reader fail in any other way than refusing it: random bytes, random JSON
in the shapes of the real formats, real files with one value replaced, and broken PNG and
CHARX containers. Whatever is read holds to a story card's limits."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.services.lore.builders import FIXTURES, charx, fixture_json, png, text_chunk

from talekeeper.core.errors import InvalidInput
from talekeeper.services.cards.match import CARD_TYPES
from talekeeper.services.common import limits
from talekeeper.services.lore import LoreImport, ScenarioDraft, read_lore, read_scenario

pytestmark = pytest.mark.no_database

_FIELD_NAMES = """spec data entries key keys keysecondary secondary_keys content text value
entry comment
name title uid id constant disable enabled order insertion_order selective selectiveLogic
position depth probability useProbability group scanDepth caseSensitive matchWholeWords
extensions talekeeper character_book use_regex lorebookVersion categories category
contextConfig displayName forceActivation budgetPriority prefix suffix tokenBudget
insertionPosition scenarioVersion storyContainerVersion story fragments document context
lorebook metadata kind keywords weight priority type secondkey useRegex folder mode
alwaysActive insertorder activationPercent gamestarted worldinfo worldinfo_v2 file_version
wifolders_d actions prompt memory authorsnote authornote keyanti wigroup widisabled scenario
adventure storyCards description personality first_mes mes_example alternate_greetings
system_prompt post_history_instructions creator_notes tags creator nickname assets
group_only_greetings char_name char_persona world_scenario char_greeting example_dialogue
regex_scripts risuai depth_prompt state instructions always_on secondary_keywords
secondary_rule notes desc story_name"""
FIELDS = _FIELD_NAMES.split()
WORDS = [
    "chara_card_v3",
    "chara_card_v2",
    "lorebook_v3",
    "memory",
    "risu",
    "folder",
    "constant",
    "after_char",
    "any",
    "all",
    "none",
    "character",
    "/\\b(a|b)\\b/i",
    "/x.+/",
    "@@activate\n@@depth 4\ntext",
    "{{char}} {{user}} {{// c}} {{roll:d6}}",
    "a, b,,c",
    "12",
    "1e400",
    "true",
    " ",
    "",
    "nul \x00 inside",
    "lone \ud800 surrogate",
]
leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(WORDS)
)
keys = st.sampled_from(FIELDS) | st.text(max_size=4)
values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=6),
    max_leaves=30,
)
SHAPES = [fixture_json(path.name) for path in sorted(FIXTURES.glob("*.json"))]
options = st.fixed_dictionaries({"include_disabled": st.booleans(), "split_long": st.booleans()})


def _check(result: LoreImport | ScenarioDraft) -> None:
    for card in result.cards:
        assert card.type in CARD_TYPES
        assert 0 < len(card.name) <= limits.CARD_NAME_MAX
        assert 0 < len(card.keywords) <= limits.CARD_KEYWORDS_MAX
        assert len(card.secondary_keywords) <= limits.CARD_KEYWORDS_MAX
        for word in (*card.keywords, *card.secondary_keywords):
            assert 0 < len(word) <= limits.CARD_KEYWORD_MAX and word == word.strip()
        assert len(card.entry) <= limits.CARD_ENTRY_MAX
        assert len(card.notes) <= limits.CARD_NOTES_MAX
    assert [card.order for card in result.cards] == list(range(1, len(result.cards) + 1))
    shown = result.to_json()
    text = json.dumps(shown, ensure_ascii=False)  # a preview is plain JSON
    assert "\x00" not in text and "\\u0000" not in text  # PostgreSQL text cannot hold NUL
    text.encode("utf-8")  # no lone surrogate
    assert shown["report"]["totals"]["cards"] == len(result.cards)


def read_anything(data: bytes, chosen: dict[str, bool]) -> None:
    """Both readers on ``data``: a preview within the limits, or ``InvalidInput``."""
    try:
        _check(read_lore(data, "upload.bin", **chosen))
    except InvalidInput as refused:
        assert refused.message
    try:
        _check(read_scenario(data, "upload.bin", persona_name="Ada", **chosen))
    except InvalidInput as refused:
        assert refused.message


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), options)
def test_random_bytes_are_read_or_refused(data: bytes, chosen: dict[str, bool]) -> None:
    read_anything(data, chosen)


@settings(max_examples=600, deadline=None)
@given(values, options)
def test_random_json_of_the_formats_fields_is_read_or_refused(
    value: Any, chosen: dict[str, bool]
) -> None:
    read_anything(json.dumps(value).encode(), chosen)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += _paths(inner, (*path, index))
    return found


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = json.loads(json.dumps(value))
    holder = copy
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = new
    return copy


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(SHAPES), st.data(), options)
def test_real_files_with_a_value_replaced_are_read_or_refused(
    shape: Any, data: st.DataObject, chosen: dict[str, bool]
) -> None:
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(shape)))
        shape = _replaced(shape, path, data.draw(values))
    read_anything(json.dumps(shape).encode(), chosen)


CARD = fixture_json("character_card_v2.json")
CONTAINERS = [png(text_chunk("chara", CARD)), charx(CARD, **{"assets/a.png": b"x" * 50})]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(CONTAINERS), st.data(), options)
def test_broken_png_and_charx_files_are_read_or_refused(
    whole: bytes, data: st.DataObject, chosen: dict[str, bool]
) -> None:
    broken = bytearray(whole)
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(broken) - 1))
        broken[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(8, len(broken)))
    read_anything(bytes(broken[:cut]), chosen)


def test_texts_no_story_can_store_are_mended_and_reported() -> None:
    data = b'[{"title": "A\\u0000B", "keys": "k\\ud800", "value": "\\ud83d\\ude00 ok"}]'
    result = read_lore(data, "cards.json")
    card = result.cards[0]
    assert (card.name, card.keywords, card.entry) == ("AB", ("k\ufffd",), "\U0001f600 ok")
    assert [i.message for i in result.report.items if i.level == "changed"] == [
        "2 texts held characters no story can store (NUL or a broken surrogate); NULs were "
        "dropped and the rest replaced with \ufffd"
    ]


def test_adversarial_texts_are_read_in_linear_time() -> None:
    """Texts shaped to make a backtracking pattern quadratic (or worse) are read at once:
    an unclosed comment opener repeated, a dice macro left open over a long run of spaces,
    a long run of sentence ends in an always-on entry, an entry to split into many parts."""
    import time

    card = {
        "spec": "chara_card_v2",
        "data": {
            "name": "A",
            "first_mes": "{{//" * 300_000,
            "description": "{{random" + " " * 1_000_000 + "x}",
            "character_book": {
                "entries": [
                    {"keys": ["a"], "content": "\n" * 1_000_000 + "x", "constant": True},
                    {"keys": ["/" + "a/" * 200_000 + "1"], "content": ". " * 600_000},
                ]
            },
        },
    }
    started = time.perf_counter()
    draft = read_scenario(json.dumps(card).encode(), "a.json", split_long=True)
    assert time.perf_counter() - started < 10
    assert len(draft.cards) > 100  # the long entries were split, not refused
