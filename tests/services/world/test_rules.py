"""The rules' way of deriving the world (``services.world.rules``): explicit sentences give
their events, with the sentence as evidence; a hedge, a denial, a question, a pronoun, a
description or speech gives nothing. Pure: no database."""

from __future__ import annotations

import pytest

from talekeeper.services.world.rules import NP_CHARS, derive
from talekeeper.storage.vocabulary import EventKind

pytestmark = pytest.mark.no_database

FOUND = [
    ("do", "pick up the brass key", [("took", None, "the brass key", None)]),
    ("do", "I grab a lantern", [("took", None, "a lantern", None)]),
    (
        "narration",
        "You pick up the brass key and slip it into your coat.",
        [("took", None, "the brass key", None)],
    ),
    ("narration", "You drop the rope.", [("dropped", None, "the rope", None)]),
    ("narration", "You pick up the brass key again.", [("took", None, "the brass key", None)]),
    ("narration", "You take the map from the hook.", [("took", None, "the map", None)]),
    (
        "narration",
        "You give the lantern to Old Maren.",
        [("gave", None, "the lantern", "Old Maren")],
    ),
    ("do", "enter the Salt Market", [("moved", None, "the Salt Market", None)]),
    (
        "narration",
        "You walk into the tavern, shaking off the rain.",
        [("moved", None, "the tavern", None)],
    ),
    (
        "narration",
        "You reach Gullreach at dusk.",
        [("moved", None, "Gullreach", None), ("time", None, None, "at dusk")],
    ),
    ("narration", "Captain Rhys arrives with a lamp.", [("arrived", "Captain Rhys", None, None)]),
    ("narration", "Then Tobin leaves.", [("left", "Tobin", None, None)]),
    ("narration", "Old Maren dies in the night.", [("status", "Old Maren", None, "dead")]),
    ("narration", "You kill Vorn.", [("status", "Vorn", None, "dead")]),
    ("narration", "The next morning, the fog lifts.", [("time", None, None, "the next morning")]),
    ("story", "Hours later the bell rings.", [("time", None, None, "hours later")]),
]

NOTHING = [
    ("narration", "You try to pick up the anvil, but it is too heavy."),
    ("narration", "You cannot take the key."),
    ("narration", "You almost drop the lamp."),
    ("narration", "If you enter the crypt, you will not come back."),
    ("narration", "Will you take the key?"),
    ("narration", "You take it."),
    ("narration", "You pick up everything."),
    ("narration", "You take the long and winding road that leads down past the old mill."),
    ("say", "I take the key and walk into the Salt Market."),
    ("narration", "The gulls wheel over the harbour."),
    ("narration", "You never give the lantern to Maren."),
]


@pytest.mark.parametrize(("type_", "text", "expected"), FOUND)
def test_an_explicit_sentence_gives_its_events(
    type_: str, text: str, expected: list[tuple[str, str | None, str | None, str | None]]
) -> None:
    found = derive(type_, text)
    assert [(d.kind.value, d.subject, d.object, d.value) for d in found] == expected
    assert all(d.evidence and d.evidence in (text if type_ != "do" else d.evidence) for d in found)


@pytest.mark.parametrize(("type_", "text"), NOTHING)
def test_a_hedge_a_denial_a_question_a_pronoun_or_speech_gives_nothing(
    type_: str, text: str
) -> None:
    assert derive(type_, text) == []


def test_each_event_keeps_its_own_sentence_as_evidence() -> None:
    found = derive("narration", "You take the map. Maren dies. The gulls cry.")
    assert [(d.kind, d.evidence) for d in found] == [
        (EventKind.TOOK, "You take the map."),
        (EventKind.STATUS, "Maren dies."),
    ]
    assert derive("do", "take the map")[0].evidence == "You take the map."


def test_a_long_sentence_of_unfinished_gives_yields_nothing_and_reads_a_bounded_stretch() -> None:
    """Each "you give" without its "to" reads at most ``NP_CHARS`` characters on (its noun
    phrase is bounded), so the story's longest text is read in linear time; and no event
    comes of it."""
    long = " ".join(["you give a b c"] * 1400)  # 20,000 characters, one sentence
    assert derive("narration", long) == []
    far = "You give the " + "very " * 30 + "old lamp to Maren."  # a phrase past the bound
    assert len(far) > NP_CHARS and derive("narration", far) == []
