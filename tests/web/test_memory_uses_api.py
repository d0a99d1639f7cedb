"""The turns that used a memory (``GET /api/memories/{id}/uses``): the replies that put it in
their context, in story order, each marked on the current path or not, through the real app
against the loopback model double.
"""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from tests.kit.memory import new_adventure, refused, settle, write

from talekeeper_testkit.double import ModelDouble

KEY = "The brass key opens the lighthouse door."
ASK = "open the lighthouse door with the brass key"


def uses(client: TestClient, memory_id: int) -> dict[str, Any]:
    response = client.get(f"/api/memories/{memory_id}/uses")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def turn(client: TestClient, double: ModelDouble, aid: int, reply: str) -> int:
    double.script(reply)
    response = client.post(f"/api/adventures/{aid}/actions", json={"type": "do", "text": ASK})
    assert response.status_code == 200, response.text
    reply_id: int = response.json()["reply"]["id"]
    return reply_id


def used_ids(client: TestClient, reply_id: int) -> list[int]:
    insights = client.get(f"/api/actions/{reply_id}/insights").json()
    return [m["id"] for m in insights["memories"]["used"]]


def with_a_memory(client: TestClient) -> tuple[int, int]:
    """A new adventure with one hand-written memory, embedded: (adventure id, memory id)."""
    aid = new_adventure(client)["id"]
    memory = write(client, aid, KEY)
    settle(client, aid)  # embedded, so the next turn can retrieve it
    return aid, memory["id"]


def test_a_memory_nobody_used_has_no_uses(client: TestClient) -> None:
    aid, mid = with_a_memory(client)
    assert uses(client, mid) == {"memory_id": mid, "use_count": 0, "uses": []}


def test_each_reply_that_used_a_memory_is_listed_in_story_order(
    client: TestClient, double: ModelDouble
) -> None:
    aid, mid = with_a_memory(client)
    first = turn(client, double, aid, "The key turns. The door opens.")
    second = turn(client, double, aid, "The door creaks shut behind you.")
    assert mid in used_ids(client, first) and mid in used_ids(client, second)

    body = uses(client, mid)
    assert body["memory_id"] == mid and body["use_count"] == 2
    story = client.get(f"/api/adventures/{aid}/actions").json()["actions"]
    by_id = {a["id"]: a for a in story}
    assert [u["id"] for u in body["uses"]] == [first, second]
    for use in body["uses"]:
        assert set(use) == {"id", "depth", "branch_id", "take", "state", "created_at", "on_path"}
        assert use["depth"] == by_id[use["id"]]["depth"]
        assert use["created_at"] == by_id[use["id"]]["created_at"]
        assert use["state"] == "active" and use["on_path"] is True
        assert use["branch_id"] == by_id[use["id"]]["branch_id"]
    # The listing's ``used_by`` and the uses agree.
    listed = client.get(f"/api/adventures/{aid}/memories").json()
    assert next(m for m in listed if m["id"] == mid)["used_by"] == [first, second]


def test_a_retried_or_undone_reply_stays_a_use_but_leaves_the_path(
    client: TestClient, double: ModelDouble
) -> None:
    aid, mid = with_a_memory(client)
    first = turn(client, double, aid, "The key turns. The door opens.")
    double.script("The key sticks; the door holds.")
    retried = client.post(f"/api/adventures/{aid}/retry", json={})
    assert retried.status_code == 200, retried.text
    second = retried.json()["reply"]["id"]
    assert mid in used_ids(client, second)

    body = uses(client, mid)
    assert [(u["id"], u["state"], u["on_path"]) for u in body["uses"]] == [
        (first, "take", False),
        (second, "active", True),
    ]
    assert body["uses"][0]["depth"] == body["uses"][1]["depth"]  # two takes of one slot
    assert body["use_count"] == 2

    assert client.post(f"/api/adventures/{aid}/undo").status_code == 200
    after = uses(client, mid)["uses"]
    assert [(u["id"], u["on_path"]) for u in after] == [(first, False), (second, False)]
    assert client.post(f"/api/adventures/{aid}/redo").status_code == 200
    assert [u["on_path"] for u in uses(client, mid)["uses"]] == [False, True]


def test_uses_of_an_unknown_or_deleted_memory(client: TestClient, double: ModelDouble) -> None:
    aid, mid = with_a_memory(client)
    reply = turn(client, double, aid, "The key turns. The door opens.")
    refused(client.get("/api/memories/987654/uses"), 404, "There is no memory 987654.")
    # A deleted memory is history: its record of uses can still be read.
    assert client.delete(f"/api/memories/{mid}").status_code == 204
    assert [u["id"] for u in uses(client, mid)["uses"]] == [reply]
