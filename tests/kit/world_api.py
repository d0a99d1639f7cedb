"""Playing a turn and adding a world event through the JSON API, each checked to succeed,
and the world as the API shows it without ids: what the world's tests (``test_world_api``,
``test_exchange_world``, ``test_world_backlog``) do most; and the app with a world model
on the double (``with_world_model``: ``test_world_model``, ``test_card_drafting_model``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from tests.conftest import LOCAL, double_settings

from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble

WORLD = "double-world"  # the world model the double serves beside its own


def world_double() -> Iterator[ModelDouble]:
    """The double, serving a world model beside its own."""
    models = ("double-narrator", "double-embed", "double-summary", WORLD)
    with ModelDouble(models=models) as server:
        yield server


def with_world_model(tmp_path: Path, double: ModelDouble) -> Iterator[TestClient]:
    """The app with ``WORLD`` as its world model (memories by the extractive writer)."""
    settings = double_settings(tmp_path, double, world_model=WORLD, summary_model="extractive")
    with TestClient(create_app(settings), base_url=LOCAL) as test_client:
        yield test_client


def turn(client: TestClient, aid: int, text: str) -> dict[str, Any]:
    """A ``do`` turn of adventure ``aid``: its answer (the action and the reply)."""
    response = client.post(f"/api/adventures/{aid}/actions", json={"type": "do", "text": text})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def event(client: TestClient, aid: int, **body: Any) -> dict[str, Any]:
    """A player's event on the head of adventure ``aid``, as the API answers it."""
    response = client.post(f"/api/adventures/{aid}/world/events", json=body)
    assert response.status_code == 201, response.text
    answer: dict[str, Any] = response.json()
    return answer


def dry_run(client: TestClient, aid: int, kind: str, text: str) -> dict[str, Any]:
    """The Insights of a dry run of a ``kind`` turn saying ``text`` (nothing is written)."""
    response = client.post(
        f"/api/adventures/{aid}/insights/dry-run", json={"type": kind, "text": text}
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def world_of(client: TestClient, aid: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The state at the head without ids, and the path's events without ids."""
    state = client.get(f"/api/adventures/{aid}/world").json()
    events = client.get(f"/api/adventures/{aid}/world/events").json()
    plain = {
        "location": (state["location"] or {}).get("name"),
        "present": [r["name"] for r in state["present"]],
        "inventory": [r["name"] for r in state["inventory"]],
        "time": state["time"],
        "quests": state["quests"],
        "entities": sorted((e["name"], e["kind"], e["status"]) for e in state["entities"]),
    }
    return plain, [{k: v for k, v in e.items() if k not in ("id", "action_id")} for e in events]


def untimed(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Exported rows without the time each was written."""
    return [{k: v for k, v in row.items() if k != "created_at"} for row in rows]
