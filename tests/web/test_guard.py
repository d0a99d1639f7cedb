"""The web guard, attacked: rebound Host names, cross-site requests, oversized and
endless bodies, non-JSON bodies, and the headers every answer must carry.

Each test sends what an attacker's page or a hostile client would send, to the real
app on a real migrated database; the body-size tests speak raw HTTP to the app under
uvicorn, because only a socket shows whether the app answered before reading a body.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect
from tests.conftest import LOCAL, make_settings
from tests.kit.web import endpoints, library_source, post_head, raw, settled

from talekeeper.core.errors import ConfigurationError
from talekeeper.services.common.limits import BODY_MAX, IMPORT_BODY_MAX
from talekeeper.settings import Settings
from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble
from talekeeper_testkit.live import serving

EVIL = "evil.example:8000"
FOREIGN = "http://evil.example"
CROSS_SITE_FORM = {
    "sec-fetch-site": "cross-site",
    "origin": FOREIGN,
    "content-type": "application/x-www-form-urlencoded",
}
JSON_HEADERS = {"content-type": "application/json"}
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Story:
    """A played adventure with one turn undone, a card and a memory: every route's ids."""

    adventure: int
    reply: int
    card: int
    memory: int
    source: int  # a knowledge library source
    event: int  # a world event the player added

    def path_values(self) -> dict[str, str]:
        return {
            "adventure_id": str(self.adventure),
            "action_id": str(self.reply),
            "card_id": str(self.card),
            "memory_id": str(self.memory),
            "source_id": str(self.source),
            "event_id": str(self.event),
            "proposal_id": "1",  # refused before it is looked up: it need not exist
            "scenario_id": "lantern-coast",
            "token_id": "1",
            "user_id": "1",
            "invite_id": "1",
            "code": "x" * 24,
        }


@pytest.fixture
def story(client: TestClient, double: ModelDouble) -> Story:
    created = client.post("/api/adventures", json={"scenario": "lantern-coast"})
    assert created.status_code == 201, created.text
    aid = created.json()["id"]
    double.script("Old Maren nods.", "The lamp gutters.")
    first = client.post(f"/api/adventures/{aid}/actions", json={"type": "do", "text": "wave"})
    assert first.status_code == 200, first.text
    client.post(f"/api/adventures/{aid}/actions", json={"type": "do", "text": "wait"})
    assert client.post(f"/api/adventures/{aid}/undo").status_code == 200  # so redo has work
    card = client.post(f"/api/adventures/{aid}/cards", json={"name": "Brass Key"}).json()
    memory = client.post(f"/api/adventures/{aid}/memories", json={"text": "Maren is wary."})
    settled(client, aid)
    source = library_source(client)
    took = client.post(f"/api/adventures/{aid}/world/events", json={"kind": "took", "object": "x"})
    assert took.status_code == 201, took.text
    ids = (first.json()["reply"]["id"], card["id"], memory.json()["id"], source, took.json()["id"])
    return Story(aid, *ids)


def snapshot(client: TestClient, story: Story) -> dict[str, Any]:
    """What a refused request must leave exactly as it was."""
    aid = story.adventure
    return {
        "adventures": client.get("/api/adventures").json(),
        "export": client.get(f"/api/adventures/{aid}/export").json(),
        "settings": client.get("/api/settings").json()["values"],
        "calls": client.get("/api/ai-calls", params={"limit": 500}).json(),
        "memories": client.get(f"/api/adventures/{aid}/memories?include=all").json(),
        "library": [
            {k: v for k, v in s.items() if k not in ("state", "embedded", "progress")}
            for s in client.get("/api/library").json()["sources"]
        ],
        "knowledge": client.get(f"/api/adventures/{aid}/knowledge").json(),
        "world": client.get(f"/api/adventures/{aid}/world/events").json(),
    }


def refused(response: Any, status: int, code: str, *words: str) -> str:
    """Our error format, the status and code, and a message holding ``words``."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == code, error
    for word in words:
        assert word in error["message"], error["message"]
    return str(error["message"])


# -- the Host allow-list ----------------------------------------------------------------


def test_a_rebound_host_can_neither_read_settings_nor_rename(
    client: TestClient, story: Story
) -> None:
    before = snapshot(client, story)
    read = client.get("/api/settings", headers={"host": EVIL})
    refused(read, 400, "host_not_allowed", "TALEKEEPER_ALLOWED_HOSTS", EVIL)
    assert "values" not in read.text and "endpoint_url" not in read.text
    renamed = client.patch(
        f"/api/adventures/{story.adventure}", json={"title": "Owned"}, headers={"host": EVIL}
    )
    refused(renamed, 400, "host_not_allowed", "TALEKEEPER_ALLOWED_HOSTS")
    for url in ("/", "/static/css/app.css", "/openapi.json", f"/adventures/{story.adventure}"):
        refused(client.get(url, headers={"host": EVIL}), 400, "host_not_allowed")
    assert snapshot(client, story) == before


@pytest.mark.parametrize(
    "host",
    ["localhost", "localhost:8000", "LOCALHOST:1", "127.0.0.1", "127.0.0.1:65535", "[::1]:8000"],
)
def test_loopback_names_pass_with_any_port(client: TestClient, host: str) -> None:
    assert client.get("/api/health", headers={"host": host}).status_code == 200
    made = client.post("/api/adventures", json={"title": "Here"}, headers={"host": host})
    assert made.status_code == 201, made.text


@pytest.mark.parametrize(
    "host", ["localhost.evil.example", "127.0.0.1.nip.io:8000", "localhost:x", "[::2]:8000", "::1"]
)
def test_names_that_only_look_local_are_refused(client: TestClient, host: str) -> None:
    refused(client.get("/api/health", headers={"host": host}), 400, "host_not_allowed")


def test_an_allowed_extra_name_passes_and_no_other(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, allowed_hosts=" Talekeeper.lan,,192.168.1.20 , fe80::1,")
    assert settings.extra_host_names == ("talekeeper.lan", "192.168.1.20", "[fe80::1]")
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        for host in ("talekeeper.lan:8443", "TALEKEEPER.LAN", "192.168.1.20:8000", "[fe80::1]"):
            assert client.get("/api/health", headers={"host": host}).status_code == 200, host
        other = client.get("/api/health", headers={"host": "talekeeper.lan.evil.example"})
        message = refused(other, 400, "host_not_allowed", "TALEKEEPER_ALLOWED_HOSTS")
        assert "192.168.1.20" not in message  # a rebound page reads this: it names no host


@pytest.mark.parametrize(
    "value, words",
    [
        ("talekeeper.lan:8000", ("has a port", "'talekeeper.lan'")),
        ("http://talekeeper.lan", ("not a host name", "without a scheme")),
        ("*", ("not a host name",)),
        ("good.lan, bad name", ("'bad name'",)),
    ],
)
def test_a_bad_allowed_hosts_value_stops_start_up(
    tmp_path: Path, value: str, words: tuple[str, ...]
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        make_settings(tmp_path, allowed_hosts=value)
    assert "TALEKEEPER_ALLOWED_HOSTS" in str(caught.value)
    for word in words:
        assert word in str(caught.value)


def test_a_request_without_one_host_is_refused(double: ModelDouble, tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    with serving(create_app(settings)) as (url, _loop):
        status, body = raw(url, b"GET /api/health HTTP/1.0\r\n\r\n")
        assert status == b"HTTP/1.1 400 Bad Request", body
        assert body["error"]["code"] == "host_not_allowed"
        assert "no Host header" in body["error"]["message"]
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        two = client.get("/api/health", headers=[("host", "localhost"), ("host", EVIL)])
        refused(two, 400, "host_not_allowed", "more than one Host")


# -- the cross-origin check -------------------------------------------------------------


def test_foreign_origin_writes_are_refused_and_change_nothing(
    client: TestClient, story: Story
) -> None:
    before = snapshot(client, story)
    aid, foreign = story.adventure, {"origin": FOREIGN}
    made = client.post("/api/adventures", json={"title": "Planted"}, headers=foreign)
    refused(made, 403, "cross_origin", "Authorization: Bearer")
    renamed = client.patch(f"/api/adventures/{aid}", json={"title": "Owned"}, headers=foreign)
    refused(renamed, 403, "cross_origin")
    refused(client.delete(f"/api/adventures/{aid}", headers=foreign), 403, "cross_origin")
    sandboxed = client.delete(f"/api/adventures/{aid}", headers={"origin": "null"})
    refused(sandboxed, 403, "cross_origin")
    other_port = client.delete(
        f"/api/adventures/{aid}", headers={"origin": "http://localhost:3000"}
    )
    refused(other_port, 403, "cross_origin")
    assert snapshot(client, story) == before


BODILESS: list[tuple[str, str]] = [
    ("POST", "/api/adventures/{adventure_id}/undo"),
    ("POST", "/api/adventures/{adventure_id}/redo"),
    ("POST", "/api/adventures/{adventure_id}/retry"),
    ("POST", "/api/actions/{action_id}/fork"),
    ("POST", "/api/adventures/{adventure_id}/insights/dry-run"),
    ("POST", "/api/settings/test-connection"),
    ("DELETE", "/api/actions/{action_id}"),
    ("DELETE", "/api/adventures/{adventure_id}"),
]


@pytest.mark.parametrize("site", ["cross-site", "same-site"])
def test_cross_site_form_posts_change_nothing_and_call_no_model(
    client: TestClient, double: ModelDouble, story: Story, site: str
) -> None:
    """A plain <form method=post> from another site (or another port of localhost,
    which the browser calls same-site) to the routes that take no body."""
    before, calls = snapshot(client, story), len(double.requests)
    headers = CROSS_SITE_FORM | {"sec-fetch-site": site}
    for method, template in BODILESS:
        url = template.format(**story.path_values())
        for _ in range(3):
            response = client.request(method, url, content=b"x=1", headers=headers)
            refused(response, 403, "cross_origin")
    settled(client, story.adventure)
    assert len(double.requests) == calls, [r.path for r in double.requests[calls:]]
    assert snapshot(client, story) == before


def test_every_unsafe_route_refuses_a_cross_site_request(client: TestClient, story: Story) -> None:
    """The routes come from the app, so a new one is covered (or, with a new kind of
    path id, this fails until it has a value here)."""
    before, values, swept = snapshot(client, story), story.path_values(), 0
    attacks: list[dict[str, Any]] = [
        {"content": b"x=1", "headers": CROSS_SITE_FORM},
        {
            "content": b'{"title": "x"}',
            "headers": {"origin": FOREIGN, "content-type": "text/plain"},
        },
        {"json": {"title": "x"}, "headers": {"sec-fetch-site": "same-site"}},
    ]
    for endpoint in endpoints(client.app):
        if endpoint.method in ("GET", "HEAD", "OPTIONS"):
            continue
        swept += 1
        url = endpoint.path.format(**values)
        for attack in attacks:
            response = client.request(endpoint.method, url, **attack)
            refused(response, 403, "cross_origin")
    for method, url in (("POST", "/static/css/app.css"), ("PUT", "/"), ("POST", "/nowhere")):
        refused(client.request(method, url, headers=CROSS_SITE_FORM), 403, "cross_origin")
    assert swept >= 25  # every POST, PUT, PATCH and DELETE route of the app today
    assert snapshot(client, story) == before


def count_adventures(client: TestClient) -> int:
    return len(client.get("/api/adventures").json())


@pytest.mark.parametrize(
    "headers",
    [
        {"authorization": "Bearer any-token", "origin": FOREIGN, "sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "same-origin", "origin": "http://localhost"},
        {"sec-fetch-site": "none"},
        {},  # curl: no Origin, no Sec-Fetch-Site
        {"origin": "http://localhost"},  # a browser too old for Sec-Fetch-Site, same origin
    ],
)
def test_scripts_and_the_apps_own_pages_pass(client: TestClient, headers: dict[str, str]) -> None:
    before = count_adventures(client)
    made = client.post("/api/adventures", json={"title": "Mine"}, headers=headers)
    assert made.status_code == 201, made.text
    undo = client.post(f"/api/adventures/{made.json()['id']}/undo", headers=headers)
    assert undo.status_code == 409, undo.text  # reached the story: nothing to undo
    assert count_adventures(client) == before + 1


@pytest.mark.parametrize(
    "authorization", ["Basic dXNlcjpwYXNz", "Bearer", "Bearer  ", "bearerless token"]
)
def test_credentials_a_browser_sends_itself_do_not_pass(
    client: TestClient, authorization: str
) -> None:
    headers = {"authorization": authorization, "origin": FOREIGN}
    made = client.post("/api/adventures", json={"title": "Planted"}, headers=headers)
    refused(made, 403, "cross_origin")


# -- JSON only --------------------------------------------------------------------------


@pytest.mark.parametrize("content_type", ["text/plain", None, "application/x-www-form-urlencoded"])
def test_a_body_not_sent_as_json_is_never_taken_for_json(
    client: TestClient, content_type: str | None
) -> None:
    before = count_adventures(client)
    headers = {"content-type": content_type} if content_type else {}
    response = client.post("/api/adventures", content=b'{"title": "Planted"}', headers=headers)
    assert 400 <= response.status_code < 500, response.text
    assert "application/json" in response.json()["error"]["message"]
    assert count_adventures(client) == before


def test_the_fastapi_requirement_admits_no_version_that_parses_any_body_as_json() -> None:
    """Before 0.132, FastAPI parsed a body sent with no Content-Type as JSON: a form
    a page on any site can send."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    spec = next(d for d in project["dependencies"] if d.startswith("fastapi"))
    minimum = spec.partition(">=")[2].partition(",")[0]
    assert tuple(int(part) for part in minimum.split(".")) >= (0, 132), spec


def test_a_text_body_is_never_parsed(client: TestClient) -> None:
    """Only a JSON body is read and parsed app-wide: this one would be refused if it were."""
    body = b'{"x": "\\ud800"}'
    text = client.request(
        "GET", "/api/settings", content=body, headers={"content-type": "text/plain"}
    )
    assert text.status_code == 200, text.text
    parsed = client.request("GET", "/api/settings", content=body, headers=JSON_HEADERS)
    refused(parsed, 400, "invalid_input", "Unicode")


# -- body size --------------------------------------------------------------------------


@pytest.fixture
def live_url(endpoint_settings: Settings) -> Iterator[str]:
    with serving(create_app(endpoint_settings)) as (url, _loop):
        yield url


@pytest.mark.parametrize(
    "path, limit, what",
    [("/api/adventures", BODY_MAX, "2 MiB"), ("/api/adventures/import", IMPORT_BODY_MAX, "64 MiB")],
)
def test_an_oversized_content_length_is_answered_before_any_body(
    live_url: str, path: str, limit: int, what: str
) -> None:
    """Nothing of the body is sent: the 413 can only come from the Content-Length."""
    status, body = raw(live_url, post_head(path, limit + 1))
    assert status == b"HTTP/1.1 413 Request Entity Too Large", body
    assert body["error"]["code"] == "body_too_large" and what in body["error"]["message"]


def test_an_endless_chunked_body_is_cut_at_the_limit(live_url: str) -> None:
    """The body is never finished (no last chunk): the 413 comes once the limit is passed."""
    chunk = b"x" * 65536
    parts = [b"%x\r\n%s\r\n" % (len(chunk), chunk)] * (BODY_MAX // len(chunk) + 2)
    head = post_head("/api/adventures", None, transfer_encoding="chunked")
    status, body = raw(live_url, head, *parts)
    assert status == b"HTTP/1.1 413 Request Entity Too Large", body
    assert body["error"]["code"] == "body_too_large"


def test_a_body_at_the_limit_is_read(live_url: str) -> None:
    title = b'{"title": "Long"}'
    body = title + b" " * (BODY_MAX - len(title))
    status, made = raw(live_url, post_head("/api/adventures", len(body)), body)
    assert status == b"HTTP/1.1 201 Created" and made["title"] == "Long", made


def test_an_import_at_its_limit_is_not_refused_for_size(client: TestClient, story: Story) -> None:
    text = json.dumps(client.get(f"/api/adventures/{story.adventure}/export").json()).encode()
    body = text + b" " * (IMPORT_BODY_MAX - len(text))
    imported = client.post("/api/adventures/import", content=body, headers=JSON_HEADERS)
    assert imported.status_code == 201, imported.text[:300]


def test_a_huge_text_body_on_a_get_is_refused_unread(client: TestClient) -> None:
    body = b"y" * (BODY_MAX + 1)
    response = client.request(
        "GET", "/api/settings", content=body, headers={"content-type": "text/plain"}
    )
    refused(response, 413, "body_too_large", "2 MiB")


# -- headers on every answer ------------------------------------------------------------

COMMON = {
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
}


def test_every_kind_of_answer_carries_the_security_headers(
    client: TestClient, story: Story
) -> None:
    answers: dict[str, Callable[[], Any]] = {
        "json": lambda: client.get("/api/health"),
        "page": lambda: client.get("/"),
        "missing page": lambda: client.get("/adventures/999999"),
        "static": lambda: client.get("/static/js/ui.js"),
        "404": lambda: client.get("/api/nothing-here"),
        "refusal": lambda: client.get("/api/health", headers={"host": EVIL}),
        "413": lambda: client.post("/api/adventures", content=b" " * (BODY_MAX + 1)),
        "openapi": lambda: client.get("/openapi.json"),
    }
    for name, send in answers.items():
        response = send()
        for header, value in COMMON.items():
            assert response.headers.get(header) == value, (name, header, dict(response.headers))
        policy = response.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in policy, (name, policy)
        if response.headers["content-type"].startswith("text/html"):
            assert "script-src 'self'" in policy, name  # a page keeps its own policy
        else:
            assert "default-src 'none'" in policy, (name, policy)
        assert response.headers.get_list("x-content-type-options") == ["nosniff"], name


def test_no_page_loads_scripts_from_a_cdn(client: TestClient) -> None:
    for url in ("/docs", "/redoc", "/docs/oauth2-redirect"):
        refused(client.get(url), 404, "http_404")
    assert client.get("/openapi.json").json()["info"]["title"] == "Talekeeper"


def test_a_websocket_is_closed_before_it_opens(client: TestClient) -> None:
    with pytest.raises(WebSocketDisconnect) as closed, client.websocket_connect("/api/health"):
        pass
    assert closed.value.code == 1008
