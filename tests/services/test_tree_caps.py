"""The caps on one adventure: ``MAX_BRANCHES`` on fork, ``MAX_ACTIONS`` on every new action
row (a player's action with room for its reply, a reply, a retry's take), each refused with
a 409 that names the cap and what to do, before anything is written or generated.

The adventures are brought to the edge of a cap by writing rows straight into the migrated
database (as an import would: the adventure's count of rows unknown), then played through
the API on the model double.
"""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import insert, select, update

from talekeeper.core.clock import utcnow
from talekeeper.services.common import limits
from talekeeper.storage.db import session_scope
from talekeeper.storage.models import Action, Adventure, Branch
from talekeeper_testkit.double import ModelDouble


def runtime(client: TestClient) -> Any:
    return client.app.state.runtime  # type: ignore[attr-defined]


def new_game(client: TestClient) -> int:
    response = client.post("/api/adventures", json={"scenario": "lantern-coast"})
    assert response.status_code == 201, response.text
    adventure: int = response.json()["id"]
    return adventure


def fill_rows(client: TestClient, adventure: int, leave: int) -> None:
    """Removed rows up to ``MAX_ACTIONS - leave``, and the adventure's count forgotten."""
    rt = runtime(client)
    with session_scope(rt.sessions) as session:
        have = len(session.scalars(select(Action.id).where(Action.adventure_id == adventure)).all())
        branch = session.scalar(
            select(Adventure.current_branch_id).where(Adventure.id == adventure)
        )
        now = utcnow()
        rows = [
            {
                "adventure_id": adventure,
                "branch_id": branch,
                "depth": 1_000_000 + i,
                "type": "do",
                "text": "gone",
                "state": "removed",
                "take": 1,
                "created_at": now,
            }
            for i in range(limits.MAX_ACTIONS - leave - have)
        ]
        session.execute(insert(Action), rows)
        session.execute(update(Adventure).where(Adventure.id == adventure).values(action_rows=None))


def turn(client: TestClient, adventure: int, text: str) -> Any:
    return client.post(f"/api/adventures/{adventure}/actions", json={"type": "do", "text": text})


def length(client: TestClient, adventure: int) -> int:
    count: int = client.get(f"/api/adventures/{adventure}").json()["length"]
    return count


def narrations(double: ModelDouble) -> int:
    """Requests to the narrator (the background work here asks only for embeddings)."""
    return sum(
        1
        for r in double.requests
        if isinstance(r.body, dict) and r.body.get("model") == "double-narrator"
    )


def refused(response: Any, *words: str) -> None:
    assert response.status_code == 409, response.text
    error = response.json()["error"]
    assert error["code"] == "limit_reached"
    assert all(word in error["message"] for word in words), error["message"]


def test_a_player_action_needs_room_for_its_reply_and_a_retry_for_its_take(
    app_client: TestClient, double: ModelDouble
) -> None:
    client = app_client
    adventure = new_game(client)
    fill_rows(client, adventure, leave=3)
    assert turn(client, adventure, "light the lamp").status_code == 200  # 2 rows: 1 left
    before, asked = length(client, adventure), narrations(double)
    refused(turn(client, adventure, "climb the stair"), "50,000", "new adventure")
    assert length(client, adventure) == before  # the action was not saved
    assert narrations(double) == asked  # and no reply was generated for it
    retry = client.post(f"/api/adventures/{adventure}/retry")
    assert retry.status_code == 200, retry.text  # the last row: a take of the reply
    assert narrations(double) == asked + 1
    refused(client.post(f"/api/adventures/{adventure}/retry"), "50,000")
    assert narrations(double) == asked + 1  # refused before the model was asked
    takes = client.get(f"/api/adventures/{adventure}/takes").json()
    assert len(takes["takes"]) == 2


def test_the_count_follows_every_row_written_after_it_is_known(
    app_client: TestClient, double: ModelDouble
) -> None:
    client = app_client
    adventure = new_game(client)
    fill_rows(client, adventure, leave=6)
    for text in ("one", "two", "three"):  # 6 rows: the count is exact, not re-read
        assert turn(client, adventure, text).status_code == 200
    with session_scope(runtime(client).sessions) as session:
        stored = session.scalar(select(Adventure.action_rows).where(Adventure.id == adventure))
        actual = len(
            session.scalars(select(Action.id).where(Action.adventure_id == adventure)).all()
        )
    assert stored == actual == limits.MAX_ACTIONS
    refused(turn(client, adventure, "four"), "50,000")
    refused(client.post(f"/api/adventures/{adventure}/retry"), "50,000")


def test_a_continue_at_the_cap_is_refused_before_the_model_is_asked(
    app_client: TestClient, double: ModelDouble
) -> None:
    client = app_client
    adventure = new_game(client)
    fill_rows(client, adventure, leave=0)
    before, asked = length(client, adventure), narrations(double)
    cont = client.post(f"/api/adventures/{adventure}/actions", json={"type": "continue"})
    refused(cont, "50,000")
    assert narrations(double) == asked  # no reply was generated only to be refused at save
    assert length(client, adventure) == before


def test_a_fork_past_the_branch_cap_is_refused(app_client: TestClient) -> None:
    client = app_client
    adventure = new_game(client)
    rt = runtime(client)
    with session_scope(rt.sessions) as session:
        root = session.scalar(select(Adventure.current_branch_id).where(Adventure.id == adventure))
        now = utcnow()
        extra = [
            {
                "adventure_id": adventure,
                "parent_id": root,
                "fork_depth": 1,
                "name": f"b{i}",
                "created_at": now,
            }
            for i in range(limits.MAX_BRANCHES - 2)
        ]
        session.execute(insert(Branch), extra)
    head = client.get(f"/api/adventures/{adventure}/actions").json()["actions"][-1]["id"]
    last = client.post(f"/api/actions/{head}/fork", json={})
    assert last.status_code == 201, last.text  # the 2,000th branch
    before = client.get(f"/api/adventures/{adventure}/tree").json()
    assert len(before["branches"]) == limits.MAX_BRANCHES
    refused(client.post(f"/api/actions/{head}/fork", json={}), "2,000", "switch")
    after = client.get(f"/api/adventures/{adventure}/tree").json()
    assert len(after["branches"]) == limits.MAX_BRANCHES
    assert after["current_branch_id"] == before["current_branch_id"]
