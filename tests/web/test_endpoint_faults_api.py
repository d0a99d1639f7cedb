"""Whatever a model endpoint sends, health, the model list, the connection test and a turn
answer with a sentence (a 200 report, or a turn's 502/504 with the action saved), never a
crash; a redirect is never followed; and a URL typed into the settings, not saved, never
gets its page's text shown back."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from tests.conftest import LOCAL, make_settings
from tests.providers.rogue import BEHAVIOURS, SECRET, RogueEndpoint
from tests.web.sse import parse_events

from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble

STREAM = {"Accept": "text/event-stream"}


def _app(tmp_path: Path, url: str) -> TestClient:
    settings = make_settings(
        tmp_path,
        endpoint_url=url,
        model="double-narrator",
        embedding_model="double-embed",
        summary_model="extractive",
        timeout="3",
    )
    return TestClient(create_app(settings), base_url=LOCAL)


def _turns_fail_with_the_action_saved(client: TestClient, url: str) -> None:
    adventure = client.post("/api/adventures", json={"title": "Faults"}).json()
    path = f"/api/adventures/{adventure['id']}/actions"
    plain = client.post(path, json={"type": "do", "text": "You light the lamp."})
    assert plain.status_code in (502, 504), plain.text
    error = plain.json()["error"]
    assert error["code"].startswith("provider") and url in error["message"]
    assert "Your action is saved" in error["message"]
    with client.stream("POST", path, json={"type": "say", "text": "Hello?"}, headers=STREAM) as r:
        events = parse_events(r.iter_lines())
    assert r.status_code == 200 and events[-1][0] == "error", events
    assert events[-1][1]["action_saved"] is True and events[-1][1]["retryable"] is True
    story = client.get(path).json()
    assert [a["text"] for a in story["actions"]][-2:] == ["You light the lamp.", "Hello?"]


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_a_misbehaving_saved_endpoint_is_reported_everywhere_never_a_crash(
    tmp_path: Path, behaviour: str
) -> None:
    with RogueEndpoint(behaviour) as rogue, _app(tmp_path, rogue.url) as client:
        health = client.get("/api/health")
        assert health.status_code == 200 and health.json()["status"] == "degraded"
        assert rogue.url in health.json()["narrator"]["error"]
        for listed in (
            client.get("/api/settings/models"),
            client.post("/api/settings/models", json={"endpoint_url": rogue.url}),
            client.post("/api/settings/models", json={"timeout": 2}),
        ):
            assert listed.status_code == 200 and listed.json()["models"] == []
            assert rogue.url in listed.json()["error"]
        tested = client.post("/api/settings/test-connection")
        assert tested.status_code == 200 and tested.json()["ok"] is False
        assert rogue.url in tested.json()["narrator"]["error"]
        assert rogue.url in tested.json()["embedding"]["error"]
        _turns_fail_with_the_action_saved(client, rogue.url)


def test_a_redirect_to_another_host_is_never_followed(tmp_path: Path, double: ModelDouble) -> None:
    with (
        RogueEndpoint("redirect-away", away=double.url) as rogue,
        _app(tmp_path, rogue.url) as client,
    ):
        listed = client.get("/api/settings/models").json()
        assert "redirect" in listed["error"] and f"probably {double.url})" in listed["error"]
        assert client.get("/api/health").json()["narrator"]["ok"] is False
        assert client.post("/api/settings/test-connection").json()["ok"] is False
        _turns_fail_with_the_action_saved(client, rogue.url)
    assert double.requests == []


def test_a_url_being_tried_never_shows_what_its_page_says(
    client: TestClient, double: ModelDouble
) -> None:
    with RogueEndpoint("error-page") as rogue:
        listed = client.post("/api/settings/models", json={"endpoint_url": rogue.url})
        tested = client.post("/api/settings/test-connection", json={"endpoint_url": rogue.url})
    for answer in (listed, tested):
        assert answer.status_code == 200 and "HTTP 500" in answer.text
        assert SECRET not in answer.text and "Router login" not in answer.text
    assert tested.json()["narrator"]["error"].endswith("then try again.")
    calls = client.get("/api/ai-calls").text
    assert "HTTP 500" in calls and SECRET not in calls


def test_the_saved_endpoint_still_shows_its_own_error_text(tmp_path: Path) -> None:
    with RogueEndpoint("error-page") as rogue, _app(tmp_path, rogue.url) as client:
        assert SECRET in client.get("/api/settings/models").json()["error"]
        same = client.post("/api/settings/models", json={"endpoint_url": rogue.url + "/"})
        assert SECRET in same.json()["error"]  # the saved endpoint, spelt with a slash
