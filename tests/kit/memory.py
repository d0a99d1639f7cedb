"""The memory system through the app: waiting until the background memory work has run
(``idle`` on the app's own loop, ``settle`` through the API), a new adventure, and the
player's memories written and listed through the JSON API, with a refusal's message."""

from __future__ import annotations

import time
from typing import Any, Protocol

from fastapi.testclient import TestClient


class Reader(Protocol):
    """Whatever reads the API: the test client, or one signed in as an account (``As``)."""

    def get(self, url: str, **kwargs: Any) -> Any: ...


def idle(client: TestClient) -> None:
    client.portal.call(client.app.state.runtime.memory.idle)  # type: ignore[union-attr]


def memories(client: Reader, adventure: int, **params: str) -> list[dict[str, Any]]:
    response = client.get(f"/api/adventures/{adventure}/memories", params=params)
    assert response.status_code == 200, response.text
    rows: list[dict[str, Any]] = response.json()
    return rows


KINDS = ("memory", "summary", "embedding", "eviction", "world", "cards")
SETTLE_SECONDS = 30.0


def new_adventure(client: TestClient) -> dict[str, Any]:
    response = client.post("/api/adventures", json={"scenario": "lantern-coast"})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def settle(client: Reader, aid: int) -> dict[str, Any]:
    """Wait until no background work waits or runs for the adventure."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        derived: dict[str, Any] = client.get(f"/api/adventures/{aid}/derived").json()
        if not derived["pending"] and all(derived[k]["state"] != "running" for k in KINDS):
            assert all(derived[k]["state"] == "idle" for k in KINDS), derived
            return derived
        assert time.monotonic() < deadline, f"background work did not finish: {derived}"
        time.sleep(0.05)


def write(client: TestClient, aid: int, text: str, **extra: Any) -> dict[str, Any]:
    response = client.post(f"/api/adventures/{aid}/memories", json={"text": text, **extra})
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    return body


def refused(response: Any, status: int, *words: str) -> str:
    assert response.status_code == status, response.text
    message: str = response.json()["error"]["message"]
    for word in words:
        assert word in message, message
    return message
