"""The knowledge library through the JSON API: a setting bible to upload (``BIBLE``) and a
character card that is no text (``card_png``), the upload, the list of sources, a source
once it is no longer indexing, and a refusal in the app's error format."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

from fastapi.testclient import TestClient
from tests.kit.web import OCTETS
from tests.services.library import builders

BIBLE = b"""# The Salt Coast

## Places

### Gullhaven

Gullhaven is a fishing town of slate roofs. Its harbour freezes every third winter.

### The Drowned Library

Below the cliffs of Marrow Point lies the Drowned Library, a vault of green copper doors
that opens only at the lowest tide of the year. The archivist Ysolde keeps its keys.

## People

### Captain Orrin

Orrin commands the cutter Wren and smuggles lamp oil past the customs house.
"""


def upload(client: TestClient, data: bytes, name: str) -> Any:
    return client.post("/api/library", params={"filename": name}, content=data, headers=OCTETS)


def refused(response: Any, status: int, code: str, *words: str) -> str:
    """Our error format, the status and code, and a message holding ``words``."""
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code, error
    for word in words:
        assert word in error["message"], error["message"]
    return str(error["message"])


def listed(client: Any) -> list[dict[str, Any]]:
    answer = client.get("/api/library")
    assert answer.status_code == 200, answer.text
    return answer.json()["sources"]  # type: ignore[no-any-return]


def settled(client: TestClient, source_id: int, timeout: float = 20.0) -> dict[str, Any]:
    """The source once its state is no longer ``indexing``."""
    deadline = time.monotonic() + timeout
    while True:
        got: dict[str, Any] = client.get(f"/api/library/{source_id}").json()
        if got["state"] != "indexing":
            return got
        assert time.monotonic() < deadline, got
        time.sleep(0.05)


def card_png() -> bytes:
    """A character card: a small image whose tEXt chunk holds pages of base64 (which,
    decoded as text, is almost all letters)."""
    card = {"spec": "chara_card_v2", "data": {"name": "Ysolde", "description": "Keeper. " * 800}}
    return builders.png({"chara": base64.b64encode(json.dumps(card).encode()).decode()})
