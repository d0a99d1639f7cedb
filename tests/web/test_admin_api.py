"""The administrator's API through the real app in accounts mode, on a real migrated SQLite
database and the loopback model double: only the admin scope reaches it, the usage
figures are what was played, nothing of a story reaches an administrator, an
administrator keeps their own access, and a new password, ended sessions and revoked
tokens take effect at once."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event
from tests.conftest import LOCAL, double_settings
from tests.kit.accounts import PASSWORD, add, signed_in
from tests.kit.web import endpoints, settled, with_admin

from talekeeper.services.accounts import usage
from talekeeper.services.common.rendering import PLAYER_TYPES
from talekeeper.storage.db import read_scope
from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble

NEW_PASSWORD = "a fresh passphrase here"


@pytest.fixture
def app(tmp_path: Path, double: ModelDouble) -> Iterator[Any]:
    built = with_admin(create_app(double_settings(tmp_path, double, auth="accounts")))
    with TestClient(built, base_url=LOCAL):  # runs the lifespan: the runtime exists
        yield built


def admin_routes(app: Any) -> list[tuple[str, str]]:
    return [(e.method, e.path) for e in endpoints(app) if e.path.startswith("/api/admin/")]


def body_for(method: str, path: str) -> dict[str, Any] | None:
    """A valid body for the routes that take one, so only who asks decides the answer."""
    if method == "POST":
        return {"name": "intruder", "password": PASSWORD, "admin": True}
    return {"admin": True} if method == "PATCH" else None


def filled(path: str, **values: int) -> str:
    return re.sub(r"\{([^}]+)\}", lambda m: str(values.get(m.group(1), 1)), path)


def user_id(admin_client: TestClient, name: str) -> int:
    users = admin_client.get("/api/admin/users").json()["users"]
    return int(next(u["id"] for u in users if u["name"] == name))


def bearer(token: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {token['token']}"}


# -- who may ------------------------------------------------------------------------------


def test_every_admin_route_refuses_a_player_and_a_token_without_the_admin_scope(
    app: Any,
) -> None:
    add(app, "mara", admin=True)
    add(app, "tove")
    mara, tove = signed_in(app, "mara"), signed_in(app, "tove")
    tove_id = user_id(mara, "tove")
    token = tove.post("/api/tokens", json={"name": "t", "scopes": ["read"]}).json()
    mara_token = mara.post("/api/tokens", json={"name": "m", "scopes": ["play", "read"]}).json()
    before = mara.get("/api/admin/users").json()
    routes = admin_routes(app)
    assert len(routes) >= 7  # found from the app: a new admin route is covered without a list
    script = TestClient(app, base_url=LOCAL)
    for method, template in routes:
        path = filled(template, user_id=tove_id, token_id=token["id"])
        for label, who, headers in (
            ("player", tove, {}),
            ("play/read token", script, bearer(mara_token)),
        ):
            answer = who.request(method, path, json=body_for(method, template), headers=headers)
            where = f"{label}: {method} {path}: {answer.status_code} {answer.text[:200]}"
            assert answer.status_code == 403, where
            assert answer.json()["error"]["code"] == "missing_scope", where
            assert "'admin' scope" in answer.json()["error"]["message"], where
    assert mara.get("/api/admin/users").json() == before  # nothing changed
    assert tove.get("/api/auth/me").status_code == 200
    page = tove.get("/admin")
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
    assert "No such page" in page.text and 'href="/admin"' not in page.text
    assert 'href="/admin"' in mara.get("/").text  # the top bar's link, an administrator's only


def test_local_mode_has_no_administration(tmp_path: Path, double: ModelDouble) -> None:
    built = with_admin(create_app(double_settings(tmp_path, double)))
    with TestClient(built, base_url=LOCAL) as client:
        for method, template in admin_routes(built):
            path = filled(template, user_id=7, token_id=7)
            answer = client.request(method, path, json=body_for(method, template))
            assert answer.status_code == 404, (method, path, answer.text)
            assert "local mode" in answer.json()["error"]["message"]
        page = client.get("/admin")
        assert page.status_code == 404 and "local mode" in page.text
        assert 'href="/admin"' not in client.get("/").text


# -- usage --------------------------------------------------------------------------------


def play(client: TestClient, double: ModelDouble, title: str, *turns: tuple[str, str]) -> int:
    """An adventure with ``turns`` (type, text) played on the double, its background work
    done; its id."""
    made = client.post("/api/adventures", json={"scenario": "lantern-coast", "title": title})
    assert made.status_code == 201, made.text
    aid = int(made.json()["id"])
    for kind, text in turns:
        double.script(f"The tide answers {kind}.")
        answer = client.post(f"/api/adventures/{aid}/actions", json={"type": kind, "text": text})
        assert answer.status_code == 200, answer.text
    settled(client, aid)
    return aid


def test_usage_figures_are_what_each_account_played(app: Any, double: ModelDouble) -> None:
    add(app, "mara", admin=True)
    add(app, "tove")
    mara, tove = signed_in(app, "mara"), signed_in(app, "tove")
    signed_in(app, "tove")  # a second browser
    tove.post("/api/tokens", json={"name": "backup", "scopes": ["read"]})
    turns = [("do", "light the lamp"), ("say", "who goes there"), ("continue", "")]
    first = play(tove, double, "First", *turns)
    play(tove, double, "Second", ("story", "The wind drops."))
    played = [kind for kind, _ in turns + [("story", "")] if kind in PLAYER_TYPES]
    actions = tove.get(f"/api/adventures/{first}/actions").json()["actions"]
    assert sum(a["type"] in PLAYER_TYPES for a in actions) == 2  # the story agrees
    calls = tove.get("/api/ai-calls", params={"limit": 500}).json()
    assert calls and len(calls) < 500

    rows = {u["name"]: u for u in mara.get("/api/admin/users").json()["users"]}
    assert list(rows) == ["mara", "tove"]  # by name
    row = rows["tove"]
    assert row["adventures"] == 2
    assert row["turns"] == len(played) == 3  # "continue" is the narrator's, not a turn
    assert row["ai_calls"] == len(calls)
    assert row["tokens_in"] == sum(c["tokens_in"] or 0 for c in calls) > 0
    assert row["tokens_out"] == sum(c["tokens_out"] or 0 for c in calls) > 0
    assert row["sessions"] == 2 and row["api_tokens"] == 1
    assert row["last_seen"] is not None and not row["admin"] and not row["disabled"]
    quiet = rows["mara"]
    assert (quiet["adventures"], quiet["turns"], quiet["ai_calls"], quiet["tokens_in"]) == (
        0,
        0,
        0,
        0,
    )
    assert quiet["admin"] and quiet["sessions"] == 1 and quiet["api_tokens"] == 0


def test_usage_is_one_query_whatever_the_number_of_accounts(app: Any, double: ModelDouble) -> None:
    runtime = app.state.runtime
    add(app, "mara", admin=True)
    statements: list[str] = []

    def count() -> int:
        statements.clear()
        with read_scope(runtime.sessions) as session:
            mine = session.connection()  # the unit's own set-up is not usage's

            def seen(*args: Any) -> None:
                if args[0] is mine:  # background work on other connections is not usage's
                    statements.append(str(args[2]))

            event.listen(runtime.engine, "before_cursor_execute", seen)
            try:
                rows = usage(session)
            finally:
                event.remove(runtime.engine, "before_cursor_execute", seen)
        return len(rows)

    assert count() == 1 and len(statements) == 1
    for n in range(6):
        add(app, f"player{n}")
        play(signed_in(app, f"player{n}"), double, f"Tale {n}", ("do", "wave"))
    assert count() == 7 and len(statements) == 1, statements


# -- nothing of a story -------------------------------------------------------------------

SECRETS = ("Heron of Vellmar", "amber-lighthouse-7731", "obsidian-kettle-4412")


def test_no_story_text_or_title_reaches_an_administrator(app: Any, double: ModelDouble) -> None:
    add(app, "mara", admin=True)
    add(app, "tove")
    mara, tove = signed_in(app, "mara"), signed_in(app, "tove")
    made = tove.post("/api/adventures", json={"scenario": "lantern-coast", "title": SECRETS[0]})
    aid = made.json()["id"]
    double.script(f"The gull answers: {SECRETS[2]}.")
    said = f"I whisper {SECRETS[1]} to the gull"
    assert tove.post(f"/api/adventures/{aid}/actions", json={"text": said}).status_code == 200
    memory = tove.post(f"/api/adventures/{aid}/memories", json={"text": f"Tove said {SECRETS[1]}."})
    assert memory.status_code == 201
    settled(tove, aid)
    token = tove.post("/api/tokens", json={"name": "script", "scopes": ["read"]}).json()
    tove_id = user_id(mara, "tove")
    seen = [mara.get("/admin").text]
    for method, template in admin_routes(app):
        if method == "GET":
            answer = mara.get(filled(template, user_id=tove_id, token_id=token["id"]))
            assert answer.status_code == 200, (template, answer.text)
            seen.append(answer.text)
    changed = mara.patch(f"/api/admin/users/{tove_id}", json={"admin": False, "disabled": False})
    assert changed.status_code == 200
    seen.append(changed.text)
    added = mara.post("/api/admin/users", json={"name": "ilse", "password": PASSWORD})
    seen.append(added.text)
    assert any('"turns":1' in text for text in seen)  # the figures are there, the words not
    for text in seen:
        for secret in SECRETS:
            assert secret not in text


# -- an administrator's own account --------------------------------------------------------


def test_an_administrator_cannot_lock_themselves_out(app: Any) -> None:
    add(app, "mara", admin=True)
    add(app, "ilse", admin=True)
    mara = signed_in(app, "mara")
    me = user_id(mara, "mara")
    for change in ({"disabled": True}, {"admin": False}, {"password": NEW_PASSWORD}):
        answer = mara.patch(f"/api/admin/users/{me}", json=change)
        assert answer.status_code == 409, (change, answer.text)
        assert answer.json()["error"]["code"] == "own_account"
    # a refused change with several parts changes nothing at all
    both = mara.patch(f"/api/admin/users/{me}", json={"password": NEW_PASSWORD, "disabled": True})
    assert both.status_code == 409
    row = next(u for u in mara.get("/api/admin/users").json()["users"] if u["id"] == me)
    assert row["admin"] and not row["disabled"] and row["sessions"] == 1
    assert signed_in(app, "mara").get("/api/auth/me").json()["admin"] is True
    empty = mara.patch(f"/api/admin/users/{me}", json={})
    assert empty.status_code == 400 and "disabled" in empty.json()["error"]["message"]
    # another administrator can
    ilse = signed_in(app, "ilse")
    assert ilse.patch(f"/api/admin/users/{me}", json={"admin": False}).json()["admin"] is False
    assert mara.get("/api/admin/users").status_code == 403
    assert ilse.patch(f"/api/admin/users/{me}", json={"disabled": True}).json()["disabled"]
    assert mara.get("/api/auth/me").status_code == 401


# -- users, passwords, sessions, tokens ----------------------------------------------------


def test_adding_disabling_enabling_and_promoting_a_user(app: Any) -> None:
    add(app, "mara", admin=True)
    mara = signed_in(app, "mara")
    made = mara.post("/api/admin/users", json={"name": "Tove", "password": PASSWORD})
    assert made.status_code == 201, made.text
    tove = made.json()
    assert (tove["name"], tove["admin"], tove["disabled"], tove["turns"]) == (
        "Tove",
        False,
        False,
        0,
    )
    again = mara.post("/api/admin/users", json={"name": "tove", "password": PASSWORD})
    assert again.status_code == 409 and again.json()["error"]["code"] == "name_taken"
    bad = mara.post("/api/admin/users", json={"name": "no spaces", "password": PASSWORD})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "bad_name"
    weak = mara.post("/api/admin/users", json={"name": "ilse", "password": "short"})
    assert weak.status_code == 400 and weak.json()["error"]["code"] == "weak_password"
    assert [u["name"] for u in mara.get("/api/admin/users").json()["users"]] == ["mara", "Tove"]

    client = signed_in(app, "tove")
    off = mara.patch(f"/api/admin/users/{tove['id']}", json={"disabled": True})
    assert off.status_code == 200 and off.json()["disabled"] and off.json()["sessions"] == 0
    assert client.get("/api/auth/me").status_code == 401
    login = {"username": "tove", "password": PASSWORD}
    refused = TestClient(app, base_url=LOCAL).post("/api/auth/login", json=login)
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "account_disabled"
    assert not mara.patch(f"/api/admin/users/{tove['id']}", json={"disabled": False}).json()[
        "disabled"
    ]
    client = signed_in(app, "tove")
    assert client.get("/api/admin/users").status_code == 403
    promoted = mara.patch(f"/api/admin/users/{tove['id']}", json={"admin": True})
    assert promoted.json()["admin"] is True
    assert client.get("/api/admin/users").status_code == 200  # at once, same session


def test_unknown_ids_are_not_found(app: Any) -> None:
    add(app, "mara", admin=True)
    mara = signed_in(app, "mara")
    for method, template in admin_routes(app):
        if "{" not in template:
            continue
        path = filled(template, user_id=999999, token_id=999999)
        answer = mara.request(method, path, json=body_for(method, template))
        assert answer.status_code == 404, (method, path, answer.text)
        assert "999999" in answer.json()["error"]["message"]


def test_a_new_password_signs_the_user_out_everywhere(app: Any) -> None:
    add(app, "mara", admin=True)
    add(app, "tove")
    mara, first, second = signed_in(app, "mara"), signed_in(app, "tove"), signed_in(app, "tove")
    token = first.post("/api/tokens", json={"name": "script", "scopes": ["read"]}).json()
    tove_id = user_id(mara, "tove")
    weak = mara.patch(f"/api/admin/users/{tove_id}", json={"password": "short"})
    assert weak.status_code == 400 and weak.json()["error"]["code"] == "weak_password"
    assert first.get("/api/auth/me").status_code == 200  # a refused reset changes nothing
    reset = mara.patch(f"/api/admin/users/{tove_id}", json={"password": NEW_PASSWORD})
    assert reset.status_code == 200 and reset.json()["sessions"] == 0
    assert first.get("/api/auth/me").status_code == 401
    assert second.get("/api/auth/me").status_code == 401
    old = TestClient(app, base_url=LOCAL).post(
        "/api/auth/login", json={"username": "tove", "password": PASSWORD}
    )
    assert old.status_code == 401
    assert signed_in(app, "tove", NEW_PASSWORD).get("/api/auth/me").status_code == 200
    # and, by default, the tokens the old password could have made are revoked with it
    script = TestClient(app, base_url=LOCAL)
    assert script.get("/api/adventures", headers=bearer(token)).status_code == 401
    assert reset.json()["api_tokens"] == 0


def test_a_reset_keeps_the_tokens_only_when_asked_and_the_option_goes_with_a_password(
    app: Any,
) -> None:
    add(app, "mara", admin=True)
    add(app, "tove")
    mara, tove = signed_in(app, "mara"), signed_in(app, "tove")
    token = tove.post("/api/tokens", json={"name": "script", "scopes": ["read"]}).json()
    tove_id = user_id(mara, "tove")
    alone = mara.patch(f"/api/admin/users/{tove_id}", json={"revoke_tokens": False})
    assert (
        alone.status_code == 400 and "'revoke_tokens' goes with" in alone.json()["error"]["message"]
    )
    with_flag = mara.patch(
        f"/api/admin/users/{tove_id}", json={"disabled": False, "revoke_tokens": True}
    )
    assert with_flag.status_code == 400  # nothing changed: all of a request or none of it
    kept = mara.patch(
        f"/api/admin/users/{tove_id}", json={"password": NEW_PASSWORD, "revoke_tokens": False}
    )
    assert kept.status_code == 200 and kept.json()["api_tokens"] == 1
    script = TestClient(app, base_url=LOCAL)
    assert script.get("/api/adventures", headers=bearer(token)).status_code == 200
    assert tove.get("/api/auth/me").status_code == 401  # signed out all the same


def test_ending_sessions_and_revoking_any_token(app: Any) -> None:
    add(app, "mara", admin=True)
    add(app, "tove")
    mara, tove = signed_in(app, "mara"), signed_in(app, "tove")
    signed_in(app, "tove")
    tove_id, mara_id = user_id(mara, "tove"), user_id(mara, "mara")
    listed = mara.get(f"/api/admin/users/{tove_id}/sessions").json()["sessions"]
    assert len(listed) == 2 and not any(s["current"] for s in listed)
    assert set(listed[0]) == {"id", "created_at", "expires_at", "last_used_at", "current"}
    own = mara.get(f"/api/admin/users/{mara_id}/sessions").json()["sessions"]
    assert [s["current"] for s in own] == [True]
    ended = mara.delete(f"/api/admin/users/{tove_id}/sessions")
    assert ended.status_code == 200 and ended.json() == {"revoked": 2}
    assert tove.get("/api/auth/me").status_code == 401
    assert mara.get(f"/api/admin/users/{tove_id}/sessions").json() == {"sessions": []}
    assert mara.get("/api/auth/me").status_code == 200  # only tove's

    tove = signed_in(app, "tove")
    token = tove.post("/api/tokens", json={"name": "backup", "scopes": ["read"]}).json()
    tokens = mara.get(f"/api/admin/users/{tove_id}/tokens").json()["tokens"]
    assert [t["name"] for t in tokens] == ["backup"] and "token" not in tokens[0]
    assert mara.get(f"/api/admin/users/{mara_id}/tokens").json() == {"tokens": []}
    script = TestClient(app, base_url=LOCAL)
    assert script.get("/api/adventures", headers=bearer(token)).status_code == 200
    assert mara.delete(f"/api/admin/tokens/{token['id']}").json() == {"ok": True}
    assert script.get("/api/adventures", headers=bearer(token)).status_code == 401
    assert mara.delete(f"/api/admin/tokens/{token['id']}").status_code == 404
    assert tove.get("/api/tokens").json() == {"tokens": []}
