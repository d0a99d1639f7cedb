"""The memory system's JSON API: the Memory Bank (list, write, edit, pin, delete, source),
the Story Summary, the Scene and the state of background work, through the real app
against the loopback model double (whose summary model writes memories deterministically).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.conftest import MODES, each_mode
from tests.kit.memory import new_adventure, refused, settle, write

from talekeeper.storage.db import session_scope
from talekeeper.storage.models import User
from talekeeper_testkit.double import ModelDouble


@pytest.fixture(params=MODES)
def client(
    request: pytest.FixtureRequest, tmp_path: Path, double: ModelDouble
) -> Iterator[TestClient]:
    """Every test here runs in local mode and, signed in, in accounts mode."""
    yield from each_mode(request.param, tmp_path, double)


def play(client: TestClient, double: ModelDouble, aid: int, turns: int) -> list[int]:
    """``turns`` turns (two actions each); the ids of the replies."""
    replies = []
    for i in range(turns):
        double.script(f"The tide turns for the {i + 1}th time. Gulls cry over the harbour.")
        response = client.post(
            f"/api/adventures/{aid}/actions", json={"type": "do", "text": f"walk on ({i + 1})"}
        )
        assert response.status_code == 200, response.text
        replies.append(response.json()["reply"]["id"])
    return replies


MEMORY_KEYS = {
    "id",
    "text",
    "status",
    "pinned",
    "authority",
    "source_start",
    "source_end",
    "use_count",
    "last_used_at",
    "embedded",
    "stale",
    "origin",
    "writer",
    "branch_id",
    "depth",
    "created_at",
    "updated_at",
    "used_by",
    "known_by",  # null: no secret (docs/world.md, "Who knows what")
}
PASS_KEYS = {
    "state",
    "last_run_at",
    "last_success_at",
    "last_failure_at",
    "last_error",
    "previous_error",
    "did_work",
    "failures_in_a_row",
}


def moment(value: str) -> datetime:
    """A timestamp as the API writes it: Python's ISO 8601 form, never pydantic's "Z"."""
    assert not value.endswith("Z"), value
    return datetime.fromisoformat(value)


def memories(client: TestClient, aid: int, **params: str) -> list[dict[str, Any]]:
    response = client.get(f"/api/adventures/{aid}/memories", params=params)
    assert response.status_code == 200, response.text
    listed: list[dict[str, Any]] = response.json()
    return listed


# -- the player's memories ----------------------------------------------------------------


def test_write_edit_pin_unpin_and_delete_a_memory(client: TestClient) -> None:
    adventure = new_adventure(client)
    aid = adventure["id"]
    assert memories(client, aid) == []

    mine = write(client, aid, "  Tamsin promised Maren to relight the Great Lantern.  ")
    assert mine["text"] == "Tamsin promised Maren to relight the Great Lantern."
    assert mine["status"] == "active" and mine["pinned"] is False
    assert mine["origin"] == "user" and mine["writer"] == "player"
    assert mine["authority"] == "accepted_story"
    assert mine["source_start"] is None and mine["source_end"] is None
    assert mine["branch_id"] == adventure["current_branch_id"] and mine["depth"] == -1
    assert mine["use_count"] == 0 and mine["used_by"] == [] and mine["stale"] is False
    assert set(mine) == MEMORY_KEYS and mine["last_used_at"] is None  # no ``on_path`` here
    assert moment(mine["created_at"]) <= moment(mine["updated_at"])
    assert [m["id"] for m in memories(client, aid)] == [mine["id"]]
    assert all(set(m) == MEMORY_KEYS for m in memories(client, aid))
    assert [m["on_path"] for m in memories(client, aid, include="all")] == [True]

    url = f"/api/memories/{mine['id']}"
    pinned = client.patch(url, json={"pinned": True}).json()
    assert pinned["pinned"] is True and pinned["text"] == mine["text"]
    assert set(pinned) == MEMORY_KEYS
    unpinned = client.patch(url, json={"pinned": False}).json()
    assert unpinned["pinned"] is False

    edited = client.patch(url, json={"text": "Maren seemed to distrust Brother Ansel."}).json()
    assert edited["text"] == "Maren seemed to distrust Brother Ansel."
    assert edited["authority"] == "heuristic"  # reclassified with the new text
    assert memories(client, aid)[0]["text"] == edited["text"]

    both = client.patch(url, json={"text": "Maren distrusts Ansel.", "pinned": True}).json()
    assert both["text"] == "Maren distrusts Ansel." and both["pinned"] is True
    assert both["authority"] == "accepted_story"

    assert client.delete(url).status_code == 204
    assert memories(client, aid) == []
    everything = memories(client, aid, include="all")
    assert [(m["id"], m["status"]) for m in everything] == [(mine["id"], "deleted")]
    refused(client.patch(url, json={"pinned": False}), 409, "deleted", "new memory")
    assert client.delete(url).status_code == 204  # deleting twice changes nothing


def test_a_pinned_memory_can_be_written_and_hedges_read_as_heuristic(client: TestClient) -> None:
    aid = new_adventure(client)["id"]
    guess = write(client, aid, "Brother Ansel probably barred the door.", pinned=True)
    assert guess["pinned"] is True and guess["authority"] == "heuristic"


def test_written_memories_are_listed_in_story_order_with_their_source_and_uses(
    client: TestClient, double: ModelDouble
) -> None:
    aid = new_adventure(client)["id"]
    play(client, double, aid, 6)  # 13 actions: blocks 0-5 and 6-11 are due
    settle(client, aid)
    auto = memories(client, aid)
    assert [(m["source_start"], m["source_end"]) for m in auto] == [(0, 5), (6, 11)]
    assert all(m["origin"] == "auto" and m["writer"] == "double-summary" for m in auto)
    assert all(m["embedded"] for m in auto)
    mine = write(client, aid, "Tamsin keeps a spare flint in her boot.")
    assert memories(client, aid)[0]["id"] == mine["id"]  # before the first action's memory

    source = client.get(f"/api/memories/{auto[1]['id']}/source").json()
    assert source["memory"]["id"] == auto[1]["id"]
    assert source["branch_id"] == auto[1]["branch_id"]
    assert [a["depth"] for a in source["actions"]] == list(range(6, 12))
    action = source["actions"][1]
    assert set(action) == {"id", "type", "text", "rendered", "depth", "branch_id"}
    assert action["type"] == "do" and action["rendered"].startswith("> You walk on")
    assert "note" not in source

    hand = client.get(f"/api/memories/{mine['id']}/source").json()
    assert hand["actions"] == [] and hand["note"] == "written by the player; it has no source block"

    settle(client, aid)
    reply = play(client, double, aid, 1)[0]  # the bank is small: every memory is retrieved
    used = {m["id"]: m for m in memories(client, aid)}
    assert used[auto[0]["id"]]["used_by"] == [reply]
    assert used[auto[0]["id"]]["use_count"] == 1
    assert moment(used[auto[0]["id"]]["last_used_at"])


def test_the_source_is_read_along_its_own_branch_after_a_switch(
    client: TestClient, double: ModelDouble
) -> None:
    adventure = new_adventure(client)
    aid, main = adventure["id"], adventure["current_branch_id"]
    play(client, double, aid, 6)
    settle(client, aid)
    first = memories(client, aid)[0]
    story = client.get(f"/api/adventures/{aid}/actions").json()["actions"]
    fork = client.post(f"/api/actions/{story[2]['id']}/fork", json={"name": "Elsewhere"})
    assert fork.status_code == 201, fork.text
    branch = fork.json()["branch"]["id"]
    double.script("A different tide.")
    client.post(f"/api/adventures/{aid}/actions", json={"type": "do", "text": "turn back"})

    assert memories(client, aid) == []  # the fork's path is depths 0-2 and its own: no block
    everything = {m["id"]: m for m in memories(client, aid, include="all")}
    assert everything[first["id"]]["on_path"] is False
    source = client.get(f"/api/memories/{first['id']}/source").json()
    assert source["branch_id"] == main
    assert [a["depth"] for a in source["actions"]] == list(range(6))
    assert {a["branch_id"] for a in source["actions"]} == {main}

    # A memory written on the fork is on its path only.
    mine = write(client, aid, "On this branch Tamsin turned back.")
    assert mine["branch_id"] == branch and mine["depth"] == 2
    assert [m["id"] for m in memories(client, aid)] == [mine["id"]]
    client.post(f"/api/adventures/{aid}/switch-branch", json={"branch_id": main})
    assert mine["id"] not in [m["id"] for m in memories(client, aid)]


def test_a_players_memory_survives_undo_and_a_withdrawn_one_cannot_be_edited(
    client: TestClient, double: ModelDouble
) -> None:
    aid = new_adventure(client)["id"]
    play(client, double, aid, 6)
    settle(client, aid)
    mine = write(client, aid, "Tamsin swore on the Hearthstone.")
    second = memories(client, aid)[-1]
    assert second["source_end"] == 11
    for _ in range(2):  # the reply at 12, then the action at 11 the second block ends on
        assert client.post(f"/api/adventures/{aid}/undo").status_code == 200
    listed = [m["id"] for m in memories(client, aid)]
    assert mine["id"] in listed and second["id"] not in listed
    statuses = {m["id"]: m["status"] for m in memories(client, aid, include="all")}
    assert statuses[second["id"]] == "withdrawn" and statuses[mine["id"]] == "active"

    url = f"/api/memories/{second['id']}"
    refused(client.patch(url, json={"text": "New words."}), 409, "withdrawn", "edit")
    refused(client.patch(url, json={"pinned": True}), 409, "withdrawn")
    refused(client.delete(url), 409, "withdrawn")


def test_a_forgotten_memory_comes_back_when_pinned(client: TestClient) -> None:
    assert client.patch("/api/settings", json={"bank_capacity": 1}).status_code == 200
    aid = new_adventure(client)["id"]
    older = write(client, aid, "Maren lost her eye to a storm.")
    newer = write(client, aid, "The keepers' door is barred from the inside.")
    settle(client, aid)
    statuses = {m["id"]: m["status"] for m in memories(client, aid)}
    assert statuses == {older["id"]: "forgotten", newer["id"]: "active"}  # least recently used

    back = client.patch(f"/api/memories/{older['id']}", json={"pinned": True}).json()
    assert back["status"] == "active" and back["pinned"] is True
    settle(client, aid)
    listed = {m["id"]: m for m in memories(client, aid)}
    assert listed[older["id"]]["status"] == "active"  # pinned: never forgotten again


def test_an_edited_memory_is_embedded_again_by_background_work(client: TestClient) -> None:
    aid = new_adventure(client)["id"]
    mine = write(client, aid, "Tamsin hid the brass key under the third step.")
    assert mine["embedded"] is False
    settle(client, aid)
    assert memories(client, aid)[0]["embedded"] is True

    edited = client.patch(
        f"/api/memories/{mine['id']}", json={"text": "Tamsin hid the key in the lantern."}
    ).json()
    assert edited["embedded"] is False
    derived = settle(client, aid)
    assert derived["embedding"]["did_work"] is True
    kinds = {"memory", "summary", "embedding", "eviction", "world", "cards"}
    assert set(derived) == {"adventure_id", "pending"} | kinds
    assert derived["adventure_id"] == aid and derived["pending"] is False
    for kind in kinds:
        assert set(derived[kind]) == PASS_KEYS, kind
    assert moment(derived["embedding"]["last_success_at"])
    assert derived["eviction"]["failures_in_a_row"] == 0
    assert memories(client, aid)[0]["embedded"] is True


def test_someone_elses_memories_and_unknown_ids_are_not_found(local_client: TestClient) -> None:
    # Local mode's user switched by hand; accounts mode has its own sweep (test_isolation).
    client = local_client
    app: Any = client.app
    mine = new_adventure(client)["id"]
    with session_scope(app.state.runtime.sessions) as session:
        stranger = User(name="stranger")
        session.add(stranger)
        session.flush()
        stranger_id = stranger.id
    local = app.state.local_user_id
    app.state.local_user_id = stranger_id  # act as the other user for a moment
    try:
        theirs = new_adventure(client)["id"]
        memory = write(client, theirs, "A secret of the stranger's story.")
    finally:
        app.state.local_user_id = local

    for method, url, body in (
        ("GET", f"/api/memories/{memory['id']}/source", None),
        ("PATCH", f"/api/memories/{memory['id']}", {"pinned": True}),
        ("DELETE", f"/api/memories/{memory['id']}", None),
    ):
        response = client.request(method, url, json=body)
        refused(response, 404, f"no memory {memory['id']}")
    for suffix in ("memories", "summary", "derived", "scene"):
        refused(client.get(f"/api/adventures/{theirs}/{suffix}"), 404, f"no adventure {theirs}")
    refused(client.get("/api/memories/999999/source"), 404, "no memory 999999")
    refused(client.get("/api/adventures/999999/derived"), 404, "no adventure 999999")
    assert client.get(f"/api/adventures/{mine}/derived").status_code == 200

    app.state.local_user_id = stranger_id
    try:
        assert memories(client, theirs)[0]["pinned"] is False  # untouched
    finally:
        app.state.local_user_id = local


def test_bad_memory_requests_say_what_to_fix(client: TestClient) -> None:
    aid = new_adventure(client)["id"]
    url = f"/api/adventures/{aid}/memories"
    refused(client.post(url, json={"text": "   "}), 400, "'text'", "empty")
    refused(client.post(url, json={"text": "x" * 2_001}), 400, "'text'", "2,000")
    refused(client.post(url, json={}), 400, "text")
    refused(client.post(url, json={"text": "x", "pinned": "maybe"}), 400, "pinned")
    refused(client.post(url, json={"text": "x", "when": 1}), 400, "when")
    refused(client.get(url, params={"include": "everything"}), 400, "'include'", "'all'")

    mine = write(client, aid, "A fact.")
    patch = f"/api/memories/{mine['id']}"
    refused(client.patch(patch, json={}), 400, "'text'", "'pinned'")
    refused(client.patch(patch, json={"text": None}), 400, "'text'", "'pinned'")
    refused(client.patch(patch, json={"text": ""}), 400, "'text'", "empty")
    refused(client.patch(patch, json={"text": "y" * 2_001, "pinned": True}), 400, "2,000")
    assert memories(client, aid)[0]["pinned"] is False  # a refused edit changes nothing


# -- the Story Summary --------------------------------------------------------------------


def test_the_players_summary_is_a_user_version_and_the_adventure_shows_it(
    client: TestClient,
) -> None:
    aid = new_adventure(client)["id"]
    empty = client.get(f"/api/adventures/{aid}/summary").json()
    assert empty == {
        "adventure_id": aid,
        "text": "",
        "current_version_id": None,
        "stale": False,
        "covers_to": -1,
        "next_at": 14,
        "versions": [],
    }

    text = "Tamsin reached Gullreach to relight the Great Lantern; Maren met her."
    response = client.put(f"/api/adventures/{aid}/summary", json={"text": f" {text} "})
    assert response.status_code == 200, response.text
    view = response.json()
    assert view["text"] == text
    assert [(v["trigger"], v["text"]) for v in view["versions"]] == [("user", text)]
    assert view["current_version_id"] == view["versions"][0]["id"]
    [version] = view["versions"]
    assert set(version) == {
        "id",
        "text",
        "trigger",
        "writer",
        "created_at",
        "branch_id",
        "depth",
        "action_id",
        "covers_to",
        "base_id",
        "refreshes_id",
        "stale",
    }
    assert version["writer"] == "player" and version["action_id"] is None
    assert version["base_id"] is None and version["refreshes_id"] is None
    assert version["covers_to"] == -1 and version["stale"] is False
    assert moment(version["created_at"])
    assert client.get(f"/api/adventures/{aid}/summary").json() == view
    assert client.get(f"/api/adventures/{aid}").json()["story_summary"] == text

    client.put(f"/api/adventures/{aid}/summary", json={"text": "Shorter."})
    versions = client.get(f"/api/adventures/{aid}/summary").json()["versions"]
    assert [v["text"] for v in versions] == [text, "Shorter."]  # both stay in the history
    refused(client.put(f"/api/adventures/{aid}/summary", json={}), 400, "text")
    huge = client.put(f"/api/adventures/{aid}/summary", json={"text": "s" * 20_001})
    refused(huge, 400, "'text'", "20,000")


# -- the Scene ----------------------------------------------------------------------------


def test_the_player_sets_the_scene_and_clears_it(client: TestClient) -> None:
    aid = new_adventure(client)["id"]
    url = f"/api/adventures/{aid}/scene"
    derived = client.get(url).json()
    assert derived["source"] == "story cards"

    scene = {"location": "The Great Lantern", "present": ["Old Maren"], "summary": "Night falls."}
    response = client.put(url, json=scene)
    assert response.status_code == 200, response.text
    assert response.json() == scene | {"source": "player"}
    assert client.get(url).json() == scene | {"source": "player"}
    assert client.get(f"/api/adventures/{aid}").json()["scene"]["location"] == "The Great Lantern"

    only = client.put(url, json={"summary": "The tide rises."}).json()
    assert only == {"location": "", "present": [], "summary": "The tide rises.", "source": "player"}

    refused(client.put(url, json={"clear": True, "location": "x"}), 400, "'clear'", "'location'")
    refused(client.put(url, json={}), 400, "'location'", "clear")
    refused(client.put(url, json={"present": [f"n{i}" for i in range(9)]}), 400, "at most 8")
    refused(client.put(url, json={"location": "l" * 201}), 400, "'location'", "200")
    assert client.get(url).json()["summary"] == "The tide rises."  # refusals changed nothing

    cleared = client.put(url, json={"clear": True}).json()
    assert cleared == derived
