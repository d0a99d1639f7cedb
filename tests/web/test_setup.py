"""The one-time setup link of a new server in accounts mode: it makes the first administrator
(who takes over the local user's stories) and signs them in, once; a wrong, spent or
earlier link, local mode, and a server that has an account all answer the same 404; and an
account made meanwhile (``talekeeper users add``, or a second request with the same link)
closes it inside the write transaction. Real app, real migrated SQLite, real argon2."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from tests.conftest import LOCAL, double_settings
from tests.kit.accounts import CHEAP, PASSWORD, Announced, built

from talekeeper.services.accounts import create_user, list_users
from talekeeper.services.accounts.setup import SetupClosed, SetupSecret, first_admin
from talekeeper.settings import Settings
from talekeeper.storage.db import read_scope, session_scope
from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble
from talekeeper_testkit.live import serving


@pytest.fixture
def accounts_settings(tmp_path: Path, double: ModelDouble) -> Settings:
    return double_settings(tmp_path, double, auth="accounts")


@pytest.fixture
def fresh(accounts_settings: Settings) -> Iterator[tuple[Any, Announced]]:
    """A new server in accounts mode, no account yet, and the link its start announced."""
    announced = Announced()
    app = built(accounts_settings, announced)
    with TestClient(app, base_url=LOCAL):
        yield app, announced


def post(client: TestClient, secret: str, name: str = "mara", password: str = PASSWORD) -> Any:
    body = {"secret": secret, "username": name, "password": password}
    return client.post("/api/auth/setup", json=body)


def account_names(app: Any) -> list[str]:
    with read_scope(app.state.runtime.sessions) as session:
        return [account.name for account in list_users(session)]


def test_the_link_makes_the_first_admin_who_takes_over_the_local_stories_and_is_signed_in(
    tmp_path: Path, double: ModelDouble
) -> None:
    local = double_settings(tmp_path, double)
    with TestClient(create_app(local), base_url=LOCAL) as played:  # played in local mode first
        made = played.post("/api/adventures", json={"scenario": "lantern-coast"})
        assert made.status_code == 201, made.text
    announced = Announced()
    app = built(double_settings(tmp_path, double, auth="accounts"), announced)
    with TestClient(app, base_url=LOCAL) as browser:
        assert announced.path.startswith("/setup#") and len(announced.secret) >= 43
        page = browser.get(announced.path)
        assert page.status_code == 200 and 'id="setup-form"' in page.text
        assert "double-narrator" not in page.text  # nothing of the server before sign-in
        assert announced.secret not in page.text  # the page reads it from its own address
        assert page.headers["cache-control"] == "no-store"

        weak = post(browser, announced.secret, password="short")
        assert weak.status_code == 400 and weak.json()["error"]["code"] == "weak_password"
        bad = post(browser, announced.secret, name="not a name")
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "bad_name"
        assert account_names(app) == []  # refused, and the link still works:

        created = post(browser, announced.secret, name="Mara")
        assert created.status_code == 200, created.text
        assert created.json() == {"name": "Mara", "admin": True, "mode": "accounts"}
        cookie = created.headers["set-cookie"].lower()
        assert "tk_session=" in cookie and "httponly" in cookie and "samesite=lax" in cookie
        assert browser.get("/api/auth/me").json()["name"] == "Mara"  # signed in
        assert app.state.setup.spent  # not only refused by the database from now on
        stories = browser.get("/api/adventures").json()
        assert [s["id"] for s in stories] == [made.json()["id"]]  # the local user's, now hers

        again = post(TestClient(app, base_url=LOCAL), announced.secret, name="eve")
        assert again.status_code == 404 and again.json()["error"]["code"] == "not_found"
        spent = TestClient(app, base_url=LOCAL).get(announced.path)
        assert spent.status_code == 404 and "setup-form" not in spent.text
        assert "No such page" in spent.text
    assert account_names(app) == ["Mara"]


@pytest.mark.parametrize("kind", ["wrong", "prefix", "longer", "long", "empty-ish"])
def test_a_wrong_secret_gets_the_same_not_found_and_makes_nothing(
    fresh: tuple[Any, Announced], kind: str
) -> None:
    app, announced = fresh
    right = announced.secret
    guess = {
        "wrong": "A" * len(right),
        "prefix": right[:-1],
        "longer": right + "A",
        "long": "x" * 199,
        "empty-ish": "-",
    }[kind]
    anonymous = TestClient(app, base_url=LOCAL)
    refused = post(anonymous, guess)
    assert refused.status_code == 404
    assert refused.json()["error"]["message"] == SetupClosed().message
    assert account_names(app) == []
    assert post(anonymous, right).status_code == 200  # the real one was left usable


def test_an_account_made_meanwhile_closes_the_link_inside_the_write(
    fresh: tuple[Any, Announced],
) -> None:
    app, announced = fresh
    anonymous = TestClient(app, base_url=LOCAL)
    assert anonymous.get(announced.path).status_code == 200  # opened while no account existed
    with session_scope(app.state.runtime.sessions) as session:  # as 'talekeeper users add'
        create_user(session, "tove", PASSWORD, admin=False, hasher=CHEAP)
    refused = post(anonymous, announced.secret, name="eve")
    assert refused.status_code == 404
    assert account_names(app) == ["tove"]  # no second administrator appeared
    assert app.state.setup.spent
    assert anonymous.get("/api/auth/me").status_code == 401


def test_two_requests_with_the_link_at_once_make_one_administrator(
    accounts_settings: Settings,
) -> None:
    announced = Announced()
    app = built(accounts_settings, announced)
    with serving(app) as (url, _loop):  # real uvicorn: the two posts run at the same time
        start = threading.Barrier(2)
        codes: dict[str, int] = {}

        def claim(name: str) -> None:
            with httpx.Client(base_url=url, timeout=30) as client:
                start.wait()
                codes[name] = post_http(client, announced.secret, name)

        threads = [threading.Thread(target=claim, args=(name,)) for name in ("mara", "eve")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert sorted(codes.values()) == [200, 404], codes
    winner = next(name for name, code in codes.items() if code == 200)
    assert account_names(app) == [winner]


def post_http(client: httpx.Client, secret: str, name: str) -> int:
    body = {"secret": secret, "username": name, "password": PASSWORD}
    return client.post("/api/auth/setup", json=body).status_code


def test_first_admin_refuses_once_any_account_exists_and_changes_nothing(
    fresh: tuple[Any, Announced],
) -> None:
    app, _ = fresh
    sessions = app.state.runtime.sessions
    with session_scope(sessions) as session:
        create_user(session, "tove", PASSWORD, hasher=CHEAP)
    for name in ("eve", "TOVE"):  # a new name, and the taken one
        with pytest.raises(SetupClosed), session_scope(sessions) as session:
            first_admin(session, name, PASSWORD, hasher=CHEAP)
    with read_scope(sessions) as session:
        assert [(a.name, a.is_admin) for a in list_users(session)] == [("tove", False)]


def test_a_server_that_has_an_account_makes_no_link(accounts_settings: Settings) -> None:
    first = Announced()
    app = built(accounts_settings, first)
    with TestClient(app, base_url=LOCAL) as client:
        assert post(client, first.secret).status_code == 200
    restarted = Announced()
    app = built(accounts_settings, restarted)
    with TestClient(app, base_url=LOCAL) as client:
        assert restarted.paths == [] and app.state.setup is None
        assert client.get(first.path).status_code == 404  # the earlier start's link is gone


def test_local_mode_makes_no_link(tmp_path: Path, double: ModelDouble) -> None:
    announced = Announced()
    app = built(double_settings(tmp_path, double), announced)
    with TestClient(app, base_url=LOCAL) as client:
        assert announced.paths == [] and app.state.setup is None
        assert client.get("/setup").status_code == 404
        assert post(client, "anything").status_code == 404


def test_the_secret_is_kept_only_as_its_digest_and_spends_once() -> None:
    secret, raw = SetupSecret.make()
    assert len(raw) >= 43  # 256 bits, URL-safe
    assert raw not in repr(vars(secret))
    assert secret.matches(raw) and not secret.matches(raw.upper()) and not secret.matches("")
    assert not secret.matches(raw * 10)
    other, other_raw = SetupSecret.make()
    assert other_raw != raw and not other.matches(raw)
    secret.spend()
    assert secret.spent and not secret.matches(raw)
