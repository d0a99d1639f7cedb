"""Passages: exact budgets with the one-char counter, sections never crossed, coverage."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from talekeeper.core.tokens import BpeCounter, CharCounter
from talekeeper.services.library import (
    Document,
    DocumentKind,
    Passage,
    Section,
    read_document,
    split_passages,
)

pytestmark = pytest.mark.no_database

CHARS = CharCounter()


def doc(*sections: Section) -> Document:
    return Document("t", DocumentKind.TXT, list(sections))


def squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


def test_whole_paragraphs_merge_while_they_fit_exactly() -> None:
    section = Section((), None, ["a" * 10, "b" * 10, "c" * 10])
    passages = split_passages(doc(section), CHARS, max_tokens=22, min_tokens=0)
    assert [p.text for p in passages] == ["a" * 10 + "\n\n" + "b" * 10, "c" * 10]
    assert [p.tokens for p in passages] == [22, 10]
    one_less = split_passages(doc(section), CHARS, max_tokens=21, min_tokens=0)
    assert [p.text for p in one_less] == ["a" * 10, "b" * 10, "c" * 10]


def test_never_across_sections() -> None:
    first = Section(("Book One",), 3, ["short."])
    second = Section(("Book Two",), 4, ["also short."])
    passages = split_passages(doc(first, second), CHARS, max_tokens=200)
    assert [(p.text, p.heading_path, p.page) for p in passages] == [
        ("short.", ("Book One",), 3),
        ("also short.", ("Book Two",), 4),
    ]
    assert [p.ordinal for p in passages] == [0, 1]


def test_long_paragraph_cut_at_sentence_ends() -> None:
    paragraph = "One two three. Four five six! “Seven eight?” Nine."
    passages = split_passages(doc(Section((), None, [paragraph])), CHARS, 30, 0)
    assert [p.text for p in passages] == ["One two three. Four five six!", "“Seven eight?” Nine."]
    assert all(p.tokens <= 30 for p in passages)


def test_long_sentence_cut_at_word_boundaries_never_mid_word() -> None:
    words = [f"word{i}" for i in range(40)]
    paragraph = " ".join(words)
    passages = split_passages(doc(Section((), None, [paragraph])), CHARS, 23, 0)
    assert all(p.tokens <= 23 for p in passages)
    assert [w for p in passages for w in p.text.split(" ")] == words


def test_a_word_longer_than_the_budget_is_cut_as_a_last_resort() -> None:
    passages = split_passages(doc(Section((), None, ["x" * 25])), CHARS, 10, 0)
    assert [p.text for p in passages] == ["x" * 10, "x" * 10, "x" * 5]


def test_short_last_piece_joins_its_neighbour_when_they_fit() -> None:
    section = Section((), None, ["a" * 10, "b" * 10, "cc"])
    passages = split_passages(doc(section), CHARS, max_tokens=26, min_tokens=5)
    assert [p.text for p in passages] == ["a" * 10 + "\n\n" + "b" * 10 + "\n\n" + "cc"]
    apart = split_passages(doc(section), CHARS, max_tokens=25, min_tokens=5)
    assert [p.text for p in apart] == ["a" * 10 + "\n\n" + "b" * 10, "cc"]


def test_location() -> None:
    assert Passage(0, "x", ("Book One", "The Harbour"), 12, 1).location() == (
        "Book One › The Harbour, p. 12"
    )
    assert Passage(0, "x", (), 3, 1).location() == "p. 3"
    assert Passage(0, "x", ("Lore",), None, 1).location() == "Lore"


def test_bad_budgets_are_refused() -> None:
    with pytest.raises(ValueError):
        split_passages(doc(), CHARS, max_tokens=0)
    with pytest.raises(ValueError):
        split_passages(doc(), CHARS, max_tokens=10, min_tokens=11)


def test_real_counter_keeps_the_budget() -> None:
    counter = BpeCounter()
    text = "\n\n".join(
        " ".join(f"The harbour master counted {i} ships at dawn." for i in range(n))
        for n in (1, 3, 40, 2, 90)
    )
    passages = split_passages(read_document(text.encode(), "a.txt"), counter, 60, 10)
    assert all(0 < p.tokens <= 60 for p in passages)
    assert all(p.tokens == counter.count(p.text) for p in passages)
    assert squeeze("".join(p.text for p in passages)) == squeeze(text)


words = st.text(alphabet="abcxyzé.!?”", min_size=1, max_size=12)
paragraphs = st.lists(words, min_size=1, max_size=30).map(" ".join)
sections = st.builds(
    Section,
    st.tuples(st.sampled_from(["A", "B", "C"])),
    st.none() | st.integers(1, 9),
    st.lists(paragraphs, min_size=1, max_size=6),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(sections, max_size=5), st.integers(1, 60), st.integers(0, 60))
def test_every_character_in_exactly_one_passage_in_order(
    parts: list[Section], max_tokens: int, min_tokens: int
) -> None:
    min_tokens = min(min_tokens, max_tokens)
    document = doc(*parts)
    passages = split_passages(document, CHARS, max_tokens, min_tokens)
    assert squeeze("".join(p.text for p in passages)) == squeeze(document.text)
    assert all(0 < p.tokens <= max_tokens for p in passages)
    assert [p.ordinal for p in passages] == list(range(len(passages)))
    # never across sections: each section's passages rebuild exactly that section
    at = 0
    for section in parts:
        own = squeeze("".join(section.paragraphs))
        taken, start = "", at
        while len(taken) < len(own):
            assert passages[at].heading_path == section.heading_path
            assert passages[at].page == section.page
            taken += squeeze(passages[at].text)
            at += 1
        assert taken == own
        last = passages[start:at][-2:]
        if len(last) == 2 and last[1].tokens < min_tokens:
            # a short last piece stays apart only when joining would break the budget
            assert CHARS.count(last[0].text + "\n\n" + last[1].text) > max_tokens or (
                CHARS.count(last[0].text + " " + last[1].text) > max_tokens
            )
    assert at == len(passages)
