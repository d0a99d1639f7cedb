"""An imported adventure keeps what the next turn needs: each reply whose Insights snapshot
recorded a ``cache`` placement gets its placement record, with the cards it held named by
the new adventure's ids, so the first turn after an import keeps in place what the next
turn of the exported adventure would have (the way test_context_layout_turns checks it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import text

from talekeeper.storage.db import session_scope
from talekeeper_testkit.double import ModelDouble

Turn = Callable[[int, str], dict[str, Any]]
RECORDS = (
    "SELECT a.depth, p.version, p.history_start, p.top_digest, p.floating, p.cards_held "
    "FROM context_placements p JOIN actions a ON a.id = p.action_id "
    "WHERE a.adventure_id = :a ORDER BY a.depth"
)


def _turns(client: TestClient, double: ModelDouble) -> Turn:
    def turn(aid: int, words: str) -> dict[str, Any]:
        double.script("The wind moves the reeds.")
        answer = client.post(f"/api/adventures/{aid}/actions", json={"type": "do", "text": words})
        assert answer.status_code == 200, answer.text
        insights: dict[str, Any] = answer.json()["insights"]
        return insights

    return turn


def _records(client: TestClient, aid: int) -> list[tuple[Any, ...]]:
    sessions = client.app.state.runtime.sessions  # type: ignore[attr-defined]
    with session_scope(sessions) as session:
        return [tuple(row) for row in session.execute(text(RECORDS), {"a": aid})]


def _card_ids(client: TestClient, aid: int) -> dict[str, int]:
    cards = client.get(f"/api/adventures/{aid}/cards").json()
    return {card["name"]: card["id"] for card in cards}


def _cards(insights: dict[str, Any]) -> list[tuple[str, str]]:
    return [(card["name"], card["where"]) for card in insights["cards"]]


def _without_ids(layout: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in layout.items() if key != "cards_held"}


def test_the_first_turn_after_an_import_keeps_the_placement_of_the_exported_game(
    client: TestClient, double: ModelDouble
) -> None:
    turn = _turns(client, double)
    aid = client.post("/api/adventures", json={"title": "Lamps"}).json()["id"]
    for name in ("Harbour", "Lantern"):
        card = {"type": "lore", "name": name, "keywords": [name.lower()], "entry": f"The {name}."}
        assert client.post(f"/api/adventures/{aid}/cards", json=card).status_code == 201
    assert _cards(turn(aid, "light the lantern")) == [("Lantern", "input")]
    for n in range(4):  # the keyword leaves the six actions that fire a card
        later = turn(aid, f"walk on {n}")
    assert _cards(later) == [("Lantern", "earlier")]

    exported = client.get(f"/api/adventures/{aid}/export")
    assert exported.status_code == 200, exported.text
    made = client.post("/api/adventures/import", json=exported.json())
    assert made.status_code == 201, made.text
    copy = made.json()["id"]
    # A record per reply, as the game left them; the held card is the copy's own card.
    ids, copied_ids = _card_ids(client, aid), _card_ids(client, copy)
    assert ids["Lantern"] != copied_ids["Lantern"]
    records = _records(client, aid)
    assert len(records) == 5
    held = {f"[{ids[n]}]": f"[{copied_ids[n]}]" for n in ids} | {"[]": "[]"}
    assert _records(client, copy) == [(*row[:5], held[row[5]]) for row in records]

    kept = turn(copy, "walk on 4")
    assert _cards(kept) == [("Lantern", "earlier")]
    assert kept["layout"]["history_start_depth"] == later["layout"]["history_start_depth"]
    spot = later["layout"]["floating"]["story_cards"]["at_depth"]
    assert kept["layout"]["floating"]["story_cards"]["at_depth"] == spot
    assert kept["layout"]["cards_held"] == [copied_ids["Lantern"]]
    # Exactly what the exported game's next turn does.
    there = turn(aid, "walk on 4")
    assert _cards(there) == _cards(kept)
    assert _without_ids(there["layout"]) == _without_ids(kept["layout"])


def test_an_import_without_cache_placements_writes_no_record(
    client: TestClient, double: ModelDouble
) -> None:
    turn = _turns(client, double)
    assert client.patch("/api/settings", json={"context_layout": "classic"}).status_code == 200
    aid = client.post("/api/adventures", json={"title": "Classic"}).json()["id"]
    assert turn(aid, "look around")["layout"] == {"name": "classic"}
    made = client.post(
        "/api/adventures/import", json=client.get(f"/api/adventures/{aid}/export").json()
    )
    assert made.status_code == 201, made.text
    assert _records(client, made.json()["id"]) == []
