"""The world in the export file (version 4), through the import and export routes.

An adventure's world (its entities, and every event on any branch and take, the player's
and dismissed ones included) comes back from an import unchanged, and so does the state it
projects; a file written before the world was kept imports with the world the rules read
from its story, as play would have written it; a bad world entry is refused with its JSON
path and nothing is written; the caps hold.

Real parts: the app on a migrated database, turns against the loopback model double.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.kit.exchange import counts
from tests.kit.world_api import event, turn, untimed, world_of

from talekeeper.services.common import limits
from talekeeper.services.exchange.fileformat import ENTRY_CAPS, WORLD_VERSION
from talekeeper_testkit.double import ModelDouble


def played(client: TestClient, double: ModelDouble) -> int:
    """A story whose world has rules events, a player's event, a dismissed derived event,
    an undone turn, a retried take and a fork with its own inventory."""
    made = client.post("/api/adventures", json={"scenario": "lantern-coast"})
    assert made.status_code == 201, made.text
    aid = int(made.json()["id"])
    double.script(
        "You pick up the brass key. Old Maren arrives.",
        "You walk into the Salt Market.",
        "You drop the lantern.",
        "The tide turns.",
        "You pick up a coil of rope.",
    )
    turn(client, aid, "search the quay")
    event(client, aid, kind="took", object="a lantern")
    turn(client, aid, "go on")
    said = client.get(f"/api/adventures/{aid}/world/events").json()
    moved = next(e for e in said if e["kind"] == "moved" and e["object"] == "the Salt Market")
    assert client.delete(f"/api/world/events/{moved['id']}").status_code == 204
    turn(client, aid, "rest")
    assert client.post(f"/api/adventures/{aid}/undo").status_code == 200
    assert client.post(f"/api/adventures/{aid}/retry").status_code == 200
    head = client.get(f"/api/adventures/{aid}").json()
    at = next(e for e in said if e["kind"] == "took" and e["origin"] == "rules")["action_id"]
    fork = client.post(f"/api/actions/{at}/fork", json={"name": "Sea road"})
    assert fork.status_code == 201, fork.text
    assert head["id"] == aid
    turn(client, aid, "look down")
    return aid


def test_the_world_travels_whole_and_comes_back_unchanged(
    client: TestClient, double: ModelDouble
) -> None:
    aid = played(client, double)
    exported = client.get(f"/api/adventures/{aid}/export").json()
    assert exported["version"] == WORLD_VERSION
    assert {e["origin"] for e in exported["world_events"]} == {"rules", "player"}
    assert any(e["dismissed"] for e in exported["world_events"])
    made = client.post("/api/adventures/import", json=exported)
    assert made.status_code == 201, made.text
    copy_id = made.json()["id"]
    assert client.get(f"/api/adventures/{copy_id}/export").json() == exported
    assert world_of(client, copy_id) == world_of(client, aid)
    # The copy plays on: the tree's rules still hold for its events.
    assert client.post(f"/api/adventures/{copy_id}/undo").status_code == 200
    assert client.post(f"/api/adventures/{aid}/undo").status_code == 200
    assert world_of(client, copy_id) == world_of(client, aid)


def test_a_file_from_before_the_world_imports_with_the_world_its_story_states(
    client: TestClient, double: ModelDouble
) -> None:
    made = client.post("/api/adventures", json={"scenario": "lantern-coast"})
    aid = int(made.json()["id"])
    double.script("You pick up the brass key. Old Maren arrives.", "You walk into the mill.")
    turn(client, aid, "search the quay")
    turn(client, aid, "go on")
    assert client.post(f"/api/adventures/{aid}/undo").status_code == 200
    current = client.get(f"/api/adventures/{aid}/export").json()
    for version in (3, 2):
        older = copy.deepcopy(current)
        del older["world_entities"], older["world_events"]
        older["version"] = version
        if version == 2:
            del older["knowledge"]
        answer = client.post("/api/adventures/import", json=older)
        assert answer.status_code == 201, answer.text
        copy_id = answer.json()["id"]
        assert world_of(client, copy_id) == world_of(client, aid), version
        again = client.get(f"/api/adventures/{copy_id}/export").json()
        assert again["version"] == WORLD_VERSION  # the import read the world into it
        # The same rows, but for when they were written (the actions' times, on import).
        for section in ("world_events", "world_entities"):
            assert untimed(again[section]) == untimed(current[section]), section


BAD_WORLD: dict[str, tuple[Any, str]] = {
    "a took event whose object is a person": (
        lambda f, person, item: f["world_events"].append(
            {**f["world_events"][0], "kind": "took", "subject": None, "object": person}
        ),
        "names a person; a took event names a item",
    ),
    "a quest's value that is no state": (
        lambda f, person, item: f["world_events"].append(
            {**f["world_events"][0], "kind": "quest", "subject": None, "object": None}
            | {"value": "forgotten"}
        ),
        "must be a quest's state",
    ),
    "an event off its action's depth": (
        lambda f, person, item: f["world_events"][0].update(
            depth=f["world_events"][0]["depth"] + 1
        ),
        "is not its action's depth",
    ),
    "a second entity of the same name": (
        lambda f, person, item: f["world_entities"].append(
            {**f["world_entities"][item - 1], "key": 999, "name": "THE  Brass key"}
        ),
        "is a second item named",
    ),
    "an event naming no entity": (
        lambda f, person, item: f["world_events"][0].update(subject=12345),
        "names no world entity",
    ),
    "an origin no event has": (
        lambda f, person, item: f["world_events"][0].update(origin="oracle"),
        "rules, model, player",
    ),
    "a value too long": (
        lambda f, person, item: f["world_events"][0].update(value="x" * 301),
        "at most 300 characters",
    ),
}


@pytest.mark.parametrize("name", list(BAD_WORLD))
def test_a_bad_world_entry_is_refused_with_its_path_and_nothing_is_written(
    client: TestClient, double: ModelDouble, name: str
) -> None:
    made = client.post("/api/adventures", json={"scenario": "lantern-coast"})
    aid = int(made.json()["id"])
    double.script("You pick up the brass key. Old Maren arrives.")
    turn(client, aid, "search the quay")
    data = client.get(f"/api/adventures/{aid}/export").json()
    kinds = {e["name"]: e["key"] for e in data["world_entities"]}
    damage, words = BAD_WORLD[name]
    damage(data, kinds["Old Maren"], kinds["the brass key"])
    before = counts(client)
    response = client.post("/api/adventures/import", json=data)
    assert response.status_code == 400, response.text
    message = response.json()["error"]["message"]
    assert "file.world_e" in message and words in message, message
    assert counts(client) == before


def test_the_world_caps_hold_at_import_and_for_the_players_events(
    client: TestClient, double: ModelDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    made = client.post("/api/adventures", json={"scenario": "lantern-coast"})
    aid = int(made.json()["id"])
    data = client.get(f"/api/adventures/{aid}/export").json()
    # The real cap's file would pass the body limit first: the cap, made small.
    assert ENTRY_CAPS["world_events"][0] == limits.MAX_WORLD_EVENTS
    monkeypatch.setitem(ENTRY_CAPS, "world_events", (3, "world events"))
    data["world_events"] = [data["world_events"][0]] * 4
    before = counts(client)
    response = client.post("/api/adventures/import", json=data)
    assert response.status_code == 400, response.text  # as every cap of a file
    assert response.json()["error"]["code"] == "limit_reached"
    assert counts(client) == before
    have = len(client.get(f"/api/adventures/{aid}/world/events").json())
    monkeypatch.setattr(limits, "MAX_WORLD_EVENTS", have + 1)
    event(client, aid, kind="took", object="a lantern")
    refused = client.post(
        f"/api/adventures/{aid}/world/events", json={"kind": "time", "value": "dawn"}
    )
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "limit_reached"
    assert "at most" in refused.json()["error"]["message"]


def test_a_long_older_file_has_every_actions_world_read(
    client: TestClient, double: ModelDouble
) -> None:
    """A 3,000-action file from before the world: each action's events, on its node."""
    made = client.post("/api/adventures", json={"scenario": "lantern-coast"})
    aid = int(made.json()["id"])
    data = client.get(f"/api/adventures/{aid}/export").json()
    opening = data["actions"][0]
    texts = ["You pick up the brass key.", "You walk into the Salt Market.", "Maren arrives."]
    data["actions"] = [
        {**opening, "key": k, "depth": k - 1, "type": "narration", "text": texts[k % 3]}
        for k in range(1, 3001)
    ]
    del data["world_entities"], data["world_events"]
    data["version"], data["insights"], data["memories"], data["summaries"] = 3, [], [], []
    answer = client.post("/api/adventures/import", json=data)
    assert answer.status_code == 201, answer.text
    copy_id = answer.json()["id"]
    events = client.get(f"/api/adventures/{copy_id}/world/events").json()
    assert len(events) == 3000
