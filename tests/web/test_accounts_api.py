"""Accounts mode through the JSON API: nothing answers without a session or a token, sign-in
and its throttle, sessions that end at once everywhere, token scopes, and one account never
reaching another's stories. Real app, real migrated SQLite, real argon2 (at a low cost for
the accounts the tests create; sign-in verifies with the app's own)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.conftest import LOCAL, double_settings
from tests.kit.accounts import PASSWORD, add, signed_in
from tests.kit.web import endpoints

from talekeeper.services.accounts import (
    DEFAULT_TOKEN_DAYS,
    account_named,
    set_disabled,
)
from talekeeper.storage.db import session_scope
from talekeeper.storage.repositories.users import UserRepository
from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble

PUBLIC_API = {("POST", "/api/auth/login"), ("POST", "/api/auth/setup"), ("GET", "/api/ready")}


@pytest.fixture
def app(tmp_path: Path, double: ModelDouble) -> Iterator[Any]:
    built = create_app(double_settings(tmp_path, double, auth="accounts"))
    with TestClient(built, base_url=LOCAL):  # runs the lifespan: the runtime exists
        yield built


def api_routes(app: Any) -> list[tuple[str, str]]:
    """Every API route of the app (as the bad-input sweep finds them), ids filled in."""
    return [
        (e.method, re.sub(r"\{[^}]+\}", "1", e.path))
        for e in endpoints(app)
        if e.path.startswith("/api/") and (e.method, e.path) not in PUBLIC_API
    ]


def test_every_api_route_answers_401_without_a_session_or_token(app: Any) -> None:
    routes = api_routes(app)
    assert len(routes) > 40  # found from the app: a new route is covered without a list
    anonymous = TestClient(app, base_url=LOCAL)
    for method, path in routes:
        answer = anonymous.request(method, path, json={})
        assert answer.status_code == 401, (method, path, answer.text)
        assert answer.json()["error"]["code"] == "not_signed_in"
    # a forged cookie or an unknown token is nobody either
    forged = TestClient(app, base_url=LOCAL, cookies={"tk_session": "x" * 43})
    assert forged.get("/api/adventures").status_code == 401
    token = anonymous.get("/api/adventures", headers={"Authorization": "Bearer tk_" + "a" * 43})
    assert token.status_code == 401 and "token" in token.json()["error"]["message"]


def test_the_readiness_probe_answers_anyone_and_says_nothing_else(app: Any) -> None:
    """A load balancer has no account: ``/api/ready`` answers it, with "ok" alone (no
    version, no models, no database details), while ``/api/health`` stays signed-in."""
    anonymous = TestClient(app, base_url=LOCAL)
    answer = anonymous.get("/api/ready")
    assert answer.status_code == 200 and answer.json() == {"status": "ok"}
    assert anonymous.get("/api/health").status_code == 401
    # only a read: a write to it is no route at all, and never a way past sign-in
    assert anonymous.post("/api/ready", json={}).status_code in (401, 405)


def test_pages_send_the_browser_to_sign_in_and_the_sign_in_page_is_open(app: Any) -> None:
    anonymous = TestClient(app, base_url=LOCAL, follow_redirects=False)
    home = anonymous.get("/")
    assert home.status_code == 303 and home.headers["location"] == "/login"
    deep = anonymous.get("/adventures/7?x=1")
    assert deep.status_code == 303
    assert deep.headers["location"] == "/login?next=/adventures/7%3Fx%3D1"
    assert anonymous.get("/login").status_code == 200
    assert anonymous.get("/static/css/app.css").status_code == 200


def test_sign_in_sets_a_guarded_cookie_and_sign_out_ends_the_session(app: Any) -> None:
    add(app, "mara", admin=True)
    client = TestClient(app, base_url=LOCAL)
    answer = client.post("/api/auth/login", json={"username": "mara", "password": PASSWORD})
    assert answer.status_code == 200 and answer.json() == {
        "name": "mara",
        "admin": True,
        "mode": "accounts",
    }
    cookie = answer.headers["set-cookie"].lower()
    assert "tk_session=" in cookie and "httponly" in cookie and "samesite=lax" in cookie
    assert client.get("/api/auth/me").json()["name"] == "mara"
    stolen = client.cookies.get("tk_session")
    assert client.post("/api/auth/logout").status_code == 200
    assert client.get("/api/auth/me").status_code == 401
    # the id the cookie held signs no one in any more, wherever it is replayed from
    replay = TestClient(app, base_url=LOCAL, cookies={"tk_session": stolen or ""})
    assert replay.get("/api/auth/me").status_code == 401


def test_wrong_name_and_wrong_password_read_alike_then_the_throttle_stops_guessing(
    app: Any,
) -> None:
    add(app, "mara")
    client = TestClient(app, base_url=LOCAL)
    wrong = client.post("/api/auth/login", json={"username": "mara", "password": "nope" * 3})
    unknown = client.post("/api/auth/login", json={"username": "nobody", "password": "x" * 12})
    assert wrong.status_code == unknown.status_code == 401
    assert wrong.json() == unknown.json()
    for _ in range(4):  # five wrong passwords for mara from this address
        client.post("/api/auth/login", json={"username": "mara", "password": "guess" * 3})
    throttled = client.post("/api/auth/login", json={"username": "mara", "password": PASSWORD})
    assert throttled.status_code == 429
    wait = int(throttled.headers["retry-after"])
    assert wait >= 1 and f"wait {wait} seconds" in throttled.json()["error"]["message"]


def test_a_password_change_signs_out_every_other_browser_at_once(app: Any) -> None:
    add(app, "mara")
    first, second = signed_in(app, "mara"), signed_in(app, "mara")
    bad = second.post("/api/auth/password", json={"current": "wrong" * 3, "new": "x" * 12})
    assert bad.status_code == 401 and bad.json()["error"]["code"] == "wrong_password"
    weak = second.post("/api/auth/password", json={"current": PASSWORD, "new": "short"})
    assert weak.status_code == 400
    assert first.get("/api/auth/me").status_code == 200  # nothing changed yet
    new = "a much longer secret"
    changed = second.post("/api/auth/password", json={"current": PASSWORD, "new": new})
    assert changed.status_code == 200, changed.text
    assert first.get("/api/auth/me").status_code == 401
    pages = TestClient(app, base_url=LOCAL, follow_redirects=False)
    pages.cookies.update(first.cookies)
    assert pages.get("/").headers["location"] == "/login"
    assert second.get("/api/auth/me").status_code == 200  # this browser got a fresh session
    assert signed_in(app, "mara", new).get("/api/auth/me").status_code == 200


def test_a_password_change_revokes_the_accounts_tokens_unless_asked_to_keep_them(
    app: Any,
) -> None:
    add(app, "mara")
    browser = signed_in(app, "mara")
    script = TestClient(app, base_url=LOCAL)

    def token(name: str) -> dict[str, str]:
        made = browser.post("/api/tokens", json={"name": name, "scopes": ["read"]}).json()
        return {"Authorization": f"Bearer {made['token']}"}

    first, second = token("backup"), token("sync")
    changed = browser.post("/api/auth/password", json={"current": PASSWORD, "new": "x" * 12})
    assert changed.status_code == 200 and changed.json() == {"ok": True, "tokens_revoked": 2}
    assert script.get("/api/adventures", headers=first).status_code == 401
    assert script.get("/api/adventures", headers=second).status_code == 401
    assert browser.get("/api/tokens").json() == {"tokens": []}
    kept = token("kept")
    body = {"current": "x" * 12, "new": "y" * 12, "revoke_tokens": False}
    unchanged = browser.post("/api/auth/password", json=body)
    assert unchanged.json() == {"ok": True, "tokens_revoked": 0}
    assert script.get("/api/adventures", headers=kept).status_code == 200
    bad = browser.post("/api/auth/password", json={**body, "revoke_tokens": "maybe"})
    assert bad.status_code == 400 and "revoke_tokens" in bad.json()["error"]["message"]


def test_a_token_made_without_an_expiry_lasts_the_default_ninety_days(app: Any) -> None:
    add(app, "mara")
    browser = signed_in(app, "mara")

    def days_of(made: dict[str, Any]) -> float | None:
        if made["expires_at"] is None:
            return None
        lasts = datetime.fromisoformat(made["expires_at"]) - datetime.fromisoformat(
            made["created_at"]
        )
        return lasts / timedelta(days=1)

    default = browser.post("/api/tokens", json={"name": "plain", "scopes": ["read"]})
    assert default.status_code == 201 and days_of(default.json()) == DEFAULT_TOKEN_DAYS == 90
    week = browser.post("/api/tokens", json={"name": "w", "scopes": ["read"], "expires_days": 7})
    assert days_of(week.json()) == 7
    never = {"name": "forever", "scopes": ["read"], "expires_days": None}
    assert days_of(browser.post("/api/tokens", json=never).json()) is None
    listed = {t["name"]: t["expires_at"] for t in browser.get("/api/tokens").json()["tokens"]}
    assert listed["plain"] is not None and listed["forever"] is None
    zero = browser.post("/api/tokens", json={"name": "z", "scopes": ["read"], "expires_days": 0})
    assert zero.status_code == 400 and "null for never" in zero.json()["error"]["message"]


def test_disabling_an_account_ends_its_sessions_and_tokens(app: Any) -> None:
    add(app, "mara")
    client = signed_in(app, "mara")
    token = client.post("/api/tokens", json={"name": "script", "scopes": ["read"]}).json()
    with session_scope(app.state.runtime.sessions) as session:
        set_disabled(session, "mara", True)
    assert client.get("/api/auth/me").status_code == 401
    bearer = {"Authorization": f"Bearer {token['token']}"}
    assert TestClient(app, base_url=LOCAL).get("/api/adventures", headers=bearer).status_code == 401


def test_token_scopes_decide_what_a_script_may_do(app: Any) -> None:
    add(app, "mara")
    client = signed_in(app, "mara")
    made = client.post("/api/tokens", json={"name": "reader", "scopes": ["read"]})
    assert made.status_code == 201
    reader = made.json()
    assert reader["token"].startswith("tk_") and reader["scopes"] == ["read"]
    listed = client.get("/api/tokens").json()["tokens"]
    assert [t["name"] for t in listed] == ["reader"] and "token" not in listed[0]
    script = TestClient(app, base_url=LOCAL)
    read = {"Authorization": f"Bearer {reader['token']}"}
    assert script.get("/api/adventures", headers=read).status_code == 200
    refused = script.post("/api/adventures", json={"scenario": "lantern-coast"}, headers=read)
    assert refused.status_code == 403 and "play" in refused.json()["error"]["message"]
    player = client.post("/api/tokens", json={"name": "player", "scopes": ["play"]}).json()
    play = {"Authorization": f"Bearer {player['token']}"}
    made_adventure = script.post(
        "/api/adventures", json={"scenario": "lantern-coast"}, headers=play
    )
    assert made_adventure.status_code == 201, made_adventure.text
    admin = client.post("/api/tokens", json={"name": "boss", "scopes": ["admin"]})
    assert admin.status_code == 400  # not an administrator's account
    assert client.delete(f"/api/tokens/{reader['id']}").status_code == 200
    assert script.get("/api/adventures", headers=read).status_code == 401


def test_one_account_never_reaches_anothers_stories_or_tokens(app: Any) -> None:
    add(app, "mara")
    add(app, "tal")
    mara, tal = signed_in(app, "mara"), signed_in(app, "tal")
    adventure = mara.post("/api/adventures", json={"scenario": "lantern-coast"}).json()
    token = mara.post("/api/tokens", json={"name": "s", "scopes": ["read"]}).json()
    assert mara.get(f"/api/adventures/{adventure['id']}").status_code == 200
    assert tal.get(f"/api/adventures/{adventure['id']}").status_code == 404
    assert tal.get(f"/api/adventures/{adventure['id']}/export").status_code == 404
    listed = tal.get("/api/adventures").json()
    assert listed == []  # mara's adventure is hers alone
    assert tal.delete(f"/api/tokens/{token['id']}").status_code == 404
    assert [t["id"] for t in mara.get("/api/tokens").json()["tokens"]] == [token["id"]]


def test_local_mode_has_nothing_to_sign_in_to(client: TestClient) -> None:
    assert client.get("/api/auth/me").json() == {"name": "local", "admin": True, "mode": "none"}
    answer = client.post("/api/auth/login", json={"username": "x", "password": "y" * 12})
    assert answer.status_code == 404
    assert client.get("/api/adventures").status_code == 200  # no login needed


def test_the_endpoint_is_the_servers_unless_the_administrator_allows_players_their_own(
    app: Any, tmp_path: Path, double: ModelDouble
) -> None:
    add(app, "mara")
    client = signed_in(app, "mara")
    elsewhere = {"endpoint_url": "http://127.0.0.1:9/v1"}
    for method, path in (
        ("PATCH", "/api/settings"),
        ("POST", "/api/settings/models"),
        ("POST", "/api/settings/test-connection"),
    ):
        for body in (elsewhere, {"api_key": "sk-mine"}):
            answer = client.request(method, path, json=body)
            assert answer.status_code == 403, (method, path, answer.text)
            assert "TALEKEEPER_USER_ENDPOINTS=allow" in answer.json()["error"]["message"]
    assert client.patch("/api/settings", json={"reply_tokens": 150}).status_code == 200
    assert client.get("/api/settings").json()["values"]["endpoint_url"] == double.url
    # an override saved before (say, in local mode) is not used either
    with session_scope(app.state.runtime.sessions) as session:
        uid = account_named(session, "mara").id
        UserRepository(session).save_settings(uid, {"endpoint_url": "http://127.0.0.1:9/v1"})
    assert client.get("/api/settings").json()["values"]["endpoint_url"] == double.url

    allowing = create_app(
        double_settings(tmp_path / "allow", double, auth="accounts", user_endpoints="allow")
    )
    with TestClient(allowing, base_url=LOCAL):
        add(allowing, "tal")
        tal = signed_in(allowing, "tal")
        assert tal.patch("/api/settings", json=elsewhere).status_code == 200
        values = tal.get("/api/settings").json()["values"]
        assert values["endpoint_url"] == elsewhere["endpoint_url"]


def test_a_token_cannot_make_or_revoke_tokens_or_change_the_password(app: Any) -> None:
    add(app, "mara", admin=True)
    client = signed_in(app, "mara")
    made = client.post("/api/tokens", json={"name": "bot", "scopes": ["play", "read"]}).json()
    bot = TestClient(app, base_url=LOCAL, headers={"Authorization": f"Bearer {made['token']}"})
    for method, path, body in (
        ("POST", "/api/tokens", {"name": "wider", "scopes": ["admin", "play", "read"]}),
        ("GET", "/api/tokens", None),
        ("DELETE", f"/api/tokens/{made['id']}", None),
        ("POST", "/api/auth/password", {"current": PASSWORD, "new": "y" * 12}),
    ):
        answer = bot.request(method, path, json=body)
        assert answer.status_code == 403, (method, path, answer.text)
        assert answer.json()["error"]["code"] == "browser_only"
    assert [t["name"] for t in client.get("/api/tokens").json()["tokens"]] == ["bot"]
    assert bot.get("/api/adventures").status_code == 200  # what the token is for still works


def test_an_admin_token_alone_reaches_the_administrators_routes(app: Any) -> None:
    add(app, "mara", admin=True)
    client = signed_in(app, "mara")
    made = client.post("/api/tokens", json={"name": "ops", "scopes": ["admin"]}).json()
    ops = TestClient(app, base_url=LOCAL, headers={"Authorization": f"Bearer {made['token']}"})
    assert ops.get("/api/admin/users").status_code == 200
    added = ops.post("/api/admin/users", json={"name": "tal", "password": PASSWORD})
    assert added.status_code == 201, added.text
    assert ops.get("/api/adventures").status_code == 403  # and nothing else


def test_an_authorization_header_is_never_helped_by_a_cookie(app: Any) -> None:
    add(app, "mara")
    client = signed_in(app, "mara")
    junk = client.post(
        "/api/adventures",
        json={"scenario": "lantern-coast"},
        headers={"Authorization": "Bearer junk", "Origin": "http://evil.example"},
    )
    assert junk.status_code == 401  # the guard let it cross; the cookie does not count
    assert client.get("/api/adventures").json() == []
    basic = client.get("/api/adventures", headers={"Authorization": "Basic bWFyYTp4"})
    assert basic.status_code == 401


def test_two_session_cookies_are_no_session(app: Any) -> None:
    add(app, "mara")
    add(app, "tal")
    mara, tal = signed_in(app, "mara"), signed_in(app, "tal")
    both = f"tk_session={tal.cookies['tk_session']}; tk_session={mara.cookies['tk_session']}"
    planted = TestClient(app, base_url=LOCAL, headers={"Cookie": both})
    assert planted.get("/api/auth/me").status_code == 401


def test_signing_in_again_ends_the_browsers_earlier_session(app: Any) -> None:
    add(app, "mara")
    add(app, "tal")
    client = signed_in(app, "mara")
    earlier = client.cookies["tk_session"]
    switched = client.post("/api/auth/login", json={"username": "tal", "password": PASSWORD})
    assert switched.status_code == 200 and client.get("/api/auth/me").json()["name"] == "tal"
    replay = TestClient(app, base_url=LOCAL, cookies={"tk_session": earlier})
    assert replay.get("/api/auth/me").status_code == 401


def test_an_overlong_password_is_refused_without_counting_as_a_guess(app: Any) -> None:
    add(app, "mara")
    client = TestClient(app, base_url=LOCAL)
    for _ in range(8):
        long = client.post("/api/auth/login", json={"username": "mara", "password": "x" * 1025})
        assert long.status_code == 400 and "1024" in long.json()["error"]["message"]
    assert (
        client.post("/api/auth/login", json={"username": "mara", "password": PASSWORD}).status_code
        == 200
    )
