"""The lore clerk's model path (docs/world.md, "The lore clerk"): with a world model, one
call a run writes a new proposal's entry from the story's sentences; only what cites them
and says nothing more is kept, each line with its source; garbage keeps the story's own
sentences and is not asked again; a model's entry gives way when the sentences it cites
leave the path.

Real parts: the app on a migrated database, the loopback model double as every model (the
world model answers from a responder that sees the request), the background worker. A real
model's figures wait for a GPU machine; these tests hold the plumbing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.kit.memory import new_adventure, settle
from tests.kit.world_api import WORLD, turn, with_world_model, world_double

from talekeeper_testkit.double import ModelDouble

RHYS = (
    "Captain Rhys steps off the ferry with a sea chest.",
    "The gulls scatter. Rhys wears a coat of oiled blue wool.",
    "Rhys owes the harbourmaster forty crowns.",
)


@pytest.fixture
def double() -> Iterator[ModelDouble]:
    yield from world_double()


@pytest.fixture
def client(tmp_path: Path, double: ModelDouble) -> Iterator[TestClient]:
    yield from with_world_model(tmp_path, double)


def drafting(double: ModelDouble, entry: object) -> list[str]:
    """The world model answers a card's request with ``entry`` (JSON; a str as it is), a
    turn's reading with no events; the card requests it was sent."""
    asked: list[str] = []

    def respond(body: Any) -> str:
        user = str(body["messages"][-1]["content"])
        if "The card is about:" not in user:
            return json.dumps({"events": []})
        asked.append(user)
        return entry if isinstance(entry, str) else json.dumps(entry)

    double.responders[WORLD] = respond
    return asked


def play(client: TestClient, double: ModelDouble, aid: int, *replies: str) -> None:
    for reply in replies:
        double.script(reply)
        turn(client, aid, "look around")
        settle(client, aid)


def listed(client: TestClient, aid: int) -> list[dict[str, Any]]:
    settle(client, aid)
    body: list[dict[str, Any]] = client.get(f"/api/adventures/{aid}/card-proposals").json()
    return body


def test_the_model_writes_the_entry_and_only_what_cites_the_story_is_kept(
    client: TestClient, double: ModelDouble
) -> None:
    asked = drafting(
        double,
        {
            "entry": [
                {"sentence": "Rhys is a captain who owes the harbourmaster forty crowns.",
                 "from": [1, 3]},
                {"sentence": "Rhys was once a pirate king.", "from": [1]},
                {"sentence": "Rhys wears blue wool.", "from": []},
            ]
        },
    )  # fmt: skip
    aid = int(new_adventure(client)["id"])
    play(client, double, aid, *RHYS)
    [rhys] = listed(client, aid)
    assert len(asked) == 1 and "1. Captain Rhys steps off the ferry" in asked[0]
    assert rhys["entry"] == "Rhys is a captain who owes the harbourmaster forty crowns."
    assert [e["text"] for e in rhys["evidence"]] == [RHYS[0], RHYS[2]]
    play(client, double, aid, "The tide turns.")
    assert len(asked) == 1  # one call for that proposal, not one a turn
    card = client.post(f"/api/card-proposals/{rhys['id']}/accept")
    assert card.status_code == 201, card.text
    assert card.json()["entry"] == rhys["entry"]


def test_garbage_keeps_the_storys_sentences_and_is_not_asked_again(
    client: TestClient, double: ModelDouble
) -> None:
    asked = drafting(double, "I cannot help with that.")
    aid = int(new_adventure(client)["id"])
    play(client, double, aid, *RHYS)
    [rhys] = listed(client, aid)
    assert rhys["entry"].startswith(RHYS[0])  # the story's own sentences
    play(client, double, aid, "The tide turns.", "Rhys sleeps on the deck of his ferry.")
    assert len(asked) == 1


def test_the_models_entry_gives_way_when_a_sentence_it_cites_leaves_the_path(
    client: TestClient, double: ModelDouble
) -> None:
    drafting(
        double,
        {"entry": [{"sentence": "Rhys owes the harbourmaster forty crowns.", "from": [3]}]},
    )
    aid = int(new_adventure(client)["id"])
    play(client, double, aid, *RHYS, "Rhys sleeps on the deck of his ferry.")
    [rhys] = listed(client, aid)
    assert rhys["entry"] == "Rhys owes the harbourmaster forty crowns."
    cited = rhys["evidence"][0]["action_id"]
    edited = client.patch(f"/api/actions/{cited}", json={"text": "Rhys pays his debts."})
    assert edited.status_code == 200, edited.text
    drafting(double, "nothing useful")
    [again] = listed(client, aid)
    assert again["id"] == rhys["id"]
    assert "forty crowns" not in again["entry"]  # the story's sentences on this path
    assert all(e["text"] != RHYS[2] for e in again["evidence"])


def test_a_failed_call_is_recorded_and_the_next_run_asks_again(
    client: TestClient, double: ModelDouble
) -> None:
    asked = drafting(
        double, {"entry": [{"sentence": "Rhys owes the harbourmaster forty crowns.", "from": [3]}]}
    )
    aid = int(new_adventure(client)["id"])
    play(client, double, aid, *RHYS[:2])
    double.fail_next("500", count=2, model=WORLD)  # this turn's reading, then the card's call
    double.script(RHYS[2])
    turn(client, aid, "look around")
    deadline = time.monotonic() + 30
    while True:
        derived: dict[str, Any] = client.get(f"/api/adventures/{aid}/derived").json()
        if not derived["pending"] and derived["cards"]["state"] == "failed":
            break
        assert time.monotonic() < deadline, derived
        time.sleep(0.05)
    assert derived["cards"]["last_error"]  # shown, with its error
    [rhys] = client.get(f"/api/adventures/{aid}/card-proposals").json()
    assert rhys["entry"].startswith(RHYS[0])  # the story's sentences meanwhile
    play(client, double, aid, "The tide turns.")  # the next run asks again
    [rhys] = listed(client, aid)
    assert rhys["entry"] == "Rhys owes the harbourmaster forty crowns." and len(asked) == 1
