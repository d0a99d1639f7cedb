"""The rules' way of deriving the world (``services.world.rules``): explicit sentences give
their events, with the sentence as evidence; a hedge, a denial, a question, a pronoun, a
description or speech gives nothing. Pure: no database."""

from __future__ import annotations

import pytest

from talekeeper.services.world.grammar import NP_CHARS
from talekeeper.services.world.rules import derive
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
    # A thing is named without whose it is: the same rope in anyone's hands.
    ("do", "grab my rope", [("took", None, "the rope", None)]),
    ("narration", "You drop your rope.", [("dropped", None, "the rope", None)]),
    ("narration", "Tobin hands you his knife.", [("took", None, "the knife", None)]),
    ("narration", "You give her lantern to Tobin.", [("gave", None, "the lantern", "Tobin")]),
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
    # Going, in more words; a verb joined to "you" by "and" has that "you".
    (
        "narration",
        "You cross the square and go into the Salt Market.",
        [("moved", None, "the Salt Market", None)],
    ),
    ("narration", "You make your way to the old mill.", [("moved", None, "the old mill", None)]),
    (
        "narration",
        "You follow the lane down to the ferry landing.",
        [("moved", None, "the ferry landing", None)],
    ),
    (
        "narration",
        "Half an hour's walk brings you to the Drowned Bell.",
        [("moved", None, "the Drowned Bell", None)],
    ),
    ("do", "head for the ferry landing", [("moved", None, "the ferry landing", None)]),
    # Taking, keeping, being handed a thing.
    ("narration", "Your fingers close around the vial.", [("took", None, "the vial", None)]),
    ("narration", "You tuck the whistle into your belt.", [("took", None, "the whistle", None)]),
    ("narration", "The glass vial is yours now.", [("took", None, "The glass vial", None)]),
    ("narration", "You scoop up the staff and go.", [("took", None, "the staff", None)]),
    ("narration", "Hob hands you the cloak.", [("took", None, "the cloak", None)]),
    (
        "narration",
        "Sella presses the silver locket into your hands.",
        [("took", None, "the silver locket", None)],
    ),
    # Someone else's taking is theirs (from the player too).
    ("narration", "Tobin picks up the rope.", [("took", "Tobin", "the rope", None)]),
    (
        "narration",
        "Sella takes the locket from you with a grateful nod.",
        [("took", "Sella", "the locket", None)],
    ),
    (
        "narration",
        "Мирон snatches the signet ring out of your hands.",
        [("took", "Мирон", "the signet ring", None)],
    ),
    # Putting down and giving, in more words.
    (
        "narration",
        "You set the lantern down on the bench.",
        [("dropped", None, "the lantern", None)],
    ),
    ("narration", "You leave the lantern behind.", [("dropped", None, "the lantern", None)]),
    ("narration", "You let the rope fall into the grass.", [("dropped", None, "the rope", None)]),
    ("narration", "You hang the key back on its hook.", [("dropped", None, "the key", None)]),
    (
        "narration",
        "The signet ring slips from your hand and rolls away.",
        [("dropped", None, "The signet ring", None)],
    ),
    ("narration", "You hand Hob the jar.", [("gave", None, "the jar", "Hob")]),
    ("narration", "You let Sella keep the locket.", [("gave", None, "the locket", "Sella")]),
    ("narration", "You press the vial into Sella's hands.", [("gave", None, "the vial", "Sella")]),
    # People in any script; coming, going, dying in more words.
    ("narration", "Мирон enters, looking tired.", [("arrived", "Мирон", None, None)]),
    ("narration", "The door opens and Δάφνη walks in.", [("arrived", "Δάφνη", None, None)]),
    ("narration", "A moment later 明子 joins you.", [("arrived", "明子", None, None)]),
    ("narration", "Tobin follows close behind.", [("arrived", "Tobin", None, None)]),
    ("narration", "With a nod, Tobin takes their leave.", [("left", "Tobin", None, None)]),
    ("narration", "Kell breathes their last.", [("status", "Kell", None, "dead")]),
    ("narration", "You strike Vorn down.", [("status", "Vorn", None, "dead")]),
    # Times in more words, the value said as the clock reads it.
    ("narration", "Night falls over the harbour.", [("time", None, None, "night falls")]),
    ("narration", "The sun sets behind the hills.", [("time", None, None, "sunset")]),
    ("narration", "Three days pass.", [("time", None, None, "three days later")]),
    ("narration", "By nightfall the rain stops.", [("time", None, None, "by nightfall")]),
    # A place ends where "just" or "when" begins; a light that fails is no hedge of yours.
    (
        "narration",
        "You reach Gullreach just as the light begins to fail.",
        [("moved", None, "Gullreach", None)],
    ),
    ("narration", "You reach the mill when the bells ring.", [("moved", None, "the mill", None)]),
    # Someone who is suddenly there, or who goes while you look on.
    ("narration", "Tobin steps out of the shadows.", [("arrived", "Tobin", None, None)]),
    ("narration", "You turn to find Dorrit standing there.", [("arrived", "Dorrit", None, None)]),
    ("narration", "Kell is waiting for you by the fire.", [("arrived", "Kell", None, None)]),
    ("narration", "You watch 明美 go.", [("left", "明美", None, None)]),
    ("narration", "Kell says goodbye and is gone.", [("left", "Kell", None, None)]),
    ("narration", "You find yourself in 白鷺亭.", [("moved", None, "白鷺亭", None)]),
    (
        "narration",
        "The old mill is crowded when you get there.",
        [("moved", None, "The old mill", None)],
    ),
    (
        "narration",
        "You let Kell carry the iron key for a while.",
        [("gave", None, "the iron key", "Kell")],
    ),
    (
        "narration",
        "Mara borrows the whistle and does not give it back.",
        [("took", "Mara", "the whistle", None)],
    ),
    # Verbs of going, taking, giving and leaving by class, not by the phrase.
    (
        "narration",
        "Your steps carry you down into the orchard.",
        [("moved", None, "the orchard", None)],
    ),
    ("narration", "You stumble at last into the orchard.", [("moved", None, "the orchard", None)]),
    ("do", "sneak into the chapel", [("moved", None, "the chapel", None)]),
    ("narration", "You cross the threshold of Varn.", [("moved", None, "Varn", None)]),
    ("narration", "The wool cloak belongs to you now.", [("took", None, "The wool cloak", None)]),
    (
        "narration",
        "You are given the copper compass by Ida Venn.",
        [("took", None, "the copper compass", None)],
    ),
    ("do", "get rope", [("took", None, "rope", None)]),
    ("narration", "You lower the lantern to the floor.", [("dropped", None, "the lantern", None)]),
    (
        "narration",
        "You entrust the hemp rope to Злата.",
        [("gave", None, "the hemp rope", "Злата")],
    ),
    (
        "narration",
        "The signet ring is wrenched from your hands by Ida.",
        [("took", "Ida", "The signet ring", None)],
    ),
    ("narration", "Into the room strides Tobin.", [("arrived", "Tobin", None, None)]),
    ("narration", "The door swings shut behind Mara.", [("left", "Mara", None, None)]),
    (
        "narration",
        "Hob gasps once and goes still, and does not move again.",
        [("status", "Hob", None, "dead")],
    ),
    (
        "narration",
        "A week goes by, and the gulls fall silent.",
        [("time", None, None, "a week later")],
    ),
    # Telling: who learns, and what.
    ("do", "tell Tobin about the brass key", [("learned", "Tobin", None, "the brass key")]),
    (
        "narration",
        "You whisper to Tobin that the key lies under the third piling.",
        [("learned", "Tobin", None, "the key lies under the third piling")],
    ),
    ("narration", "You show Maren the map.", [("learned", "Maren", None, "map")]),
    (
        "narration",
        "Then Old Maren finds out about the smuggled lamps.",
        [("learned", "Old Maren", None, "the smuggled lamps")],
    ),
    ("narration", "Tobin is told of the wreck.", [("learned", "Tobin", None, "the wreck")]),
]

NOTHING = [
    ("narration", "You fail to open the door of the mill."),
    ("narration", "You failed to reach the mill."),
    ("narration", "The door is locked when you get there."),
    ("narration", "Mara does not give it back."),
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
    # A phrase led by a preposition is no place or item.
    ("narration", "I reach for the staff."),
    ("narration", "You reach into your pocket."),
    # Speech in quotes is not the story's.
    ("narration", '"You go to Varn tonight, and you tell no one," Tobin says.'),
    ("narration", "'You pick up the key and you run,' she whispers."),
    ("narration", "“Maren dies at dawn,” he says."),
    # Plans, rumours and habits.
    ("narration", "They say Hob arrives tomorrow."),
    ("narration", "You will go to the mill."),
    ("narration", "The bells here ring at noon every day."),
    # What a giver gives that no one carries.
    ("narration", "Mara gives you a warm smile."),
    ("narration", "You give Tobin a nod."),
    # A verb of going that goes nowhere; "get" read only in the player's own "do".
    ("narration", "You come to a halt."),
    ("narration", "You walk to the window."),
    ("narration", "You get the feeling you are watched."),
    # A telling planned, asked, said in quotes, to no one named, or of a mere sound.
    ("narration", "You will tell Tobin about the key tomorrow."),
    ("narration", "Should you tell Tobin about the key?"),
    ("narration", "You tell him about the key."),
    ("narration", "Tobin hears the bells."),
    ("say", "I tell Tobin about the key."),
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


def test_the_rest_of_a_sentence_with_speech_is_read_and_keeps_the_speech_as_evidence() -> None:
    text = '"We leave at dawn," Mara says, and you pick up the rope.'
    [found] = derive("narration", text)
    assert (found.kind, found.object, found.evidence) == (EventKind.TOOK, "the rope", text)


def test_a_quotation_over_sentences_is_not_read() -> None:
    text = 'Mara leans in. "Go. You walk into the crypt alone. Now," she says. Tobin leaves.'
    assert [(d.kind, d.subject) for d in derive("narration", text)] == [(EventKind.LEFT, "Tobin")]


def test_names_in_a_script_without_case_stay_two_people() -> None:
    found = derive("narration", "明子 arrives. 明美 leaves.")
    assert [(d.kind, d.subject) for d in found] == [
        (EventKind.ARRIVED, "明子"),
        (EventKind.LEFT, "明美"),
    ]


def test_a_lowercase_word_is_no_one() -> None:
    assert derive("narration", "The door opens and the wind walks in.") == []
