"""Insights through the API: the keys a snapshot is answered with, key for key, whether it
was written now (a turn's reply, the read of it, a dry run) or stored by an earlier version
(answered as stored), and one that is not a snapshot at all."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import text

from talekeeper.services.prompt.insights import INSIGHTS_VERSION
from talekeeper.storage.db import session_scope
from talekeeper_testkit.double import ModelDouble

# A snapshot's keys, in order: a reply's end with its ``action_id``, a dry run's without.
KEYS = [
    "version",
    "sections",
    "memories",
    "knowledge",
    "cards",
    "history",
    "budget",
    "model",
    "mode",
    "tokenizer",
    "timings",
    "tokens",
    "layout",
    "repairs",
    "retry_of",
    "branch_id",
    "dry_run",
    "state",
    "witness",
]
SECTION_KEYS = ["name", "title", "tokens", "text", "reason", "cut"]
BUDGETED = {"memories", "story_cards", "story_cards_new", "knowledge", "current_state"}
CARD_KEYS = ["id", "name", "type", "keyword", "where", "always_on"]
SECONDARY_KEYS = ["secondary_rule", "secondary", "secondary_keywords"]
# Written by a version before ``version``, ``layout`` and ``knowledge`` (in the order the
# writer keeps), with a key of its own.
OLD = {
    "sections": [{"name": "history", "title": "Recent history", "tokens": 12, "text": "x"}],
    "memories": {"used": [], "considered": 0, "note": "off"},
    "cards": [{"id": 1, "name": "Mara", "keyword": "mara", "where": "story"}],
    "budget": {},
    "model": "old-narrator",
    "timings": {"build_ms": 1.5},
    "tokens": {"prompt": 40, "reply": 9},
    "retry_of": None,
    "branch_id": 1,
    "written_by": "0.0.9",
}


def _adventure(client: TestClient) -> int:
    aid: int = client.post("/api/adventures", json={"title": "Quay"}).json()["id"]
    cards = [
        {"type": "character", "name": "Mara", "keywords": ["mara"], "entry": "A smuggler."},
        {
            "type": "lore",
            "name": "Storm",
            "keywords": ["sea"],
            "secondary_keywords": ["storm"],
            "secondary_rule": "all",
            "entry": "Storms come from the west.",
        },
        {"type": "other", "name": "Rules", "entry": "Nobody swims.", "always_on": True},
    ]
    for card in cards:
        assert client.post(f"/api/adventures/{aid}/cards", json=card).status_code == 201
    return aid


def _reply(client: TestClient, double: ModelDouble, aid: int, words: str) -> dict[str, Any]:
    double.script("The quay is quiet.")
    answer = client.post(f"/api/adventures/{aid}/actions", json={"type": "do", "text": words})
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def _store(client: TestClient, action_id: int, data: str) -> None:
    sessions = client.app.state.runtime.sessions  # type: ignore[attr-defined]
    with session_scope(sessions) as session:
        statement = text("UPDATE insights SET data = :d WHERE action_id = :a")
        assert session.execute(statement, {"d": data, "a": action_id}).rowcount == 1


def test_a_snapshot_written_now_is_answered_with_its_keys_and_no_other(
    client: TestClient, double: ModelDouble
) -> None:
    aid = _adventure(client)
    body = _reply(client, double, aid, "ask Mara about the sea in the storm")
    sent = body["insights"]
    assert list(sent) == [*KEYS, "action_id"]
    assert sent["version"] == INSIGHTS_VERSION and sent["action_id"] == body["reply"]["id"]
    read = client.get(f"/api/actions/{sent['action_id']}/insights").json()
    assert list(read) == list(sent)
    assert "save_ms" in sent["timings"] and "save_ms" not in read["timings"]  # after the write
    assert {**read, "timings": sent["timings"]} == sent
    for section in read["sections"]:  # the passages are the Knowledge section's only
        # a budget of its own: the sections with one, when they are in the context
        own = section["name"] in BUDGETED and bool(section["text"])
        extra = ["budget"] if own else []
        extra += ["passages"] if section["name"] == "knowledge" else []
        assert list(section) == SECTION_KEYS + extra
    assert "story_cards" in {s["name"] for s in read["sections"] if "budget" in s}
    cards = {c["name"]: c for c in read["cards"]}
    assert list(cards["Rules"]) == CARD_KEYS and cards["Rules"]["keyword"] is None
    assert list(cards["Mara"]) == CARD_KEYS
    assert list(cards["Storm"]) == CARD_KEYS + SECONDARY_KEYS
    assert cards["Storm"]["secondary"] == ["storm"]
    layout = read["layout"]
    assert list(layout) == ["name", "top_digest", "history_start_depth", "floating", "cards_held"]
    assert layout["name"] == "cache"
    assert all(
        list(s) == ["at_depth", "digest", "actions_before_end"] for s in layout["floating"].values()
    )
    assert list(read["tokens"]) == [
        "prompt",
        "reply",
        "prompt_evaluated",
        "prompt_cached",
        "prompt_evaluated_by",
    ]
    dry = client.post(f"/api/adventures/{aid}/insights/dry-run", json={"text": "wait"}).json()
    assert list(dry) == KEYS and dry["dry_run"] is True  # a dry run names no reply
    assert client.patch("/api/settings", json={"context_layout": "classic"}).status_code == 200
    classic = _reply(client, double, aid, "wait")["insights"]
    assert classic["layout"] == {"name": "classic"}
    names = [s["name"] for s in classic["sections"]]
    assert "story_cards_new" not in names  # the ``cache`` layout's only


def test_a_snapshot_stored_by_an_earlier_version_is_answered_as_stored(
    client: TestClient, double: ModelDouble
) -> None:
    aid = _adventure(client)
    reply = _reply(client, double, aid, "look")["reply"]
    _store(client, reply["id"], json.dumps(OLD))
    answer = client.get(f"/api/actions/{reply['id']}/insights")
    assert answer.status_code == 200, answer.text
    assert answer.json() == {**OLD, "action_id": reply["id"]}  # no key added, none dropped
    assert [key for key in answer.json() if key != "action_id"] == list(OLD)


def test_a_stored_text_that_is_not_a_snapshot_has_no_insights(
    client: TestClient, double: ModelDouble
) -> None:
    aid = _adventure(client)
    reply = _reply(client, double, aid, "look")["reply"]
    for junk in ("{not json", "[1, 2]", json.dumps({"sections": "all of them"})):
        _store(client, reply["id"], junk)
        answer = client.get(f"/api/actions/{reply['id']}/insights")
        assert answer.status_code == 404, answer.text
        assert "not in the Insights format" in answer.json()["error"]["message"]
