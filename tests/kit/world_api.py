"""Playing a turn and adding a world event through the JSON API, each checked to succeed:
what the world's tests (``test_world_api``, ``test_exchange_world``) do most."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient


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
