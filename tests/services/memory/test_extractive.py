"""The extractive writer: informative sentences, third person, word limits, no new words."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from talekeeper.services.memory.extractive import (
    MEMORY_WORDS,
    SUMMARY_WORDS,
    write_memory,
    write_summary,
)
from talekeeper.services.memory.prose import agreed, second_to_third, split_sentences, words

pytestmark = pytest.mark.no_database

SALIENT = ["Captain Hale", "Hale", "lighthouse", "Mara"]


def allowed_in_memory(block: str, protagonist: str) -> set[str]:
    """The no-new-word rule: the block's words and their agreeing forms, the name's words
    and the name with 's."""
    name = protagonist.strip()
    block_words = set(words(block))
    allowed = block_words.union(*(agreed(w) for w in block_words))
    if not words(name):
        return allowed | {"the", "player", "player's"}
    return allowed | set(words(name)) | set(words(name + "'s"))


# --- words and sentences -----------------------------------------------------------------


def test_words_are_lowercase_runs_of_letters_digits_and_inner_apostrophes() -> None:
    assert words("You find Mara\u2019s 3 keys -- 'Run!' it's_done") == [
        "you",
        "find",
        "mara's",
        "3",
        "keys",
        "run",
        "it's",
        "done",
    ]
    assert words("... !? \u2014") == []


def test_split_sentences_strips_action_markers_and_keeps_order() -> None:
    block = '> You draw your sword.\n\nThe wind blows. It is cold.\n\n> You say "Run!"'
    assert split_sentences(block) == [
        "You draw your sword.",
        "The wind blows.",
        "It is cold.",
        'You say "Run!"',
    ]


def test_split_sentences_keeps_abbreviations_initials_and_speech_together() -> None:
    text = (
        'Mr. Brand meets J. R. Vell at the inn. "Run! Now!" Hale shouts. '
        '"Where?" you ask. Dusk falls... Then silence.\nA new line starts here'
    )
    assert split_sentences(text) == [
        "Mr. Brand meets J. R. Vell at the inn.",
        '"Run! Now!" Hale shouts.',
        '"Where?" you ask.',
        "Dusk falls...",
        "Then silence.",
        "A new line starts here",
    ]


def test_a_full_stop_inside_closed_speech_ends_the_sentence() -> None:
    assert split_sentences('Hale says, "Go." Then he leaves.') == [
        'Hale says, "Go."',
        "Then he leaves.",
    ]


# --- second person -----------------------------------------------------------------------


def test_second_person_becomes_the_protagonist() -> None:
    assert second_to_third("You draw your sword.", "Mara") == "Mara draws Mara's sword."
    assert second_to_third("Hale hands you a key; it is yours.", "Mara") == (
        "Hale hands Mara a key; it is Mara's."
    )
    assert second_to_third("You hide yourself.", "Mara Vell") == "Mara Vell hides Mara Vell."


def test_an_unnamed_protagonist_is_the_player() -> None:
    assert second_to_third("Your torch dies and you wait.", "") == (
        "The player's torch dies and the player waits."
    )
    assert second_to_third("You wait.", "  ") == "The player waits."


def test_the_verb_after_a_subject_you_agrees_with_the_protagonist() -> None:
    text = "You are tired, you were cold, you have a map, you draw and you carry it."
    assert second_to_third(text, "Mara") == (
        "Mara is tired, Mara was cold, Mara has a map, Mara draws and Mara carries it."
    )
    # The shipped scenario's memory that read "Tamsin Reed walk along the harbour wall".
    assert second_to_third("You walk along the harbour wall.", "Tamsin Reed") == (
        "Tamsin Reed walks along the harbour wall."
    )
    assert second_to_third("You push, you reach, you go, you do, you fly, you stay.", "M") == (
        "M pushes, M reaches, M goes, M does, M flies, M stays."
    )


def test_an_adverb_between_you_and_the_verb_is_stepped_over() -> None:
    assert second_to_third("You slowly turn the key.", "Mara") == "Mara slowly turns the key."
    assert second_to_third("You still have the map.", "Mara") == "Mara still has the map."
    assert second_to_third("You reply at once.", "Mara") == "Mara replies at once."


def test_a_present_tense_ending_in_ed_agrees_too() -> None:
    assert second_to_third("You need rest and you feed the dog.", "Mara") == (
        "Mara needs rest and Mara feeds the dog."
    )


def test_past_tenses_modals_and_non_verbs_are_left_as_they_were() -> None:
    text = "You walked home. You went back. You can swim. You both laugh. You alone know."
    assert second_to_third(text, "Mara") == (
        "Mara walked home. Mara went back. Mara can swim. Mara both laugh. Mara alone know."
    )


def test_contractions_become_the_protagonist_and_the_agreeing_verb() -> None:
    assert second_to_third("You're late. You've won. You'll see.", "Mara") == (
        "Mara is late. Mara has won. Mara will see."
    )
    assert second_to_third("You'd gone. You'd go.", "Mara") == "Mara had gone. Mara would go."


def test_an_object_you_does_not_bend_the_next_word() -> None:
    assert second_to_third("Hale gives you keys.", "Mara") == "Hale gives Mara keys."
    assert second_to_third("Hale tells you everything.", "Mara") == ("Hale tells Mara everything.")


def test_you_inside_quotations_is_left_alone() -> None:
    assert second_to_third('You say "I will find you."', "Mara") == ('Mara says "I will find you."')
    assert second_to_third("\u201cYou owe me,\u201d Hale tells you.", "Mara") == (
        "\u201cYou owe me,\u201d Hale tells Mara."
    )


def test_words_that_merely_start_with_you_are_untouched() -> None:
    assert second_to_third("The young youth yodels.", "Mara") == "The young youth yodels."


# --- memories ----------------------------------------------------------------------------

LIGHTHOUSE = (
    "> You walk to the harbour.\n\n"
    "The wind blows. It is cold. Captain Hale gives you the key to the lighthouse. "
    "What now?"
)


def test_the_key_fact_beats_filler() -> None:
    memory = write_memory(LIGHTHOUSE, "Mara", SALIENT)
    assert memory.startswith("Captain Hale gives Mara the key to the lighthouse.")
    assert "wind" not in memory and "cold" not in memory


def test_the_key_fact_wins_even_without_card_names() -> None:
    assert write_memory(LIGHTHOUSE, "Mara", []).startswith("Captain Hale gives Mara the key")


def test_a_name_no_card_knows_beats_a_sentence_about_a_known_companion() -> None:
    # The card already tells the narrator who Maren is; a person the story just introduced
    # is news only a memory can carry.
    block = (
        "Maren walks beside you along the wet quay under the grey gulls, humming the old "
        "lamplighters' song about storms and lanterns while the tide slaps the stones below. "
        "At the gate a tall stranger in a salt-stained coat tells you that his name is Corvin "
        "and that he has come a very long way over the hills to find the keepers. "
        "Maren shrugs."
    )
    memory = write_memory(block, "Tamsin", ["Maren"])
    assert "Corvin" in memory


@pytest.mark.parametrize(
    "fact",
    [
        "The ferryman wants 40 coins for the crossing.",
        "The old ferryman promises to wait for the tide.",
        "The ferryman is wounded and bleeding from the leg.",
    ],
)
def test_numbers_promises_and_injuries_beat_filler(fact: str) -> None:
    block = f"The wind blows. It is cold. The sky is grey today. {fact} It is late..."
    assert write_memory(block, "Mara", []).startswith(fact)


HIDING = (
    "> You look for a safe place to hide the copper key.\n\n"
    "Hale watches the gulls over the harbour for a long while. "
    "You tuck the copper key behind a loose brick in the chapel wall."
)


def test_what_came_of_the_players_action_beats_a_companion_in_the_scenery() -> None:
    memory = write_memory(HIDING, "Mara", ["Hale"])
    assert memory == "Mara tucks the copper key behind a loose brick in the chapel wall."


def test_a_block_that_opens_on_the_answer_weighs_it_by_the_action_before_it() -> None:
    block = HIDING.split("\n\n", 1)[1]
    lead = HIDING.split("\n\n", 1)[0]
    assert "copper key" in write_memory(block, "Mara", ["Hale"], lead)
    assert "copper key" not in write_memory(block, "Mara", ["Hale"])  # no answer to weigh
    assert "look" not in words(write_memory(block, "Mara", ["Hale"], lead))  # weighed, not written


def test_the_player_line_itself_is_no_answer() -> None:
    block = "> You hide the copper key in the chapel.\n\nHale watches the gulls for a while."
    assert write_memory(block, "Mara", ["Hale"]).startswith("Hale watches")


def test_the_protagonists_own_name_is_no_signal() -> None:
    # Every sentence about "you" is about Mara: her name in a line is no reason to keep it.
    block = "A gull stares at Mara on the cold quay today. The ferryman charges 40 coins."
    memory = write_memory(block, "Mara", ["Mara", "Hale"])
    assert memory == "The ferryman charges 40 coins."


def test_a_capital_opening_a_sentence_inside_speech_is_no_name() -> None:
    # "Let's" would count as a name no card knows and outweigh the number.
    block = 'You say "I am tired. Let us stop here." The toll is 40 coins at the bridge.'
    assert write_memory(block, "Mara", []) == "The toll is 40 coins at the bridge."


def test_a_sentence_said_twice_is_kept_once() -> None:
    block = "The toll is 40 coins.\n\n> You wait.\n\nThe toll is 40 coins."
    assert write_memory(block, "Mara", []) == "The toll is 40 coins."


def test_one_companion_merely_present_earns_no_second_place() -> None:
    block = (
        "The ferryman charges 40 coins a crossing. Hale walks along the quay in the rain. "
        "Hale and Brand argue about the lighthouse key."
    )
    memory = write_memory(block, "Mara", ["Hale", "Brand"])
    assert memory == (
        "The ferryman charges 40 coins a crossing. Hale and Brand argue about the lighthouse key."
    )


def test_second_person_is_rewritten_in_the_memory() -> None:
    block = "You lose your 3 lanterns in the river. You are wounded, and Hale is not."
    memory = write_memory(block, "Mara", SALIENT)
    assert memory == "Mara loses Mara's 3 lanterns in the river. Mara is wounded, and Hale is not."
    assert "you" not in words(memory) and "your" not in words(memory)


def test_two_chosen_sentences_keep_story_order() -> None:
    block = (
        "Brand swears an oath to guard the gate. The sun sets. "
        "Captain Hale hides the lighthouse key in the chapel."
    )
    memory = write_memory(block, "Mara", SALIENT)
    assert memory == (
        "Brand swears an oath to guard the gate. "
        "Captain Hale hides the lighthouse key in the chapel."
    )


def test_a_second_sentence_needs_weight() -> None:
    block = "Captain Hale hides the lighthouse key. The sun sets slowly over the bay."
    assert write_memory(block, "Mara", SALIENT) == "Captain Hale hides the lighthouse key."


def test_a_long_sentence_is_cut_at_a_word_with_an_ellipsis() -> None:
    long = "Captain Hale " + " ".join(f"walks{i}" for i in range(80)) + "."
    memory = write_memory(long, "Mara", SALIENT)
    assert len(words(memory)) == MEMORY_WORDS
    assert memory.endswith("walks47\u2026")


def test_a_block_without_words_gives_no_memory() -> None:
    assert write_memory("", "Mara", SALIENT) == ""
    assert write_memory("> ...\n\n!?", "Mara", SALIENT) == ""


def test_a_sentence_without_end_punctuation_is_closed_when_joined() -> None:
    block = "> You swear an oath to Hale\n\nHale gives you 3 silver rings"
    assert write_memory(block, "Mara", SALIENT) == (
        "Mara swears an oath to Hale. Hale gives Mara 3 silver rings."
    )


def pool(text: str) -> list[str]:
    return text.split(" ")


POOL = pool(
    "you your yours yourself you're you've you'll you'd are were have do don't is was has "
    "does draws draw go goes carry carries Hale Captain lighthouse key 3 40 promise swear "
    "oath wounded bleeding the a and but then wind blows cold it Mara's Brand owes gold "
    'tired sword chapel . . , ; ! ? ... " " > \n\n \n \' \u2019 \u2014 Mr.'
)
NAMES = ["Mara", "Mara Vell", "", "James", "O'Neil", "zo\u00eb", "  Ash  ", "!!", "Mara-Vell"]
blocks = st.lists(st.sampled_from(POOL), min_size=1, max_size=200).map(" ".join)
salients = st.lists(st.sampled_from(["Hale", "Captain Hale", "key", "Brand", "", "'"]))


@settings(max_examples=300, deadline=None)
@given(blocks, st.sampled_from(NAMES), salients)
def test_memories_add_no_word_keep_the_limit_and_are_deterministic(
    block: str, protagonist: str, salient: Sequence[str]
) -> None:
    memory = write_memory(block, protagonist, salient)
    assert set(words(memory)) <= allowed_in_memory(block, protagonist)
    assert len(words(memory)) <= MEMORY_WORDS
    assert bool(words(memory)) == bool(words(block))
    assert memory == write_memory(block, protagonist, list(salient))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400), st.text(max_size=12), st.lists(st.text(max_size=8), max_size=3))
def test_any_text_at_all_obeys_the_rule(block: str, protagonist: str, salient: list[str]) -> None:
    memory = write_memory(block, protagonist, salient)
    assert set(words(memory)) <= allowed_in_memory(block, protagonist)
    assert len(words(memory)) <= MEMORY_WORDS
    assert bool(words(memory)) == bool(words(block))


# --- the Story Summary -------------------------------------------------------------------


def memory_text(i: int, size: int = 40) -> str:
    """A two-sentence memory of ``size`` words whose words name its number."""
    first = " ".join([f"M{i}a"] * (size // 2))
    second = " ".join([f"M{i}b"] * (size - size // 2))
    return f"{first}. {second}."


def test_under_the_limit_everything_is_kept_verbatim_in_order() -> None:
    memories = ["Hale gave Mara the key.", "Mara opened the lighthouse."]
    assert write_summary("Mara came to Saltmarsh.", False, memories) == (
        "Mara came to Saltmarsh. Hale gave Mara the key. Mara opened the lighthouse."
    )
    assert write_summary("", False, memories) == " ".join(memories)
    assert write_summary("", False, []) == ""
    assert write_summary("Mara came to Saltmarsh", True, []) == "Mara came to Saltmarsh."


def test_over_the_limit_the_newest_is_whole_and_older_ones_shrink_before_dropping() -> None:
    memories = [memory_text(i) for i in range(8)]  # 320 words
    summary = write_summary("", False, memories)
    assert len(words(summary)) <= SUMMARY_WORDS
    assert summary.endswith(memories[-1])
    assert memories[-2] in summary  # the recent ones stay whole
    assert "m0a" in words(summary)  # the oldest is shortened to its first sentence...
    assert "m0b" not in words(summary)  # ...not dropped
    order = [words(summary).index(f"m{i}a") for i in range(8)]
    assert order == sorted(order)


def test_with_far_too_much_the_oldest_are_dropped_first() -> None:
    memories = [memory_text(i) for i in range(30)]
    summary = write_summary("", False, memories)
    kept = [i for i in range(30) if f"m{i}a" in words(summary)]
    assert len(words(summary)) <= SUMMARY_WORDS
    assert kept == list(range(kept[0], 30)) and kept[0] > 0
    assert summary.endswith(memories[-1])


def test_older_memories_are_compressed_harder() -> None:
    memories = [memory_text(i) for i in range(12)]
    counts = [words(write_summary("", False, memories)).count(f"m{i}a") for i in range(12)]
    kept = [c for c in counts if c]
    assert kept == sorted(kept)


def test_an_automatic_base_is_the_oldest_material() -> None:
    base = " ".join(f"Old event {i} happened in the valley of Vesk." for i in range(30))
    memories = [memory_text(i) for i in range(4)]
    summary = write_summary(base, False, memories)
    assert len(words(summary)) <= SUMMARY_WORDS
    for memory in memories[1:]:
        assert memory in summary
    assert "m0a" in words(summary)  # the oldest new memory keeps at least its first sentence
    assert "0" not in words(summary)  # the oldest base sentences went first...
    assert "Old event 29 happened in the valley of Vesk." in summary  # ...the newest stayed
    assert summary.index("Old event 29") < summary.index("M0a")


def test_a_user_base_is_kept_whole_and_first() -> None:
    base = "Mara is the lost heir of Vesk and her sister Ilse guards the northern pass."
    memories = [memory_text(i) for i in range(8)]
    summary = write_summary(base, True, memories)
    assert summary.startswith(base)
    assert summary.endswith(memories[-1])
    assert len(words(summary)) <= SUMMARY_WORDS


def test_a_user_base_too_long_is_cut_to_leave_room_for_the_newest_memory() -> None:
    base = " ".join(f"fact{i}" for i in range(300))
    newest = memory_text(9, 30)
    summary = write_summary(base, True, [memory_text(1), newest])
    assert summary.startswith("fact0 fact1")
    assert "fact219\u2026" in summary and "fact220" not in words(summary)
    assert summary.endswith(newest)
    assert len(words(summary)) == SUMMARY_WORDS


def test_the_newest_memory_is_never_dropped_only_cut_if_it_alone_is_too_long() -> None:
    huge = " ".join(f"w{i}" for i in range(400))
    summary = write_summary("Mara came.", True, [huge])
    assert summary.startswith("w0 w1") and len(words(summary)) == SUMMARY_WORDS


MEMORY_POOL = pool("Hale Mara key gave the lighthouse 3 oath . , ! \u2026 Mr. you'd")
texts = st.lists(st.sampled_from(MEMORY_POOL), min_size=0, max_size=70).map(" ".join)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(MEMORY_POOL), max_size=400).map(" ".join),
    st.booleans(),
    st.lists(texts, max_size=12),
)
def test_summaries_keep_the_limit_add_no_word_and_are_deterministic(
    base: str, by_user: bool, memories: list[str]
) -> None:
    summary = write_summary(base, by_user, memories)
    source = set(words(base)).union(*(words(m) for m in memories))
    assert set(words(summary)) <= source
    assert len(words(summary)) <= SUMMARY_WORDS
    assert summary == write_summary(base, by_user, list(memories))
    fresh = [m.strip() for m in memories if words(m)]
    if fresh:
        assert fresh[-1] in summary
    if (
        by_user
        and words(base)
        and len(words(base)) + len(words(fresh[-1] if fresh else "")) <= (SUMMARY_WORDS)
    ):
        assert summary.startswith(base.strip())
