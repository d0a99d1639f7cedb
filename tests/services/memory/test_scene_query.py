"""The retrieval query's input: an opening address to someone in the scene is left out."""

from __future__ import annotations

import pytest

from talekeeper.core.tokens import CharCounter
from talekeeper.services.memory.scene import Scene, query_texts, without_address

pytestmark = pytest.mark.no_database

CAST = ("Vegurk", "Captain Ilse")


def test_an_address_to_someone_in_the_scene_is_left_out_of_the_input() -> None:
    assert without_address("Vegurk, how did I hurt my shoulder?", CAST) == (
        "how did I hurt my shoulder?"
    )
    assert without_address('"Captain Ilse, where is the key?', CAST) == "where is the key?"
    assert without_address("ilse,   where is the key?", CAST) == "where is the key?"


def test_anything_else_before_a_comma_stays() -> None:
    for text in (
        "Yesterday, I went home.",  # not a name of the scene
        "Maren, where is the key?",  # a name, but not of anyone present
        "ask Vegurk, then leave",  # not at the very start
        "Vegurk,",  # nothing would be left to ask with
        "Vegurk how did I hurt my shoulder?",  # no comma: the name is part of the question
    ):
        assert without_address(text, CAST) == text


def test_the_query_keeps_the_scene_in_its_context_text() -> None:
    scene = Scene("the quay", CAST, "", False)
    asked, context = query_texts(
        "Vegurk, how did I hurt my shoulder?", scene, "The tide turns.", CharCounter()
    )
    assert asked == "how did I hurt my shoulder?"
    assert "Vegurk" in context and context.endswith("The tide turns.")
