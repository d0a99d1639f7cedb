"""The issue's exit run: 30 turns of a shipped scenario through the API, with retry, take
switching, undo/redo, edit, fork and branch switching — against the loopback double and
against the real embedded model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.conftest import LOCAL, make_settings

from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble

ACTIONS = [
    ("do", "ask Maren who barred the door"),
    ("say", "We need the flame from the shrine"),
    ("do", "climb the stone steps"),
    ("story", "Tamsin's lantern gutters in the wind."),
    ("do", "knock on the keepers' door"),
    ("continue", ""),
]


def play_thirty(client: TestClient, scenario: str) -> dict[str, Any]:
    adventure = client.post("/api/adventures", json={"scenario": scenario}).json()["id"]
    base = f"/api/adventures/{adventure}"
    turns = 0

    def turn(index: int) -> dict[str, Any]:
        nonlocal turns
        type_, text = ACTIONS[index % len(ACTIONS)]
        response = client.post(f"{base}/actions", json={"type": type_, "text": text})
        assert response.status_code == 200, response.text
        turns += 1
        return response.json()

    first = None
    for i in range(30):
        body = turn(i)
        reply = body["reply"]
        assert reply["text"].strip()
        if i == 4:
            retried = client.post(f"{base}/retry").json()["reply"]
            assert retried["take"] == 2 and retried["depth"] == reply["depth"]
            switched = client.post(f"{base}/switch-take", json={"take": 1}).json()
            assert switched["head"]["id"] == reply["id"]
        if i == 8:
            undone = client.post(f"{base}/undo").json()["undone"]
            assert client.post(f"{base}/redo").json()["head"]["id"] == undone["id"]
        if i == 12:
            client.patch(f"/api/actions/{reply['id']}", json={"text": "The door opens inward."})
        if i == 15:
            first = reply
            fork = client.post(f"/api/actions/{reply['id']}/fork", json={"name": "Other way"})
            assert fork.status_code == 201
        if i == 25:
            main = client.get(f"{base}/tree").json()["branches"][0]["id"]
            client.post(f"{base}/switch-branch", json={"branch_id": main})
        insights = client.get(f"/api/actions/{reply['id']}/insights").json()
        assert all(s["tokens"] >= 0 for s in insights["sections"])
        names = {s["name"] for s in insights["sections"] if s["tokens"] > 0}
        assert {"ai_instructions", "plot_essentials", "history"} <= names
    tree = client.get(f"{base}/tree").json()
    assert first is not None and len(tree["branches"]) == 2
    state = client.get(base).json()
    story = client.get(f"{base}/actions", params={"limit": 500}).json()["actions"]
    assert "The door opens inward." in [a["text"] for a in story]
    return {"turns": turns, "state": state, "story": story, "tree": tree}


def test_thirty_turns_against_the_double(client: TestClient, double: ModelDouble) -> None:
    result = play_thirty(client, "ashford-manor")
    assert result["turns"] == 30
    # Main branch: 1 opening + 16 turns (action + reply, continues have no action) ...
    assert result["state"]["current_branch_id"] == result["tree"]["branches"][0]["id"]
    narrations = [
        r
        for r in double.requests
        if r.path == "/v1/chat/completions" and (r.body or {}).get("model") == "double-narrator"
    ]
    assert len(narrations) == 31  # 30 turns and one retry


@pytest.mark.model
def test_thirty_turns_against_the_embedded_model(tmp_path: Path) -> None:
    settings = make_settings(
        tmp_path, context_tokens="1024", reply_tokens="24", embedding_model="none"
    )
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        result = play_thirty(client, "lantern-coast")
        calls = client.get("/api/ai-calls", params={"kind": "narration", "limit": 100}).json()
    assert result["turns"] == 30
    assert len(calls) == 31 and {c["status"] for c in calls} == {"ok"}
    assert {c["model"] for c in calls} == {"embedded"}
