"""What the adventures page reads from the list: each adventure's length, as its own view
counts it, following the current branch."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from talekeeper_testkit.double import ModelDouble


def listed(client: TestClient, adventure_id: int) -> dict[str, Any]:
    rows = client.get("/api/adventures").json()
    return next(row for row in rows if row["id"] == adventure_id)


def test_the_list_gives_each_adventure_its_length(client: TestClient, double: ModelDouble) -> None:
    scenario = client.post("/api/adventures", json={"scenario": "lantern-coast"}).json()
    blank = client.post("/api/adventures", json={"title": "Empty page"}).json()
    double.script("The tide turns.", "Gulls wheel overhead.")
    for text in ("look around", "wave"):
        response = client.post(
            f"/api/adventures/{scenario['id']}/actions", json={"type": "do", "text": text}
        )
        assert response.status_code == 200, response.text
    row = listed(client, scenario["id"])
    assert row["length"] == 5  # the opening, then two turns of action and reply
    assert row["length"] == client.get(f"/api/adventures/{scenario['id']}").json()["length"]
    assert row["title"] == "The Lantern Coast" and row["scenario"] == "lantern-coast"
    assert list(row) == ["id", "title", "scenario", "created_at", "updated_at", "length", "role"]
    assert row["role"] == "host"  # your own (docs/sharing.md)
    assert row["created_at"] == scenario["created_at"]
    assert listed(client, blank["id"])["scenario"] is None
    assert listed(client, blank["id"])["length"] == 0


def test_the_length_follows_the_current_branch(client: TestClient, double: ModelDouble) -> None:
    adventure = client.post("/api/adventures", json={"scenario": "lantern-coast"}).json()
    double.script("One.", "Two.")
    for text in ("first", "second"):
        client.post(f"/api/adventures/{adventure['id']}/actions", json={"type": "do", "text": text})
    opening = adventure["head"]["id"]
    fork = client.post(f"/api/actions/{opening}/fork", json={})
    assert fork.status_code == 201, fork.text
    row = listed(client, adventure["id"])
    assert row["length"] == client.get(f"/api/adventures/{adventure['id']}").json()["length"]
    assert row["length"] == 1  # the fork keeps only the opening
