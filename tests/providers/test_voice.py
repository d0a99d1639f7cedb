"""The placeholder narrator's voice repairs (``providers.voice``), and that only the embedded
narrator's narration goes through them."""

from __future__ import annotations

import numpy as np
import pytest
from tests.conftest import threads_setting
from tests.kit.scripted_llama import ScriptedLlama, narrate

from talekeeper.providers.base import CompletionRequest, Message
from talekeeper.providers.embedded import EmbeddedProvider
from talekeeper.providers.voice import Edit, VoiceFilter, repair

CLEAN = [
    "The door groans open. Inside, a stair climbs into the dark.",
    'Maren nods. "I will take you at dawn. Bring my rope." The gulls cry above the quay.',
    "“I know you,” the keeper says. “My father knew yours.” She turns back to her nets.",
    "You climb the steps, and the wind tugs at your coat.\n\nAt the top, a lamp burns.",
    "Rain. Then thunder!",
]


@pytest.mark.parametrize("text", CLEAN)
def test_a_reply_in_the_right_voice_comes_out_unchanged(text: str) -> None:
    assert repair(text) == (text, [])


@pytest.mark.parametrize(
    ("raw", "fixed"),
    [
        ("I look at her. She smiles.", "You look at her. She smiles."),
        (
            "She hands me the key, and my hands shake.",
            "She hands you the key, and your hands shake.",
        ),
        ("I was cold. I am still cold.", "You were cold. You are still cold."),
        ("I'm here, and I've seen it. I'll go.", "You're here, and you've seen it. You'll go."),
        ("The lamp is mine now, I tell myself.", "The lamp is yours now, you tell yourself."),
        # A character's words inside quotation marks are theirs: never touched.
        ('She says, "I saw my brother." I nod.', 'She says, "I saw my brother." You nod.'),
    ],
)
def test_narration_written_as_the_player_is_put_in_the_second_person(raw: str, fixed: str) -> None:
    assert repair(raw) == (fixed, [Edit.FIRST_PERSON])


@pytest.mark.parametrize(
    "raw",
    [
        'I look at her. "You\'re right," I say. The wind rises.',
        'You look at her. "You\'re right. We go now," you reply. The wind rises.',
        'You look at her. I quietly answer, "Not yet." The wind rises.',
    ],
)
def test_words_put_in_the_players_mouth_are_dropped(raw: str) -> None:
    text, edits = repair(raw)
    assert text == "You look at her. The wind rises."
    assert Edit.PLAYER_SPEECH in edits


def test_a_quotation_handed_to_the_player_goes_with_what_handed_it() -> None:
    raw = 'The keeper smiles as you say:\n"Aye, I have it." She leans in closer.'
    assert repair(raw) == ("She leans in closer.", [Edit.PLAYER_SPEECH])
    # A quotation that is not handed over stays.
    raw = 'The keeper smiles.\n"Aye, I have it," she says.'
    assert repair(raw) == (raw, [])


def test_someone_talking_to_the_player_without_quotation_marks_is_dropped() -> None:
    """In the second person it would read "you look at you"."""
    raw = "I look at you, and my eyes shine. The wind rises."
    assert repair(raw) == ("The wind rises.", [Edit.FIRST_PERSON])


def test_a_quotation_left_open_at_a_line_break_does_not_turn_the_rest_inside_out() -> None:
    raw = 'I look at you and whisper "Hello.\nYou wait. I say "The room is locked," I add.'
    text, edits = repair(raw)
    assert text == "You wait. " and Edit.PLAYER_SPEECH in edits


def test_a_quotation_the_next_sentence_gives_to_the_player_goes_with_it() -> None:
    raw = 'The keeper frowns. "What is it?" You ask, your voice low.\nShe shrugs.'
    assert repair(raw) == ("The keeper frowns. She shrugs.", [Edit.PLAYER_SPEECH])
    # A quotation followed by anything else is a character's, and stays where it was.
    raw = 'The keeper frowns. "What is it?" She shrugs. "Nothing."'
    assert repair(raw) == (raw, [])


def test_a_characters_speech_to_the_player_stays() -> None:
    raw = '"Sit," the keeper says when you enter. "I have waited. My tea is cold."'
    assert repair(raw) == (raw, [])


def test_the_players_next_move_ends_the_reply_and_an_echo_of_their_action_goes() -> None:
    text, edits = repair("The hall is dark.\n> You walk in.\nThe narrator goes on.")
    assert text == "The hall is dark.\n" and edits == [Edit.PLAYER_TURN]
    text, edits = repair("> You look around.\nThe hall is dark. Dust hangs in the air.")
    assert text == "The hall is dark. Dust hangs in the air." and edits == [Edit.PLAYER_TURN]
    text, _ = repair("The hall is dark.\nYou: I go in.\nMore.")
    assert text == "The hall is dark.\n"


def test_a_reply_cut_off_by_its_length_loses_its_unfinished_sentence() -> None:
    assert repair("The lantern flickers. You step closer and the", cut_off=True) == (
        "The lantern flickers. ",
        [Edit.UNFINISHED],
    )
    # Not when it is all there is, and not when the model stopped by itself.
    assert repair("You step closer and the", cut_off=True) == ("You step closer and the", [])
    assert repair("It ends here without a stop", cut_off=False)[0] == "It ends here without a stop"


@pytest.mark.parametrize(
    "raw",
    [
        *CLEAN,
        'I look at her. "You\'re right," I say. The wind rises.\n> You go.\nMore.',
        "> Echo.\nI was cold. “Come in. I insist,” she says, and my coat drips.",
        'The keeper frowns. "What is it?" You ask.\n"Go." She shrugs. "Now."\n> You go.',
    ],
)
def test_streamed_in_any_pieces_it_gives_out_the_same_text(raw: str) -> None:
    whole = repair(raw)
    for size in (1, 2, 3, 7):
        voice = VoiceFilter()
        out = "".join(voice.feed(raw[i : i + size]) for i in range(0, len(raw), size))
        out += voice.finish(cut_off=False)
        assert (out, voice.edits) == whole, size


def generate(provider: EmbeddedProvider, narration: bool) -> tuple[str, str, tuple[str, ...]]:
    request = CompletionRequest(
        model="embedded", messages=(Message("user", "> You look at her."),), narration=narration
    )

    return narrate(provider, request)


def test_the_embedded_narrators_narration_is_repaired_as_it_streams() -> None:
    raw = 'I look at her. "You\'re right," I say. She nods slowly and the'
    llama = ScriptedLlama(raw, finish="length")
    provider = EmbeddedProvider(load_narrator=lambda: llama)
    streamed, stored, repairs = generate(provider, narration=True)
    assert streamed == stored == "You look at her. "
    assert list(repairs) == [Edit.FIRST_PERSON, Edit.PLAYER_SPEECH, Edit.UNFINISHED]
    assert llama.calls == 1


def test_a_narration_the_repairs_emptied_is_written_once_more() -> None:
    player = '"I will go," I say.\n> You go.'
    llama = ScriptedLlama(player, "The tide turns. Gulls cry.")
    provider = EmbeddedProvider(load_narrator=lambda: llama)
    streamed, stored, repairs = generate(provider, narration=True)
    assert streamed == stored == "The tide turns. Gulls cry."
    assert llama.calls == 2 and Edit.PLAYER_SPEECH in repairs
    # The second take may not open as the emptied one did (at a low temperature it would be
    # the same take again): the scripted llama's tokens are bytes, and the first was '"'.
    assert "logits_processor" not in llama.kwargs[0]
    (opens,) = llama.kwargs[1]["logits_processor"]
    scores = np.zeros(256)
    opens(np.zeros(10), scores)
    assert scores[ord('"')] == -np.inf and np.isfinite(np.delete(scores, ord('"'))).all()
    # Only once more: a second empty one is the turn's "empty reply" error, as before.
    llama = ScriptedLlama(player)
    provider = EmbeddedProvider(load_narrator=lambda: llama)
    assert generate(provider, narration=True)[:2] == ("", "") and llama.calls == 2


def test_what_is_not_narration_is_never_rewritten() -> None:
    raw = "I remember the lighthouse. I was there."  # e.g. a memory, or a connection test
    provider = EmbeddedProvider(load_narrator=lambda: ScriptedLlama(raw))
    assert generate(provider, narration=False) == (raw, raw, ())


def test_the_context_reserve_covers_the_worked_example_turns() -> None:
    """The example turns ride in every prompt: the budget must have kept room for them."""
    from talekeeper.providers.embedded import EXAMPLE_TOKENS, EXAMPLE_TURNS
    from talekeeper.providers.embedded_models import LlamaTokenCounter

    provider = EmbeddedProvider(threads=threads_setting())
    counter = provider.token_counter("embedded")
    assert isinstance(counter, LlamaTokenCounter)
    # Each message carries ChatML's markers: "<|im_start|>user\n" ... "<|im_end|>\n".
    used = sum(counter.count(text) + 8 for turn in EXAMPLE_TURNS for text in turn)
    assert used <= EXAMPLE_TOKENS, (used, EXAMPLE_TOKENS)
