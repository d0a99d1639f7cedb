"""The JSON API over a real migrated database and the loopback model double."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from tests.conftest import LOCAL, MODES, each_mode, make_settings

from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble, closed_port_url


@pytest.fixture(params=MODES)
def client(
    request: pytest.FixtureRequest, tmp_path: Path, double: ModelDouble
) -> Iterator[TestClient]:
    """Every test here runs in local mode and, signed in, in accounts mode."""
    yield from each_mode(request.param, tmp_path, double)


def test_health_is_green_against_a_working_endpoint(client: TestClient) -> None:
    body = client.get("/api/health").json()
    assert body["status"] == "ok"
    head = client.app.state.runtime.schema_head  # type: ignore[attr-defined]
    assert body["database"]["ok"] and body["database"]["revision"] == head is not None
    assert body["models"] == {
        "narrator": "double-narrator",
        "summary": "double-summary",
        "embedding": "double-embed",
        "world": "rules",  # no world model: the rules alone read the story
    }
    assert body["narrator"]["ok"] and body["embedding"]["ok"]
    assert body["placeholder_narrator"] is False


def test_test_connection_generates_real_text_and_an_embedding(
    client: TestClient, double: ModelDouble
) -> None:
    double.script("Once, in the salt marshes, a lantern went out.")
    body = client.post("/api/settings/test-connection").json()
    assert body["ok"] is True
    assert body["narrator"]["text"] == "Once, in the salt marshes, a lantern went out."
    assert body["embedding"]["dimensions"] == 64
    assert body["narrator"]["latency_ms"] >= 0
    calls = client.get("/api/ai-calls").json()
    assert [c["kind"] for c in calls] == ["test", "test"]
    assert calls[0]["id"] > calls[1]["id"]  # newest first
    assert calls[0]["model"] == "double-embed" and calls[1]["model"] == "double-narrator"
    assert calls[1]["status"] == "ok" and calls[1]["tokens_out"] == 9


def test_failures_are_logged_with_their_error_and_never_crash(
    client: TestClient, double: ModelDouble
) -> None:
    double.fail_next("500", count=2)
    body = client.post("/api/settings/test-connection").json()
    assert body["ok"] is False
    assert "HTTP 500" in body["narrator"]["error"] and "HTTP 500" in body["embedding"]["error"]
    calls = client.get("/api/ai-calls", params={"kind": "test"}).json()
    assert {c["status"] for c in calls} == {"error"}
    assert all("injected server error" in c["error"] for c in calls)
    assert client.get("/api/health").status_code == 200


def test_health_is_down_with_a_503_when_the_schema_is_not_at_the_head(
    client: TestClient,
) -> None:
    """A database whose schema another version left behind (or moved ahead) is "down":
    a 503, the revision it is at and the one expected, and no error key while it is ok."""
    assert "error" not in client.get("/api/health").json()["database"]
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    with runtime.engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '0001'"))
    answer = client.get("/api/health")
    assert answer.status_code == 503
    body = answer.json()
    assert body["status"] == "down"
    assert body["database"]["ok"] is False and body["database"]["revision"] == "0001"
    assert body["database"]["error"] == f"schema at 0001, expected {runtime.schema_head}"
    assert body["narrator"]["ok"]  # the models are still checked and shown


def test_an_unreachable_endpoint_gives_the_clear_message_everywhere(tmp_path: Path) -> None:
    url = closed_port_url()
    settings = make_settings(tmp_path, endpoint_url=url, model="m", embedding_model="none")
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        health = client.get("/api/health").json()
        assert health["status"] == "degraded"
        assert f"Is the server running at {url}?" in health["narrator"]["error"]
        test = client.post("/api/settings/test-connection").json()
        assert test["ok"] is False and "Is the server running" in test["narrator"]["error"]
        assert test["embedding"]["model"] == "none"


def test_test_connection_can_try_unsaved_values(client: TestClient, double: ModelDouble) -> None:
    body = client.post("/api/settings/test-connection", json={"model": "llama9"}).json()
    assert body["narrator"]["ok"] is False
    assert "no model named 'llama9'" in body["narrator"]["error"]
    assert client.get("/api/settings").json()["values"]["model"] == "double-narrator"


def test_per_user_settings_are_saved_validated_and_the_key_is_write_only(
    local_client: TestClient,
) -> None:
    # The endpoint and key are the server's in accounts mode (test_accounts_api).
    client = local_client
    saved = client.patch("/api/settings", json={"reply_tokens": 64, "api_key": "sk-x"})
    assert saved.status_code == 200
    values = client.get("/api/settings").json()["values"]
    assert values["reply_tokens"] == 64 and values["api_key_set"] is True
    assert "sk-x" not in client.get("/api/settings").text
    bad = client.patch("/api/settings", json={"reply_tokens": "lots"})
    assert bad.status_code == 400
    assert "TALEKEEPER_REPLY_TOKENS" in bad.json()["error"]["message"]
    assert client.patch("/api/settings", json={"port": 1}).status_code == 400
    assert client.patch("/api/settings", json=[1]).status_code == 400
    reset = client.patch("/api/settings", json={"reply_tokens": None})
    assert reset.json()["values"]["reply_tokens"] == 200


def test_bad_requests_get_4xx_json_errors_never_500(client: TestClient) -> None:
    cases = [
        client.get("/api/nowhere"),
        client.delete("/api/health"),
        client.get("/api/ai-calls", params={"limit": "many"}),
        client.get("/api/ai-calls", params={"limit": 0}),
        client.get("/api/ai-calls", params={"kind": "gossip"}),
        client.patch(
            "/api/settings", content=b"{not json", headers={"content-type": "application/json"}
        ),
        client.post("/api/settings/test-connection", json={"temperature": "hot"}),
    ]
    for response in cases:
        assert 400 <= response.status_code < 500, response.text
        error = response.json()["error"]
        assert error["code"] and len(error["message"]) > 10


def test_the_pages_render_name_the_models_and_forbid_inline_script(client: TestClient) -> None:
    created = client.post("/api/adventures", json={"title": "<b>Bold</b> & brave"}).json()
    for path in ("/", "/settings", "/debug", f"/adventures/{created['id']}"):
        page = client.get(path)
        assert page.status_code == 200 and "double-narrator" in page.text, path
        policy = page.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy, path
    play = client.get(f"/adventures/{created['id']}").text
    assert "&lt;b&gt;Bold&lt;/b&gt; &amp; brave" in play and "<b>Bold</b>" not in play


def test_an_unknown_adventure_page_is_a_readable_404(client: TestClient) -> None:
    page = client.get("/adventures/424242")
    assert page.status_code == 404
    assert "text/html" in page.headers["content-type"]
    assert "There is no adventure 424242." in page.text


def test_the_static_assets_ship_in_the_package(client: TestClient) -> None:
    for asset in ("/static/js/ui.js", "/static/css/app.css", "/static/js/play.js"):
        response = client.get(asset)
        assert response.status_code == 200 and response.text.strip(), asset


def test_every_request_commits_before_its_response_is_sent(client: TestClient) -> None:
    """A client that reads right after a change must see it: the session dependency's exit
    (the commit) runs when the handler returns, not after the response has gone out, which is
    FastAPI's default ("request" scope) for dependencies with yield."""
    from fastapi.dependencies.models import Dependant
    from tests.kit.web import endpoints

    from talekeeper.web.deps import db

    def sessions(dependant: Dependant) -> list[Dependant]:
        found = [dependant] if dependant.call is db else []
        for sub in dependant.dependencies:
            found += sessions(sub)
        return found

    checked = 0
    for endpoint in endpoints(client.app):  # type: ignore[arg-type]
        for dependant in sessions(endpoint.route.dependant):
            assert dependant.scope == "function", f"{endpoint.key} commits after responding"
            checked += 1
    assert checked > 20, "found too few routes with a database session: has the check broken?"
