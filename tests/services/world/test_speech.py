"""Who says what (services/world/speech.py): a script's speaker lines, and quotations a
name is said to speak."""

from __future__ import annotations

import pytest

from talekeeper.services.world.speech import attributed, blocks, outside_quotes, speaker_of

pytestmark = pytest.mark.no_database


@pytest.mark.parametrize(
    ("line", "speaker"),
    [
        ("PETRUCHIO:", "Petruchio"),
        ("DUKE VINCENTIO:", "Duke Vincentio"),
        ("First Citizen:", "First Citizen"),
        ("Duchess of York:", "Duchess of York"),
        ("Note: the door is locked.", ""),  # words after the colon: prose
        ("the end:", ""),
        ("You:", ""),
        ("One Two Three Four Five:", ""),
        ("Inventory:", ""),  # a narrator's heading, no one speaking
        ("STATUS:", ""),
    ],
)
def test_a_speaker_line_is_only_a_name_and_a_colon(line: str, speaker: str) -> None:
    assert speaker_of(line) == speaker


def test_a_text_is_cut_into_its_speeches() -> None:
    text = "Fog lies low.\nMARA:\nI go.\nStay here.\nTOBIN:\nNo."
    assert blocks(text) == (("", "Fog lies low."), ("Mara", "I go.\nStay here."), ("Tobin", "No."))
    assert blocks("No speaker here.") == (("", "No speaker here."),)


@pytest.mark.parametrize(
    ("sentence", "named"),
    [
        ('"I am not afraid," said Lydia.', True),
        ('"Oh!" said Lydia stoutly, "I am not afraid."', True),
        ('Mr. Bennet replied, "I know it."', True),
        ('"I am not afraid," she said.', False),
        ('Softly she said, "I know."', False),
        ('In Rome he said, "I know."', False),  # a name, but not the one saying it
        ('"I know," Lydia said.', True),
        ('"I know," said Miss Bingley.', True),
        ('"I am not afraid," Lydia thought.', False),  # no verb of saying
    ],
)
def test_speech_is_attributed_when_a_name_is_said_to_speak(sentence: str, named: bool) -> None:
    assert attributed(outside_quotes(sentence)) is named
