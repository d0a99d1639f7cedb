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
