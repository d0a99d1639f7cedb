"""Authority: a hedged memory is heuristic, a plain one accepted; hedges match whole words."""

from __future__ import annotations

import pytest

from talekeeper.services.memory.authority import HEDGES, classify
from talekeeper.storage.vocabulary import Authority

pytestmark = pytest.mark.no_database


def test_the_two_authorities_are_the_stored_values() -> None:
    assert Authority.ACCEPTED == "accepted_story"
    assert Authority.HEURISTIC == "heuristic"


@pytest.mark.parametrize("hedge", HEDGES)
def test_every_hedge_makes_a_memory_heuristic(hedge: str) -> None:
    assert (
        classify(f"Mara {hedge} the smuggler hid the ledger in the chapel.") == Authority.HEURISTIC
    )


@pytest.mark.parametrize("hedge", HEDGES)
def test_hedges_match_in_any_case_and_at_either_end(hedge: str) -> None:
    assert classify(f"{hedge.upper()} Hale lied") == Authority.HEURISTIC
    assert classify(f"{hedge.capitalize()}, Hale lied") == Authority.HEURISTIC
    assert classify(f"Hale lied, {hedge}.") == Authority.HEURISTIC


def test_the_hedges_the_spec_names_are_all_there() -> None:
    named = (
        "seemed appears to perhaps maybe possibly probably likely suspected believes as if implied"
    )
    for hedge in ("seemed", "appears to", "as if"):
        assert hedge in HEDGES
    for word in named.split():
        assert any(word in h.split() for h in HEDGES), word


def test_phrases_match_across_any_whitespace() -> None:
    assert classify("The door appears\n  to be locked.") == Authority.HEURISTIC
    assert classify("Hale looked at her as\tif she were a ghost.") == Authority.HEURISTIC


@pytest.mark.parametrize(
    "text",
    [
        "Captain Hale gave Mara the key to the lighthouse.",
        "Mara promised Brand 30 gold crowns and left at dawn.",
        "The wolf bit Mara's left arm; the wound bled through the bandage.",
        "Maybelle runs the inn at Saltmarsh.",  # "maybe" inside a name
        "The mighty ship sailed in May.",  # "might" inside "mighty"; bare "may"
        "A thoughtful clerk thought of home.",  # bare "thought"
        "A figure appears in the doorway.",  # bare "appears"
        "The likelihood of rain did not stop the march.",  # bare "likelihood"
        "Hale claimed the throne of Vesk.",  # bare "claimed"
        "The believer kneels; the guesthouse is full.",  # hedges inside longer words
        "",
    ],
)
def test_plain_facts_are_accepted(text: str) -> None:
    assert classify(text) == Authority.ACCEPTED


def test_seemingly_and_in_all_likelihood_are_hedges() -> None:
    assert classify("The seemingly loyal guard opened the gate.") == Authority.HEURISTIC
    assert classify("In all likelihood the guard opened the gate.") == Authority.HEURISTIC


def test_a_hedge_in_quoted_or_reported_speech_still_counts() -> None:
    assert classify("'Perhaps,' Hale said, 'the vault is empty.'") == Authority.HEURISTIC
    assert classify("Hale said the ledger was probably burned.") == Authority.HEURISTIC
