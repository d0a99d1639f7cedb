"""The sign-in throttle through the real app, played as an attacker: who the client is (a
forged ``X-Forwarded-For`` is believed from a trusted proxy alone), an attacker's guesses
never locking the owner out from another address, and two app objects on one database
(two processes, as far as the throttle can tell) counting together. Real app, real
migrated database (SQLite, or PostgreSQL with ``--db=postgresql``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from tests.conftest import LOCAL, double_settings
from tests.kit.accounts import PASSWORD, add

from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble

WRONG = {"username": "admin", "password": "not the password"}
RIGHT = {"username": "admin", "password": PASSWORD}
ATTACKER = "198.51.100.66"
OWNER = "203.0.113.7"
PROXY = "10.0.0.2"


def built(tmp_path: Path, double: ModelDouble, **env: str) -> FastAPI:
    return create_app(double_settings(tmp_path, double, auth="accounts", **env))


@pytest.fixture
def app(tmp_path: Path, double: ModelDouble) -> Iterator[Any]:
    made = built(tmp_path, double)
    with TestClient(made, base_url=LOCAL):
        add(made, "admin", admin=True)
        yield made


@pytest.fixture
def proxied(tmp_path: Path, double: ModelDouble) -> Iterator[Any]:
    """The app behind a trusted proxy at ``PROXY`` (and loopback)."""
    made = built(tmp_path, double, trusted_proxies=f"{PROXY}, 127.0.0.1, ::1")
    with TestClient(made, base_url=LOCAL):
        add(made, "admin", admin=True)
        yield made


def from_(app: Any, peer: str) -> TestClient:
    """A client whose connection comes from ``peer``."""
    return TestClient(app, base_url=LOCAL, client=(peer, 40000))


def login(client: TestClient, body: dict[str, str], forwarded: str | None = None) -> int:
    headers = {} if forwarded is None else {"X-Forwarded-For": forwarded}
    return client.post("/api/auth/login", json=body, headers=headers).status_code


def test_an_attacker_guessing_the_admins_password_never_locks_the_admin_out(app: Any) -> None:
    attacker = from_(app, ATTACKER)
    met = [login(attacker, WRONG) for _ in range(12)]
    assert met == [401] * 5 + [429] * 7
    assert login(attacker, RIGHT) == 429  # that pair is locked, whatever the password
    owner = from_(app, OWNER)
    assert login(owner, RIGHT) == 200
    assert owner.get("/api/auth/me").json()["name"] == "admin"


def test_a_spray_meets_the_ceiling_only_at_addresses_that_failed(app: Any) -> None:
    spray = [from_(app, f"198.51.100.{n}") for n in range(1, 21)]
    assert [login(client, WRONG) for client in spray] == [401] * 20
    throttled = spray[0].post("/api/auth/login", json=RIGHT)
    assert throttled.status_code == 429 and int(throttled.headers["retry-after"]) >= 1
    fresh = from_(app, "198.51.100.21")
    assert [login(fresh, WRONG), login(fresh, WRONG)] == [401, 429]
    assert login(from_(app, OWNER), RIGHT) == 200


def test_a_forged_forwarded_for_from_an_untrusted_peer_is_ignored(app: Any) -> None:
    for peer in (ATTACKER, "127.0.0.1"):  # loopback is no proxy unless it is listed
        attacker = from_(app, peer)
        met = [login(attacker, WRONG, forwarded=f"192.0.2.{n}") for n in range(6)]
        assert met == [401] * 5 + [429], peer  # counted as the peer, whatever it claims
        assert login(attacker, RIGHT, forwarded=OWNER) == 429
    assert login(from_(app, OWNER), RIGHT) == 200


def test_behind_a_trusted_proxy_the_client_it_reports_is_counted(proxied: Any) -> None:
    proxy = from_(proxied, PROXY)
    assert [login(proxy, WRONG, forwarded=ATTACKER) for _ in range(6)] == [401] * 5 + [429]
    # what the attacker writes to the left of the proxy's own entry changes nothing
    for forged in ("203.0.113.9", OWNER, "not an address"):
        assert login(proxy, WRONG, forwarded=f"{forged}, {ATTACKER}") == 429
    assert login(proxy, RIGHT, forwarded=OWNER) == 200  # another client of the same proxy
    # through two trusted proxies, the right-most address that is no proxy is the client
    assert login(proxy, RIGHT, forwarded=f"{ATTACKER}, 127.0.0.1") == 429
    assert login(proxy, RIGHT, forwarded=f"{ATTACKER}, {OWNER}, 127.0.0.1") == 200


def test_the_cookie_is_secure_only_when_a_trusted_proxy_says_https(proxied: Any) -> None:
    headers = {"X-Forwarded-Proto": "https", "X-Forwarded-For": OWNER}
    behind = from_(proxied, PROXY).post("/api/auth/login", json=RIGHT, headers=headers)
    assert behind.status_code == 200 and "secure" in behind.headers["set-cookie"].lower()
    direct = from_(proxied, ATTACKER).post("/api/auth/login", json=RIGHT, headers=headers)
    assert direct.status_code == 200 and "secure" not in direct.headers["set-cookie"].lower()


def test_two_app_objects_on_one_database_count_together(
    tmp_path: Path, double: ModelDouble
) -> None:
    first, second = built(tmp_path, double), built(tmp_path, double)
    with TestClient(first, base_url=LOCAL), TestClient(second, base_url=LOCAL):
        add(first, "admin", admin=True)
        one, two = from_(first, ATTACKER), from_(second, ATTACKER)
        assert [login(one if n % 2 else two, WRONG) for n in range(5)] == [401] * 5
        assert login(one, RIGHT) == 429 and login(two, RIGHT) == 429
        assert login(from_(second, OWNER), RIGHT) == 200


def test_the_current_password_check_is_throttled_like_a_sign_in(app: Any) -> None:
    browser = from_(app, OWNER)
    assert login(browser, RIGHT) == 200
    change = {"current": "not the password", "new": "a brand new secret"}
    met = [browser.post("/api/auth/password", json=change).status_code for _ in range(6)]
    assert met == [401] * 5 + [429]
    assert login(from_(app, ATTACKER), RIGHT) == 200  # elsewhere the account is open
