"""The placeholder-voice benchmark's own readings, on hand-made replies: a reply that repeats
an earlier one of its game (whole replies, its own rule, not the product's check of the
opening), what speaks as the player, and the rows each mode's games add up to."""

from __future__ import annotations

import pytest
from benchmarks.voice.run import MODES, Reply, _mode, figures, judge, repeats

pytestmark = pytest.mark.no_database

LOOP = (
    "You can see that it is not just you who are missing them, but the whole town. The "
    "Great Lantern stands cold against the wall beside you."
)


def _reply(text: str, *, repeated: bool = False, scenario: str = "lantern-coast") -> Reply:
    return Reply(scenario, 1, "do look", text, [], judge(text), False, not text, 1.0, repeated)


def test_a_reply_repeats_when_half_its_four_word_runs_are_in_one_earlier_reply() -> None:
    again = "You light a lamp. " + LOOP
    assert repeats(again, ["The tide turns.", LOOP])
    assert not repeats(again, ["The tide turns."])
    # Its middle or its end count as much as its opening: the whole reply is read.
    assert repeats("Gulls cry overhead. " + LOOP, [LOOP + " Then the rain comes."])
    assert not repeats("The tide turns. Gulls cry. " * 3, [LOOP])
    assert not repeats("You wait.", ["You wait."])  # too short to judge


def test_speaking_as_the_player_is_read_outside_quotation_marks() -> None:
    assert judge("I look at her.") == ["first person"]
    assert judge('She says, "I am here."') == []
    assert judge('"Go," you say.') == ["gives the player words"]


def test_each_mode_adds_up_its_own_games() -> None:
    product = [_reply(LOOP), _reply(LOOP, repeated=True)]
    once = [_reply(LOOP, repeated=True), _reply(LOOP, repeated=True)]
    assert [_mode("lantern-coast" + m[0]) for m in MODES] == [m[0] for m in MODES]
    assert (figures("a", product).repeated, figures("b", once).repeated) == (0.5, 1.0)
    assert figures("c", product + once).repeated == 0.75
