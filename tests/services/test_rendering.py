"""How actions read in the story and in the context."""

from __future__ import annotations

import pytest

from talekeeper.services.common.rendering import render

pytestmark = pytest.mark.no_database


@pytest.mark.parametrize(
    ("type_", "text", "rendered"),
    [
        ("do", "open the door", "> You open the door."),
        ("do", "Open the door!", "> You open the door!"),
        ("do", "I open the door", "> You open the door."),
        ("do", "you draw your knife", "> You draw your knife."),
        ("do", "grab my rope", "> You grab your rope."),
        ("do", "I hide it myself, it is mine", "> You hide it yourself, it is yours."),
        ("do", "kneel. My knees ache", "> You kneel. Your knees ache."),
        ("do", "grab the rope and I run", "> You grab the rope and you run."),
        ("do", "wait. I am tired, am I not?", "> You wait. You are tired, are you not?"),
        ("do", "i duck and i was too slow", "> You duck and you were too slow."),
        ("do", "I'm here and I’ll stay", "> You are here and you’ll stay."),
        ("do", "I was born here", "> You were born here."),
        ("do", "I've seen it", "> You have seen it."),
        ("do", "read it, i.e. the note", "> You read it, i.e. the note."),
        ("do", "tell Mara I agree", "> You tell Mara you agree."),
        ("do", "wait. Then I run", "> You wait. Then you run."),
        # Speech within a ``do`` keeps its person.
        ("do", 'shout "leave me!" at my brother', '> You shout "leave me!" at your brother.'),
        ("do", "whisper “help me” to my brother", "> You whisper “help me” to your brother."),
        ("do", 'mutter "not me', '> You mutter "not me.'),
        ("do", "NASA calls", "> You NASA calls."),
        ("do", "  ", "> You wait."),
        ("say", "hello there", '> You say "Hello there."'),
        ("say", '"Who goes?"', '> You say "Who goes?"'),
        ("story", "The rain stops.", "The rain stops."),
        ("narration", "  The wind rises.  ", "The wind rises."),
    ],
)
def test_each_action_type_renders_as_the_spec_says(type_: str, text: str, rendered: str) -> None:
    assert render(type_, text) == rendered


@pytest.mark.parametrize(
    ("type_", "text", "rendered"),
    [
        ("do", "open the door", "> Mara opens the door."),
        ("do", "I carry my lantern to the boat", "> Mara carries their lantern to the boat."),
        ("do", "You push past the guard", "> Mara pushes past the guard."),
        ("do", "go north!", "> Mara goes north!"),
        ("do", "have a look at me", "> Mara has a look at them."),
        ("do", 'shout "leave me!" at my brother', '> Mara shouts "leave me!" at their brother.'),
        ("do", "grab the rope and I run", "> Mara grabs the rope and they run."),
        ("do", "kneel. I was wrong", "> Mara kneels. They were wrong."),
        ("do", "I'm here and I'll stay", "> Mara is here and they'll stay."),
        ("do", "I was born here", "> Mara was born here."),
        ("do", 'shout "I am here" and I wave', '> Mara shouts "I am here" and they wave.'),
        ("do", "don't move", "> Mara doesn't move."),
        ("do", "can see the tower", "> Mara can see the tower."),
        ("do", "pass the salt", "> Mara passes the salt."),
        ("do", "stay", "> Mara stays."),
        ("do", "watch", "> Mara watches."),
        ("do", "  ", "> Mara waits."),
        ("say", "hello there", '> Mara says "Hello there."'),
        ("story", "The rain stops.", "The rain stops."),
        ("narration", "The wind rises.", "The wind rises."),
    ],
)
def test_with_a_speaker_a_players_action_reads_in_the_third_person(
    type_: str, text: str, rendered: str
) -> None:
    """A shared adventure several play (docs/sharing.md): each action by its character."""
    assert render(type_, text, "Mara") == rendered
