"""The world model's path (docs/world.md): with ``TALEKEEPER_WORLD_MODEL`` naming a model,
each turn's reply is read once in the background by that model, through the pass seam;
what its answer states and the turn bears out becomes events with origin ``model``; the
rest, and garbage, is dropped; an edit has the reply read again; a provider's failure is
recorded and retried.

Real parts: the app on a migrated database, the loopback model double as every model (the
world model answers from a responder that sees the request), the background worker.
The figure of a real model's reading waits for a GPU machine; these tests hold its
plumbing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.conftest import LOCAL, double_settings
from tests.kit.accounts import CHEAP, PASSWORD, As, played_by_two
from tests.kit.memory import settle
from tests.kit.world_api import WORLD, turn, with_world_model, world_double

from talekeeper.services.accounts import create_user
from talekeeper.storage.db import session_scope
from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble


@pytest.fixture
def double() -> Iterator[ModelDouble]:
    yield from world_double()


@pytest.fixture
def client(tmp_path: Path, double: ModelDouble) -> Iterator[TestClient]:
    yield from with_world_model(tmp_path, double)


def answering(double: ModelDouble, answer: Callable[[str], object]) -> list[str]:
    """The world model answers ``answer(the turn's text)`` as JSON (a str as it is); the
    texts it was asked about, in order."""
    asked: list[str] = []

    def respond(body: Any) -> str:
        user = str(body["messages"][-1]["content"])
        asked.append(user)
        made = answer(user)
        return made if isinstance(made, str) else json.dumps(made)

    double.responders[WORLD] = respond
    return asked


def events(client: TestClient, aid: int) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = client.get(f"/api/adventures/{aid}/world/events").json()
    return listed


def adventure(client: TestClient) -> int:
    made = client.post("/api/adventures", json={"scenario": "lantern-coast"})
    assert made.status_code == 201, made.text
    return int(made.json()["id"])


def test_the_model_reads_each_reply_once_and_only_what_the_turn_bears_out_is_kept(
    client: TestClient, double: ModelDouble
) -> None:
    aid = adventure(client)
    reply = "Your fingers close around the cold iron of the old lamp. Captain Rhys waves."
    asked = answering(
        double,
        lambda text: {
            "events": [
                {"kind": "took", "subject": None, "object": "the old lamp", "value": None,
                 "evidence": "Your fingers close around the cold iron of the old lamp."},
                # Not a sentence of the turn: dropped.
                {"kind": "moved", "subject": None, "object": "the lighthouse", "value": None,
                 "evidence": "You climb to the lighthouse."},
                # A sentence of the turn that does not name what it says: dropped.
                {"kind": "arrived", "subject": "Old Maren", "object": None, "value": None,
                 "evidence": "Captain Rhys waves."},
                {"kind": "teleported", "object": "Mars", "evidence": "Captain Rhys waves."},
                "not an object",
            ]
        },
    )  # fmt: skip
    double.script(reply)
    turn(client, aid, "look around")
    settle(client, aid)
    assert len(asked) == 1 and reply in asked[0] and "look around" in asked[0]
    mine = [e for e in events(client, aid) if e["origin"] == "model"]
    assert [(e["kind"], e["object"]) for e in mine] == [("took", "the old lamp")]
    state = client.get(f"/api/adventures/{aid}/world").json()
    assert [r["name"] for r in state["inventory"]] == ["the old lamp"]
    # A turn's other background work does not ask again: one call for one reply.
    client.post(f"/api/adventures/{aid}/memories", json={"text": "The lamp is cold."})
    settle(client, aid)
    calls = [
        r for r in double.requests if isinstance(r.body, dict) and r.body.get("model") == WORLD
    ]
    assert len(calls) == 1


def test_garbage_keeps_nothing_and_is_no_error(client: TestClient, double: ModelDouble) -> None:
    aid = adventure(client)
    for garbage in ("I think the player has a lamp.", '{"events": "lots"}', "{not json}", "[]"):
        answering(double, lambda text, g=garbage: g)
        double.script("You pick up the brass key.")
        turn(client, aid, "look down")
        derived = settle(client, aid)
        assert derived["world"]["state"] == "idle"
    assert {e["origin"] for e in events(client, aid)} == {"rules"}


def test_an_edit_has_the_reply_read_again_and_its_old_reading_replaced(
    client: TestClient, double: ModelDouble
) -> None:
    aid = adventure(client)

    def read(text: str) -> object:
        item = "the brass key" if "brass key" in text else "the iron key"
        return {"events": [{"kind": "took", "object": item, "evidence": hidden(item)}]}

    def hidden(item: str) -> str:  # a sentence the rules do not read, the model does
        return f"Your boot hides {item} now."

    asked = answering(double, read)
    double.script(hidden("the brass key"))
    played = turn(client, aid, "look down")
    settle(client, aid)
    assert [e["object"] for e in events(client, aid) if e["origin"] == "model"] == ["the brass key"]
    edited = client.patch(
        f"/api/actions/{played['reply']['id']}", json={"text": hidden("the iron key")}
    )
    assert edited.status_code == 200, edited.text
    client.post(f"/api/adventures/{aid}/memories", json={"text": "Boots."})  # a run
    settle(client, aid)
    assert len(asked) == 2
    mine = [(e["kind"], e["object"]) for e in events(client, aid) if e["origin"] == "model"]
    assert mine == [("took", "the iron key")]


def test_a_failed_reading_is_recorded_and_the_next_run_reads_it(
    client: TestClient, double: ModelDouble
) -> None:
    aid = adventure(client)
    answering(
        double,
        lambda text: {"events": [{"kind": "moved", "object": "the mill",
                                  "evidence": "The road bends toward the mill."}]},
    )  # fmt: skip
    double.fail_next("500", model=WORLD)
    double.script("The road bends toward the mill.")
    turn(client, aid, "walk")
    deadline_state = settle_failed(client, aid)
    assert deadline_state["world"]["state"] == "failed"
    client.post(f"/api/adventures/{aid}/memories", json={"text": "Mill."})  # another run
    settle(client, aid)
    assert [e["object"] for e in events(client, aid) if e["origin"] == "model"] == ["the mill"]


def settle_failed(client: TestClient, aid: int) -> dict[str, Any]:
    """Background work done, with a kind failed (``settle`` insists on every kind idle)."""
    deadline = time.monotonic() + 30
    while True:
        derived: dict[str, Any] = client.get(f"/api/adventures/{aid}/derived").json()
        if not derived["pending"] and derived["world"]["state"] == "failed":
            return derived
        assert time.monotonic() < deadline, derived
        time.sleep(0.05)


def test_where_several_play_the_models_player_is_whoever_acted(
    tmp_path: Path, double: ModelDouble
) -> None:
    """In a shared adventure, the model is shown a member's turn as their character
    stands; what it says of "the player" (no subject) on that turn is said of that
    member's character, and what it says of the host's character by name is the host's:
    the host's place and belongings are the player's."""
    settings = double_settings(
        tmp_path, double, world_model=WORLD, summary_model="extractive", auth="accounts"
    )
    with TestClient(create_app(settings), base_url=LOCAL) as accounts:
        runtime = accounts.app.state.runtime  # type: ignore[attr-defined]
        with session_scope(runtime.sessions) as session:
            for name in ("mara", "tal"):
                create_user(session, name, PASSWORD, hasher=CHEAP)
        mara, tal, aid = played_by_two(accounts, "Harbour")
        asked = answering(
            double,
            lambda text: {
                "events": [
                    {"kind": "took", "subject": None, "object": "the brass key",
                     "evidence": "keep the brass key close"},
                    {"kind": "took", "subject": "Mara", "object": "the lantern",
                     "evidence": "Mara tucks the lantern under her cloak."},
                ]
            },
        )  # fmt: skip
        double.script("Stalls crowd the square.")
        walked = tal.post(f"/api/adventures/{aid}/actions", json={"text": "walk into the Market"})
        assert walked.status_code == 200, walked.text
        settle(mara, aid)
        double.script("Mara tucks the lantern under her cloak.")  # words the rules do not read
        acted = tal.post(
            f"/api/adventures/{aid}/actions", json={"text": "keep the brass key close"}
        )
        assert acted.status_code == 200, acted.text
        settle(mara, aid)
        mine = [e for e in events_as(mara, aid) if e["origin"] == "model"]
        # The model is shown the turn as Tal stands: Tal's place, not the host's.
        assert len(asked) == 2 and "Where the player is: the Market\n" in asked[1]
        assert {(e["subject"], e["object"]) for e in mine} == {
            ("Tal", "the brass key"),
            (None, "the lantern"),
        }
        state = mara.get(f"/api/adventures/{aid}/world").json()
        assert [r["name"] for r in state["inventory"]] == ["the lantern"]


def events_as(reader: As, aid: int) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = reader.get(f"/api/adventures/{aid}/world/events").json()
    return listed
