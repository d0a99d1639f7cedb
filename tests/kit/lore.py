"""Other tools' lore through the JSON API: an adventure to import into, the import (a
preview with ``dry_run``), and the adventure's cards as the API lists them."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from tests.kit.web import OCTETS


def adventure(client: TestClient, title: str = "Vale") -> int:
    made = client.post("/api/adventures", json={"title": title})
    assert made.status_code == 201, made.text
    return int(made.json()["id"])


def import_lore(client: TestClient, aid: int, data: bytes, name: str, **params: Any) -> Any:
    return client.post(
        f"/api/adventures/{aid}/lore/import",
        params={"filename": name, **params},
        content=data,
        headers=OCTETS,
    )


def cards_of(client: TestClient, aid: int) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = client.get(f"/api/adventures/{aid}/cards").json()
    return listed
