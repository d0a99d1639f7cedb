"""``GET /api/settings/detect``: the local model servers, and switching to one with the
settings a save takes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from tests.conftest import LOCAL, each_mode, make_settings
from tests.kit.strangers import NESTED, Stranger, send

from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble, closed_port_url


def port_of(url: str) -> int:
    return int(url.split(":")[2].split("/")[0])


@pytest.fixture
def local_server() -> Iterator[ModelDouble]:
    """A model server the player happens to run, besides the test's own double."""
    with ModelDouble(models=("llama3.2", "qwen2.5:7b")) as server:
        yield server


def fresh(tmp_path: Path, **env: str) -> TestClient:
    """A fresh install: the embedded defaults, nothing configured but the ports to ask."""
    return TestClient(create_app(make_settings(tmp_path, **env)), base_url=LOCAL)


def test_a_fresh_install_finds_the_local_server_and_switches_to_it(
    tmp_path: Path, local_server: ModelDouble
) -> None:
    ports = f"{port_of(closed_port_url())},{port_of(local_server.url)}"
    with fresh(tmp_path, detect_ports=ports) as client:
        answer = client.get("/api/settings/detect")
        assert answer.status_code == 200, answer.text
        assert answer.json() == [
            {
                "url": local_server.url,
                "kind": "openai-compatible",
                "models": ["llama3.2", "qwen2.5:7b"],
            }
        ]
        # Nothing a client sends chooses where to look.
        steered = client.get("/api/settings/detect?host=example.com&port=22&url=http://x/")
        assert steered.json() == answer.json()
        (found,) = answer.json()
        # What the page's button sends: the endpoint, the model, and no key for it.
        body = {"endpoint_url": found["url"], "model": found["models"][1], "api_key": ""}
        saved = client.patch("/api/settings", json=body)
        assert saved.status_code == 200, saved.text
        assert saved.json()["values"]["model"] == "qwen2.5:7b"
        adventure = client.post("/api/adventures", json={"scenario": "lantern-coast"}).json()
        local_server.script("The gulls wheel over the harbour.")
        turn = client.post(
            f"/api/adventures/{adventure['id']}/actions", json={"type": "do", "text": "look"}
        )
        assert turn.status_code == 200, turn.text
        assert turn.json()["reply"]["text"] == "The gulls wheel over the harbour."
    asked = [r for r in local_server.requests if r.path == "/v1/chat/completions"]
    assert asked and asked[0].body["model"] == "qwen2.5:7b"
    assert all(r.headers.get("Authorization") is None for r in local_server.requests)


def test_its_own_port_is_never_listed(tmp_path: Path, local_server: ModelDouble) -> None:
    port = port_of(local_server.url)
    with fresh(tmp_path, detect_ports=str(port), port=str(port)) as client:
        assert client.get("/api/settings/detect").json() == []
    assert local_server.requests == []


def test_no_ports_no_probe(tmp_path: Path, local_server: ModelDouble) -> None:
    with fresh(tmp_path, detect_ports="") as client:
        assert client.get("/api/settings/detect").json() == []


@pytest.mark.parametrize("mode", ["local", "accounts"])
def test_accounts_mode_lists_only_where_players_choose_their_endpoint(
    mode: str, tmp_path: Path, double: ModelDouble, local_server: ModelDouble
) -> None:
    ports = str(port_of(local_server.url))
    for rule, allowed in (("deny", mode == "local"), ("allow", True)):
        env = {"detect_ports": ports, "user_endpoints": rule}
        for client in each_mode(mode, tmp_path / rule, double, **env):
            answer = client.get("/api/settings/detect")
            if allowed:
                assert answer.status_code == 200 and answer.json()[0]["url"] == local_server.url
            else:
                assert answer.status_code == 403, answer.text
                assert "TALEKEEPER_USER_ENDPOINTS=allow" in answer.json()["error"]["message"]


def test_accounts_mode_asks_who_is_asking(
    tmp_path: Path, double: ModelDouble, local_server: ModelDouble
) -> None:
    env = {"detect_ports": str(port_of(local_server.url)), "user_endpoints": "allow"}
    settings = make_settings(tmp_path, auth="accounts", **env)
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        assert client.get("/api/settings/detect").status_code == 401
    assert local_server.requests == []


def test_a_bad_port_list_is_refused_at_start(tmp_path: Path) -> None:
    from talekeeper.core.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="TALEKEEPER_DETECT_PORTS"):
        make_settings(tmp_path, detect_ports="11434;1234")


def test_a_page_rebound_to_this_machine_learns_nothing(
    tmp_path: Path, local_server: ModelDouble
) -> None:
    """DNS rebinding: another site's name pointed at 127.0.0.1 could read the answer of
    a GET; the guard refuses its Host before any server is asked."""
    with fresh(tmp_path, detect_ports=str(port_of(local_server.url))) as client:
        answer = client.get("/api/settings/detect", headers={"Host": "evil.example"})
        assert answer.status_code == 400
        assert "llama3.2" not in answer.text
    assert local_server.requests == []


def test_a_port_answering_deeply_nested_json_leaves_the_list_whole(
    tmp_path: Path, local_server: ModelDouble
) -> None:
    nested = Stranger(send(200, NESTED))
    try:
        ports = f"{nested.port},{port_of(local_server.url)}"
        with fresh(tmp_path, detect_ports=ports) as client:
            answer = client.get("/api/settings/detect")
        assert answer.status_code == 200, answer.text
        assert [s["url"] for s in answer.json()] == [local_server.url]
    finally:
        nested.close()
