"""Who the player's input addresses (``services.world.addressed``): pure, no database.

One person or nobody, by rules: a vocative, a speaking verb in a do, or a question about
what someone knows. Naming someone is not addressing them, and a list or a shared name
singles out nobody.
"""

from __future__ import annotations

import pytest

from talekeeper.services.world.addressed import Addressed, AddressKind, addressed
from talekeeper.services.world.projection import Ref
from talekeeper.storage.vocabulary import EntityKind

pytestmark = pytest.mark.no_database

TOBIN = Ref(1, "Tobin", EntityKind.PERSON)
MARA = Ref(2, "Captain Mara", EntityKind.PERSON)
MAREN = Ref(3, "Old Maren", EntityKind.PERSON)
HALE = Ref(4, "Tobin Hale", EntityKind.PERSON)
MARSH = Ref(5, "Tobin Marsh", EntityKind.PERSON)
ANUND = Ref(6, "Ånund", EntityKind.PERSON)
MING = Ref(7, "明", EntityKind.PERSON)
KELL = Ref(8, "Kell", EntityKind.PERSON)  # known, never present here

HERE = [TOBIN, MARA, MAREN, ANUND, MING]
PEOPLE = [*HERE, KELL]


def who(
    action: str, text: str, present: list[Ref] = HERE, people: list[Ref] = PEOPLE
) -> Ref | None:
    found = addressed(action, text, present, people)
    return found.who if found else None


def test_a_say_starting_with_a_name_then_a_comma_addresses_them() -> None:
    assert addressed("say", "Tobin, where is the key?", HERE, PEOPLE) == Addressed(
        TOBIN, AddressKind.VOCATIVE, "Tobin,"
    )
    assert who("say", "Tobin: the key, now.") == TOBIN
    assert who("say", "Tobin! Run!") == TOBIN


def test_a_say_ending_with_a_name_after_a_comma_addresses_them() -> None:
    assert addressed("say", "Where is the key, Tobin?", HERE, PEOPLE) == Addressed(
        TOBIN, AddressKind.VOCATIVE, "Tobin?"
    )


def test_a_vocative_may_start_a_do_or_a_quotation_in_it() -> None:
    assert who("do", "Tobin, where is the key?") == TOBIN
    assert who("do", 'I turn and say, "Tobin, where is it?"') == TOBIN


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("ask Tobin where the key is", "ask Tobin"),
        ("I ask Tobin about the key", "ask Tobin"),
        ("I tell Tobin the truth", "tell Tobin"),
        ("You whisper to Tobin", "whisper to Tobin"),
        ("I say to Tobin that it is late", "say to Tobin"),
        ("I call out to Tobin", "call out to Tobin"),
    ],
)
def test_a_do_that_speaks_to_someone_addresses_them(text: str, words: str) -> None:
    assert addressed("do", text, HERE, PEOPLE) == Addressed(TOBIN, AddressKind.SPOKEN_TO, words)


def test_speaking_verbs_in_a_say_are_the_speaker_s_words_not_the_addressee() -> None:
    # Said aloud to someone else: Tobin is the one to be told, not the one spoken to.
    assert who("say", "Tell Tobin I said hello.") is None


@pytest.mark.parametrize(
    "text", ["Hey Tobin, where is it?", "Listen, Tobin: the key.", "Oh, Tobin!"]
)
def test_greetings_before_the_name_are_skipped(text: str) -> None:
    assert who("say", text) == TOBIN


@pytest.mark.parametrize(
    ("action", "text"),
    [
        ("say", "Kell, where is the key?"),
        ("do", "ask Kell where the key is"),
        ("do", "I whisper to Kell"),
    ],
)
def test_nobody_absent_is_spoken_to(action: str, text: str) -> None:
    assert who(action, text) is None


def test_anyone_known_may_be_asked_about_even_absent() -> None:
    assert addressed("say", "What does Kell know about the key?", HERE, PEOPLE) == Addressed(
        KELL, AddressKind.ABOUT_KNOWLEDGE, "What does Kell know"
    )
    assert who("say", "Does Kell know?") == KELL
    assert who("do", "I wonder what Kell saw") == KELL
    assert who("say", "Kell knows about the key?") == KELL
    assert who("do", "doesn't Kell know about it?") == KELL


def test_asking_someone_what_they_know_is_about_knowledge() -> None:
    assert addressed("say", "Tobin, do you know where the key is?", HERE, PEOPLE) == Addressed(
        TOBIN, AddressKind.ABOUT_KNOWLEDGE, "Tobin, do you know"
    )
    found = addressed("say", "Have you seen the key, Tobin?", HERE, PEOPLE)
    assert found is not None and found.how is AddressKind.ABOUT_KNOWLEDGE


@pytest.mark.parametrize("action", ["story", "continue"])
def test_narration_addresses_nobody(action: str) -> None:
    assert who(action, "Tobin, where is the key?") is None
    assert who(action, "I ask Tobin what he knows about the key") is None


@pytest.mark.parametrize(
    ("action", "text"),
    [
        ("say", "Mara and Tobin, listen"),
        ("say", "Mara, Tobin, listen!"),
        ("say", "Where is it, Mara and Tobin?"),
        ("do", "I ask Tobin and Mara about the key"),
        ("say", "Mara, what does Tobin know about the key?"),  # two rules, two people
    ],
)
def test_two_people_named_single_out_nobody(action: str, text: str) -> None:
    assert who(action, text) is None


def test_a_vocative_followed_by_a_mention_is_still_one_person() -> None:
    assert who("say", "Mara, Tobin took it") == MARA


def test_a_first_name_two_candidates_share_addresses_nobody() -> None:
    both = [HALE, MARSH]
    assert who("say", "Tobin, where is it?", both, both) is None
    assert who("say", "Tobin Hale, where is it?", both, both) == HALE


def test_a_first_name_only_one_candidate_has_addresses_them() -> None:
    assert who("say", "Tobin, where is it?", [HALE, MARA], [HALE, MARA]) == HALE
    # Tobin Marsh is away: among those present, "Tobin" names only Tobin Hale.
    assert who("say", "Tobin, where is it?", [HALE], [HALE, MARSH]) == HALE


def test_a_full_name_outranks_another_s_first_name() -> None:
    assert who("say", "Tobin, where is it?", [TOBIN, HALE], [TOBIN, HALE]) == TOBIN


def test_a_name_told_shorter_or_without_its_title_addresses_them() -> None:
    assert who("say", "Maren, come here.") == MAREN
    assert who("say", "Mara, come here.") == MARA
    assert who("say", "Captain Mara, come here.") == MARA
    assert who("do", "ask the captain Mara about the ship") == MARA


@pytest.mark.parametrize(
    ("action", "text"),
    [
        ("say", "I think Tobin took it."),
        ("do", "I think Tobin took it."),
        ("say", "Well Tobin is here."),
        ("do", "I look for Tobin, then leave."),
    ],
)
def test_a_name_merely_mentioned_addresses_nobody(action: str, text: str) -> None:
    assert who(action, text) is None


def test_unicode_names_match_case_insensitively() -> None:
    assert who("say", "Ånund, hvor er nøkkelen?") == ANUND
    assert who("say", "ÅNUND!") == ANUND
    assert who("say", "明，钥匙在哪里？") == MING


@pytest.mark.parametrize(
    ("action", "text"),
    [("say", "Tobiness, where is it?"), ("do", "I ask Tobiness"), ("say", "Where is it, Tobins?")],
)
def test_a_word_containing_a_name_is_not_the_name(action: str, text: str) -> None:
    assert who(action, text) is None
