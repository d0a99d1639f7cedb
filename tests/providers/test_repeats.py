"""A narration that opens by repeating a recent reply is written once more (docs/voice.md,
"Repeated replies"): the rule on its own, then the embedded provider with a scripted
llama, as a player's turn streams it."""

from __future__ import annotations

import numpy as np
import pytest
from tests.kit.scripted_llama import ScriptedLlama, narrate

from talekeeper.providers.base import CompletionRequest, Message
from talekeeper.providers.embedded import ATTEMPTS, EmbeddedProvider
from talekeeper.providers.repeats import (
    MIN_GRAMS,
    NGRAM,
    OPENING,
    RECENT,
    SHARE,
    Opening,
    earlier_replies,
    first_not,
    grams,
    no_repeat,
    repeats,
)
from talekeeper.providers.voice import Edit

pytestmark = pytest.mark.no_database

EARLIER = (
    "The fog rolls in over the harbour wall. Somewhere a bell rings three times, and the "
    "keeper's lantern swings on its hook above the door. Mara watches you from the steps, "
    "her coat pulled tight, and says nothing at all."
)
FRESH = (
    "Gulls wheel over the empty market. A cart with one wheel missing leans against the "
    "well, and the baker's boy runs past you with a basket of bread held over his head."
)


def test_an_opening_repeats_a_reply_when_half_its_four_word_runs_are_in_it() -> None:
    opening = " ".join(EARLIER.split()[:OPENING])
    assert repeats(opening, [FRESH, EARLIER])
    assert not repeats(opening, [FRESH])
    # Case and punctuation do not hide a repeat; a few shared words do not make one.
    assert repeats(opening.upper().replace(",", ";"), [EARLIER])
    assert not repeats("The fog rolls in. " + FRESH, [EARLIER])
    # At the share exactly: half of its runs found.
    words = FRESH.split()[:12]
    half = EARLIER.split()[:9] + words[9:]
    mine = grams(" ".join(half))
    shared = mine & grams(EARLIER)
    assert repeats(" ".join(half), [EARLIER]) is (len(shared) >= SHARE * len(mine))


def test_a_short_opening_repeats_nothing() -> None:
    short = " ".join(EARLIER.split()[: MIN_GRAMS + 2])  # MIN_GRAMS - 1 four-word runs
    assert len(grams(short)) < MIN_GRAMS
    assert not repeats(short, [EARLIER])


def test_the_earlier_replies_are_the_requests_last_assistant_messages() -> None:
    messages = [Message("system", "You narrate.")]
    for n in range(RECENT + 3):
        messages += [Message("user", f"> You wait {n}."), Message("assistant", f"Reply {n}.")]
    chat = CompletionRequest(model="embedded", messages=tuple(messages), narration=True)
    assert earlier_replies(chat) == [f"Reply {n}." for n in range(3, RECENT + 3)]
    completion = CompletionRequest(model="embedded", mode="completion", prompt=EARLIER)
    assert earlier_replies(completion) == []


def test_the_opening_is_held_back_until_judged_and_a_repeat_is_never_given_out() -> None:
    opening = Opening([EARLIER])
    pieces = [EARLIER[i : i + 5] for i in range(0, len(EARLIER), 5)]
    out = "".join(opening.feed(p) for p in pieces) + opening.finish()
    assert out == "" and opening.repeat
    fresh = Opening([EARLIER])
    given = [fresh.feed(p) for p in (FRESH[i : i + 5] for i in range(0, len(FRESH), 5))]
    # Nothing until the opening's words were in; then all of it at once, then as it comes.
    first = next(n for n, g in enumerate(given) if g)
    assert len(FRESH[: 5 * (first + 1)].split()) >= OPENING - 1
    assert "".join(given) + fresh.finish() == FRESH and not fresh.repeat
    # A reply shorter than the opening is judged at its end; with nothing to compare, every
    # piece goes out as it comes.
    short = Opening([EARLIER])
    assert short.feed("The fog rolls in over the harbour wall.") == ""
    assert short.finish() == "" and short.repeat
    free = Opening([])
    assert free.feed("The fog") == "The fog" and free.finish() == ""


def _turn(
    llama: ScriptedLlama,
    *,
    narration: bool = True,
    regenerate: bool = True,
    player: str = "You wait again.",
) -> tuple:
    provider = EmbeddedProvider(load_narrator=lambda: llama)
    provider.regenerate_repeats = regenerate
    request = CompletionRequest(
        model="embedded",
        messages=(
            Message("user", "> You wait."),
            Message("assistant", EARLIER),
            Message("user", f"> {player}"),
        ),
        narration=narration,
    )

    return narrate(provider, request)


def test_a_narration_opening_with_a_recent_reply_is_written_once_more_and_never_shown() -> None:
    llama = ScriptedLlama(EARLIER, FRESH)
    streamed, stored, repairs = _turn(llama)
    assert streamed == stored == FRESH
    assert llama.calls == 2 and Edit.REPEATED in repairs
    # The second take may not open with the first take's first token (the scripted llama's
    # tokens are bytes: "T") nor complete a run of the earlier reply's tokens.
    assert "logits_processor" not in llama.kwargs[0]
    opens, runs = llama.kwargs[1]["logits_processor"]
    scores = np.zeros(256)
    opens(np.zeros(10), scores)
    assert scores[ord("T")] == -np.inf and np.isfinite(np.delete(scores, ord("T"))).all()
    after = np.zeros(256)
    runs(np.array(list(b"xx The fo")), after)  # "The fo" is followed by "g" in EARLIER
    assert after[ord("g")] == -np.inf and np.isfinite(np.delete(after, ord("g"))).all()
    # ... unless the rest of the prompt holds the run too (the player's words here).
    said = "The fog rolls in over the harbour wall, I say."
    llama = ScriptedLlama(EARLIER, FRESH)
    _turn(llama, player=said)
    free = np.zeros(256)
    llama.kwargs[1]["logits_processor"][1](np.array(list(b"xx The fo")), free)
    assert np.isfinite(free).all()


def test_the_last_take_is_shown_whatever_it_repeats() -> None:
    llama = ScriptedLlama(EARLIER)
    streamed, stored, repairs = _turn(llama)
    assert streamed == stored == EARLIER
    assert llama.calls == ATTEMPTS and Edit.REPEATED in repairs


def test_no_check_when_turned_off_or_not_narration() -> None:
    for kwargs in ({"regenerate": False}, {"narration": False}):
        llama = ScriptedLlama(EARLIER, FRESH)
        streamed, stored, repairs = _turn(llama, **kwargs)
        assert streamed == stored == EARLIER and llama.calls == 1 and not repairs


def test_a_fresh_narration_is_one_take() -> None:
    llama = ScriptedLlama(FRESH, EARLIER)
    assert _turn(llama)[:2] == (FRESH, FRESH) and llama.calls == 1


def test_the_first_token_ban_touches_only_the_replys_first_token() -> None:
    process = first_not(7)
    first, second = np.ones(9), np.ones(9)
    process(list(range(4)), first)
    process(list(range(5)), second)
    assert first[7] == -np.inf and (second == 1).all()
    unknown = np.ones(9)
    first_not(-1)(list(range(4)), unknown)  # no first token known: nothing banned
    assert (unknown == 1).all()


def test_no_run_of_the_recent_replies_tokens_is_completed() -> None:
    replies = [[1, 2, 3, 4, 5], [9, 2, 3, 4, 6]]
    process = no_repeat(replies, n=NGRAM)
    scores = np.ones(10)
    process(np.array([7, 2, 3, 4]), scores)  # "2 3 4" ends runs with 5 and with 6
    assert [t for t in range(10) if scores[t] == -np.inf] == [5, 6]
    other = np.ones(10)
    process(np.array([2, 3, 5]), other)  # begins no run
    assert (other == 1).all()
    # A run the rest of the prompt holds (a name on a story card) may be written again.
    free = no_repeat(replies, [8, 2, 3, 4, 6, 8], n=NGRAM)
    named = np.ones(10)
    free(np.array([7, 2, 3, 4]), named)
    assert [t for t in range(10) if named[t] == -np.inf] == [5]


def test_a_rejected_takes_own_repairs_are_not_listed() -> None:
    # The first take is the earlier reply in the first person: repaired to the second
    # person, it repeats the earlier reply, and is dropped with its repair.
    first = EARLIER.replace("Mara watches you", "Mara watches me").replace(
        "The fog rolls in", "I watch the fog roll in"
    )
    llama = ScriptedLlama(first, FRESH)
    streamed, stored, repairs = _turn(llama)
    assert streamed == stored == FRESH
    assert list(repairs) == [Edit.REPEATED]


def test_a_second_take_the_repairs_empty_gets_its_own_second_take() -> None:
    player = '"I will go," I say.\n> You go.'  # all of it the player's: repaired to nothing
    llama = ScriptedLlama(EARLIER, player, FRESH)
    streamed, stored, repairs = _turn(llama)
    assert streamed == stored == FRESH and llama.calls == 3
    assert repairs[0] == Edit.REPEATED and Edit.PLAYER_SPEECH in repairs
