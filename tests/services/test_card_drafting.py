"""What of a model's card entry is kept (docs/world.md, "The lore clerk"): only sentences
that cite the story's sentences shown and say nothing those do not; garbage keeps nothing."""

from __future__ import annotations

import json

import pytest

from talekeeper.services.world.card_drafting import kept, request
from talekeeper.services.world.clerk import Line

pytestmark = pytest.mark.no_database

SOURCES = (
    Line(3, "Captain Rhys steps off the ferry with a sea chest."),
    Line(5, "Rhys owes the harbourmaster forty crowns."),
)


def answer(*entries: object) -> str:
    return "Here it is: " + json.dumps({"entry": list(entries)}) + " Hope it helps."


def test_a_cited_sentence_that_says_only_what_its_sources_say_is_kept() -> None:
    got = kept(
        answer(
            {
                "sentence": "Rhys is a captain who owes the harbourmaster forty crowns",
                "from": [1, 2],
            },
            {"sentence": "Rhys was once a pirate king.", "from": [1]},  # not in the story
            {"sentence": "Rhys steps off the ferry.", "from": []},  # cites nothing
            {"sentence": "Rhys steps off the ferry.", "from": [9]},  # cites what was not shown
            {"sentence": "Rhys has a sea chest.", "from": ["1"]},  # not a number
            "a string",
        ),
        SOURCES,
        ("Captain Rhys", "Rhys"),
    )
    assert got.entry == "Rhys is a captain who owes the harbourmaster forty crowns."
    assert got.evidence == SOURCES
    assert got.read == 6


@pytest.mark.parametrize(
    "garbage",
    [
        *("", "no JSON at all", "{not json}", '{"entry": "text"}', "[1, 2]", '{"x": []}'),
        '{"entry": ' + "[" * 5000 + "]" * 5000 + "}",  # nested past the JSON reader's depth
    ],
)
def test_garbage_keeps_nothing(garbage: str) -> None:
    assert kept(garbage, SOURCES, ("Rhys",)).lines == ()


def test_the_request_numbers_the_sources_and_asks_for_json_only() -> None:
    made = request("Captain Rhys", SOURCES, model="m", mode="chat")
    text = json.dumps(made.messages if hasattr(made, "messages") else made.__dict__, default=str)
    assert "1. Captain Rhys steps off" in text and "2. Rhys owes" in text
    assert "add nothing" in text and '\\"from\\"' in text
