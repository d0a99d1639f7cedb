"""The term rules lexical retrieval matches on: one test per rule."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from talekeeper.services.memory.terms import STOP_WORDS, term_set, terms

pytestmark = pytest.mark.no_database


def test_lowercase_word_tokens_of_letters_and_digits() -> None:
    assert terms("Vault 7 opened; CODE-42!") == ["vault", "7", "opened", "code", "42"]


def test_apostrophes_stay_inside_words_only() -> None:
    assert terms("the 'old' smith's o'brien") == ["old", "smith", "o'brien"]


def test_underscore_is_not_a_word_character() -> None:
    assert terms("iron_gate") == ["iron", "gate"]


def test_unicode_letters_are_words() -> None:
    assert terms("Zoë visited Ålborg") == ["zoë", "visited", "ålborg"]


def test_possessive_s_is_dropped() -> None:
    assert terms("Mara's sword") == ["mara", "sword"]


def test_curly_possessive_s_is_dropped() -> None:
    assert terms("Mara’s sword") == ["mara", "sword"]


def test_trailing_apostrophe_of_a_plural_possessive_is_not_part_of_the_word() -> None:
    assert terms("the guards' swords") == ["guard", "sword"]


def test_plural_s_is_folded_on_words_of_five_or_more_letters() -> None:
    assert terms("lanterns doors") == ["lantern", "door"]


def test_short_words_keep_their_s() -> None:
    assert terms("keys arms") == ["keys", "arms"]


def test_words_ending_in_ss_keep_it() -> None:
    assert terms("glass fortress") == ["glass", "fortress"]


def test_no_stemmer_beyond_the_plural_fold() -> None:
    assert terms("running walked happily") == ["running", "walked", "happily"]


def test_stop_words_are_removed() -> None:
    assert terms("You and she were in the hall, and it was cold") == ["hall", "cold"]


def test_stop_words_include_contraction_leftovers() -> None:
    assert {"s", "t"} <= STOP_WORDS
    assert terms("don't you're it's") == []


def test_a_stop_word_is_not_folded_into_a_term() -> None:
    assert terms("always perhaps") == []


def test_order_and_duplicates_are_kept() -> None:
    assert terms("Lantern, lanterns, key, lantern") == ["lantern", "lantern", "key", "lantern"]


def test_term_set_is_the_distinct_terms() -> None:
    assert term_set("Mara's lanterns and Mara's lantern") == frozenset({"mara", "lantern"})


def test_empty_and_punctuation_only_text() -> None:
    assert terms("") == []
    assert terms("... !? --") == []


@given(st.text())
def test_every_term_is_lowercase_non_empty_and_not_a_stop_word(text: str) -> None:
    for term in terms(text):
        assert term
        assert term == term.lower()
        assert term not in STOP_WORDS


@given(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126)))
def test_case_does_not_matter_for_ascii_text(text: str) -> None:
    assert terms(text.upper()) == terms(text)
