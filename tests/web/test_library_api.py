"""The knowledge library over the JSON API: upload, background vectors, search, attach, and
the passage that reaches the narrator with its scores and place (Insights and dry run)."""

from __future__ import annotations

import time
from typing import Any

from fastapi.testclient import TestClient
from tests.double.server import ModelDouble

OCTETS = {"Content-Type": "application/octet-stream"}

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


def wait_ready(client: TestClient, source_id: int, timeout: float = 20.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        got = client.get(f"/api/library/{source_id}").json()
        if got["state"] == "ready" or time.monotonic() > deadline:
            return got  # type: ignore[no-any-return]
        time.sleep(0.1)


def adventure(client: TestClient) -> int:
    made = client.post("/api/adventures", json={"title": "Salt"})
    assert made.status_code == 201, made.text
    return int(made.json()["id"])


def test_an_uploaded_bible_is_indexed_attached_and_reaches_the_narrator(
    client: TestClient, double: ModelDouble
) -> None:
    made = upload(client, BIBLE, "salt-coast.md")
    assert made.status_code == 201, made.text
    source = made.json()
    assert source["title"] == "The Salt Coast" and source["kind"] == "md"
    assert source["passage_count"] >= 3
    ready = wait_ready(client, source["id"])
    assert ready["state"] == "ready", ready
    assert ready["embedded"] == ready["passage_count"] and ready["progress"] == 1.0
    found = client.get("/api/library/search", params={"q": "copper doors vault"}).json()
    assert found["hits"][0]["heading_path"][-1] == "The Drowned Library"
    aid = adventure(client)
    put = client.put(f"/api/adventures/{aid}/knowledge", json={"source_ids": [source["id"]]})
    assert put.status_code == 200, put.text
    assert [s["id"] for s in put.json()["sources"]] == [source["id"]]
    dry = client.post(
        f"/api/adventures/{aid}/insights/dry-run",
        json={"type": "do", "text": "I search for the Drowned Library and its copper doors"},
    )
    assert dry.status_code == 200, dry.text
    insights = dry.json()
    section = next(s for s in insights["sections"] if s["name"] == "knowledge")
    assert "Drowned Library" in section["text"]
    assert section["passages"][0]["location"].endswith("The Drowned Library")
    used = insights["knowledge"]["used"][0]
    assert used["lexical_score"] > 0 and used["semantic_score"] is not None
