"""The settings page's API: the described settings, the endpoint's model list (saved or
unsaved values), and the debug page's view of every adventure's background work."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from fastapi.testclient import TestClient
from tests.conftest import LOCAL, make_settings

from talekeeper.services.endpoints.diagnostics import (
    CheckFailed,
    ConnectionTest,
    Embedded,
    EmbeddingOff,
    NarratorReply,
)
from talekeeper.web.app import create_app
from talekeeper.web.schemas.settings import ConnectionTestOut
from talekeeper_testkit.double import ModelDouble, closed_port_url

DESCRIBED = {
    "key",
    "env",
    "type",
    "help",
    "accepts",
    "choices",
    "secret",
    "minimum",
    "maximum",
    "default",
    "names_model",
    "special",
}
CALL = {
    "id",
    "kind",
    "adventure_id",
    "provider",
    "model",
    "started_at",
    "duration_ms",
    "tokens_in",
    "tokens_out",
    "status",
    "error",
}


def test_settings_are_described_with_defaults_and_model_choices(client: TestClient) -> None:
    body = client.get("/api/settings").json()
    described = {s["key"]: s for s in body["settings"]}
    assert described["temperature"]["default"] == 0.8
    assert described["temperature"]["minimum"] == 0 and described["temperature"]["maximum"] == 2
    assert described["api_key"]["secret"] is True and described["api_key"]["default"] is None
    assert described["model"]["names_model"] is True
    assert described["reply_tokens"]["names_model"] is False
    specials = {s["value"] for s in described["embedding_model"]["special"]}
    assert specials == {"embedded", "none"}
    assert {s["value"] for s in described["summary_model"]["special"]} == {
        "",
        "embedded",
        "extractive",
    }
    assert body["overridden"] == []
    assert all(set(s) == DESCRIBED for s in body["settings"])
    # Whole-number bounds and defaults stay whole numbers; the enum-valued ones are text.
    assert isinstance(described["temperature"]["minimum"], int)
    assert described["top_p"]["minimum"] == 0.01
    assert described["reply_tokens"]["default"] == 200
    assert described["context_layout"]["default"] == "cache"
    values = body["values"]
    assert values["api_key_set"] is False and "api_key" not in values
    assert values["endpoint_credentials_set"] is False and values["context_layout"] == "cache"
    assert values["summary_model_resolved"] == "double-summary"
    client.patch("/api/settings", json={"top_p": 0.5, "api_key": "sk-secret"})
    again = client.get("/api/settings")
    assert again.json()["overridden"] == ["api_key", "top_p"]
    assert "sk-secret" not in again.text


def test_a_patch_answers_which_values_are_the_players_own(client: TestClient) -> None:
    saved = client.patch("/api/settings", json={"reply_tokens": 64, "temperature": 1.1}).json()
    assert saved["overridden"] == ["reply_tokens", "temperature"]
    reset = client.patch("/api/settings", json={"reply_tokens": None}).json()
    assert reset["overridden"] == ["temperature"]
    assert reset["values"]["reply_tokens"] == 200


def test_the_model_list_comes_from_the_saved_endpoint(
    client: TestClient, double: ModelDouble
) -> None:
    body = client.get("/api/settings/models").json()
    assert body["error"] is None
    assert body["models"] == ["double-embed", "double-narrator", "double-summary"]
    assert body["endpoint"] == double.url
    assert any(r.path == "/v1/models" for r in double.requests)
    assert client.get("/api/ai-calls").json() == []  # a list is not a model call


def test_the_model_list_can_use_unsaved_values(client: TestClient, double: ModelDouble) -> None:
    closed = closed_port_url()
    body = client.post("/api/settings/models", json={"endpoint_url": closed}).json()
    assert body["models"] == [] and body["endpoint"] == closed
    assert f"Is the server running at {closed}?" in body["error"]
    # Model names that only an endpoint could serve do not stop the list of a blank one.
    blank = client.post("/api/settings/models", json={"endpoint_url": "", "model": "x"}).json()
    assert blank["models"] == [] and "No endpoint URL is set" in blank["error"]
    assert client.get("/api/settings").json()["values"]["endpoint_url"] == double.url


def test_null_in_unsaved_values_means_the_server_default(client: TestClient) -> None:
    client.patch("/api/settings", json={"model": "double-summary"})
    report = client.post("/api/settings/test-connection", json={"model": None}).json()
    assert report["narrator"]["model"] == "double-narrator" and report["narrator"]["ok"]
    refused = client.post("/api/settings/test-connection", json={"port": None})
    assert refused.status_code == 400 and "not a per-user setting" in refused.text
    assert client.get("/api/settings").json()["values"]["model"] == "double-summary"


def test_the_model_list_reports_a_rejected_key(tmp_path: Path) -> None:
    with ModelDouble(api_key="sk-right") as guarded:
        settings = make_settings(tmp_path, endpoint_url=guarded.url, model="double-narrator")
        with TestClient(create_app(settings), base_url=LOCAL) as client:
            refused = client.get("/api/settings/models").json()
            assert refused["models"] == [] and "rejected the API key" in refused["error"]
            right = client.post("/api/settings/models", json={"api_key": "sk-right"}).json()
            assert right["error"] is None and "double-narrator" in right["models"]
            assert client.get("/api/settings").json()["values"]["api_key_set"] is False


def test_without_an_endpoint_the_list_says_what_to_do(tmp_path: Path) -> None:
    with TestClient(create_app(make_settings(tmp_path)), base_url=LOCAL) as client:
        body = client.get("/api/settings/models").json()
    assert body["models"] == [] and body["endpoint"] == ""
    assert "Enter the base URL" in body["error"]


def test_ai_calls_filter_by_status(client: TestClient, double: ModelDouble) -> None:
    double.fail_next("500", model="double-narrator")
    client.post("/api/settings/test-connection")
    failed = client.get("/api/ai-calls", params={"status": "error"}).json()
    assert [(c["model"], c["status"]) for c in failed] == [("double-narrator", "error")]
    assert "injected server error" in failed[0]["error"]
    ok = client.get("/api/ai-calls", params={"status": "ok"}).json()
    assert [c["model"] for c in ok] == ["double-embed"]
    [call] = ok
    assert set(call) == CALL and call["adventure_id"] is None and call["error"] is None
    assert call["tokens_out"] is None and isinstance(call["tokens_in"], int)
    assert datetime.fromisoformat(call["started_at"]).isoformat() == call["started_at"]
    assert call["duration_ms"] == round(call["duration_ms"], 1)


def test_a_connection_test_answers_only_what_each_outcome_has(
    client: TestClient, double: ModelDouble
) -> None:
    double.script("A lantern swings.", "   ")
    body = client.post("/api/settings/test-connection").json()
    assert set(body) == {"narrator", "embedding", "ok"}
    assert set(body["narrator"]) == {"model", "ok", "text", "latency_ms", "tokens_out"}
    assert set(body["embedding"]) == {"ok", "model", "dimensions", "latency_ms"}
    blank = client.post("/api/settings/test-connection").json()
    assert blank["narrator"]["error"] == "the model answered with empty text"
    assert blank["narrator"]["ok"] is False and blank["ok"] is False
    assert blank["embedding"]["ok"] is True
    double.fail_next("500", count=2)
    failed = client.post("/api/settings/test-connection").json()
    assert set(failed["narrator"]) == {"model", "ok", "error", "latency_ms"}
    assert list(failed["embedding"]) == ["ok", "model", "error", "latency_ms"]
    off = client.post("/api/settings/test-connection", json={"embedding_model": "none"}).json()
    assert off["embedding"] == {"ok": True, "model": "none", "note": "the Memory Bank is off"}
    assert off["ok"] is True


def test_each_connection_outcome_keeps_its_own_keys() -> None:
    """A reply the server did not count still says ``tokens_out`` (as null); a failure
    says no text; each outcome fits only its own shape."""
    reply = NarratorReply("m", "Hello.", 1.5, None)
    written = ConnectionTestOut.model_validate(ConnectionTest(reply, EmbeddingOff()))
    assert written.model_dump(mode="json") == {
        "narrator": {
            "model": "m",
            "ok": True,
            "text": "Hello.",
            "latency_ms": 1.5,
            "tokens_out": None,
        },
        "embedding": {"ok": True, "model": "none", "note": "the Memory Bank is off"},
        "ok": True,
    }
    failed = CheckFailed("m", "down", 2.0)
    both = ConnectionTestOut.model_validate(ConnectionTest(failed, Embedded("e", 0, 3.0)))
    assert both.model_dump(mode="json") == {
        "narrator": {"model": "m", "ok": False, "error": "down", "latency_ms": 2.0},
        "embedding": {"ok": False, "model": "e", "dimensions": 0, "latency_ms": 3.0},
        "ok": False,
    }


def test_every_adventures_background_work_in_one_answer(
    client: TestClient, double: ModelDouble
) -> None:
    first = client.post("/api/adventures", json={"title": "First"}).json()
    second = client.post("/api/adventures", json={"title": "Second"}).json()
    body = client.get("/api/derived").json()
    assert body["kinds"] == ["memory", "summary", "embedding", "eviction", "world", "cards"]
    assert all(set(a) == {"id", "title", "derived"} for a in body["adventures"])
    titles = {a["id"]: a["title"] for a in body["adventures"]}
    assert titles == {first["id"]: "First", second["id"]: "Second"}
    for adventure in body["adventures"]:
        derived = adventure["derived"]
        assert derived == client.get(f"/api/adventures/{adventure['id']}/derived").json()
        assert derived["memory"]["state"] in ("idle", "running")


def test_the_saved_key_never_reaches_another_endpoint(tmp_path: Path) -> None:
    with ModelDouble(api_key="sk-saved-for-a") as a, ModelDouble() as b:
        settings = make_settings(
            tmp_path, endpoint_url=a.url, model="double-narrator", embedding_model="double-embed"
        )
        with TestClient(create_app(settings), base_url=LOCAL) as client:
            client.patch("/api/settings", json={"api_key": "sk-saved-for-a"})
            assert client.get("/api/settings/models").json()["error"] is None
            assert client.post("/api/settings/test-connection").json()["ok"] is True
            probed = client.post("/api/settings/models", json={"endpoint_url": b.url}).json()
            assert probed["error"] is None and probed["endpoint"] == b.url
            for body in ({"endpoint_url": b.url}, {"endpoint_url": b.url, "api_key": None}):
                assert client.post("/api/settings/test-connection", json=body).json()["ok"]
            assert len(b.requests) == 5  # the list, then a reply and an embedding, twice
            assert not any("authorization" in r.headers for r in b.requests)
            typed = {"endpoint_url": b.url, "api_key": "sk-typed-for-b"}
            assert client.post("/api/settings/models", json=typed).json()["error"] is None
            assert b.requests[-1].headers["authorization"] == "Bearer sk-typed-for-b"
            # The saved endpoint spelt as saved (with a slash) is the saved endpoint.
            again = client.post("/api/settings/models", json={"endpoint_url": a.url + "/"})
            assert again.json()["error"] is None
    assert {r.headers.get("authorization") for r in a.requests} == {"Bearer sk-saved-for-a"}


def test_the_servers_key_goes_only_to_the_servers_endpoint(tmp_path: Path) -> None:
    with ModelDouble(api_key="sk-server") as a, ModelDouble(api_key="sk-user") as b:
        settings = make_settings(tmp_path, endpoint_url=a.url, api_key="sk-server")
        with TestClient(create_app(settings), base_url=LOCAL) as client:
            client.patch("/api/settings", json={"endpoint_url": b.url, "api_key": "sk-user"})
            assert client.get("/api/settings/models").json()["error"] is None
            # null asks for the server's key: not for the player's own endpoint...
            mine = client.post("/api/settings/models", json={"api_key": None}).json()
            # ...and the player's key does not go to the server's endpoint either.
            theirs = client.post("/api/settings/models", json={"endpoint_url": None}).json()
            for refused in (mine, theirs):
                assert "rejected the API key" in refused["error"]
            both = {"endpoint_url": None, "api_key": None}
            server = client.post("/api/settings/models", json=both).json()
            assert server["error"] is None and server["endpoint"] == a.url
    assert {r.headers.get("authorization") for r in a.requests} == {None, "Bearer sk-server"}
    assert {r.headers.get("authorization") for r in b.requests} == {None, "Bearer sk-user"}


def test_credentials_in_the_endpoint_url_are_never_sent_back(
    tmp_path: Path, double: ModelDouble
) -> None:
    secret = double.url.replace("http://", "http://alice:pw-9931@")
    settings = make_settings(tmp_path, endpoint_url=secret, model="double-narrator")
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        read = client.get("/api/settings")
        described = {s["key"]: s for s in read.json()["settings"]}
        assert described["endpoint_url"]["default"] == double.url
        assert read.json()["values"]["endpoint_url"] == double.url
        assert read.json()["values"]["endpoint_credentials_set"] is True
        listed = client.get("/api/settings/models")
        assert listed.json()["endpoint"] == double.url and listed.json()["error"] is None
        assert double.requests[-1].headers["authorization"].startswith("Basic ")
        health = client.get("/api/health")
        assert health.json()["narrator"]["provider"] == double.url
        double.fail_next("500", model="double-narrator")
        client.post("/api/settings/test-connection")
        calls = client.get("/api/ai-calls")
        assert {c["provider"] for c in calls.json()} == {double.url, "embedded"}
        saved = client.patch("/api/settings", json={"temperature": 0.5})
        plain = client.patch("/api/settings", json={"endpoint_url": double.url})
        assert plain.json()["values"]["endpoint_credentials_set"] is False
        answers = [read, listed, health, calls, saved, plain]
        assert not any("pw-9931" in a.text or "alice" in a.text for a in answers)


def test_the_embedded_models_threads_are_not_a_players_to_set(client: TestClient) -> None:
    """``threads`` is server-wide (the embedded models load once per process): a request,
    whoever sends it, cannot change it."""
    refused = client.patch("/api/settings", json={"threads": 64})
    assert refused.status_code == 400 and "not a per-user setting" in refused.text
    assert "threads" in refused.json()["error"]["message"]
    assert "threads" not in client.get("/api/settings").json()["values"]
