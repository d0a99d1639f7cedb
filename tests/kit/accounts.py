"""Accounts mode through the app: the password and the cheap argon2 hasher the tests'
accounts are made with, adding an account and signing it in, requests as one account on a
shared client (``As``), and the one-time setup link a new server announces."""

from __future__ import annotations

from typing import Any

from argon2 import PasswordHasher
from fastapi import FastAPI
from fastapi.testclient import TestClient
from tests.conftest import LOCAL

from talekeeper.services.accounts import create_user
from talekeeper.settings import Settings
from talekeeper.storage.db import session_scope
from talekeeper.web.app import create_app

CHEAP = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
PASSWORD = "correct horse battery"


def add(app: Any, name: str, admin: bool = False) -> None:
    with session_scope(app.state.runtime.sessions) as session:
        create_user(session, name, PASSWORD, admin=admin, hasher=CHEAP)


def signed_in(app: Any, name: str, password: str = PASSWORD) -> TestClient:
    client = TestClient(app, base_url=LOCAL)
    answer = client.post("/api/auth/login", json={"username": name, "password": password})
    assert answer.status_code == 200, answer.text
    return client


class As:
    """Requests through ``base`` signed in as one account (its own session cookie, sent
    by hand: the shared client keeps no cookie)."""

    def __init__(self, base: TestClient, name: str) -> None:
        answer = base.post("/api/auth/login", json={"username": name, "password": PASSWORD})
        assert answer.status_code == 200, answer.text
        self.base, self.cookie = base, f"tk_session={answer.cookies['tk_session']}"
        base.cookies.clear()

    def request(self, method: str, url: str, **kwargs: Any) -> Any:
        headers = {**kwargs.pop("headers", {}), "Cookie": self.cookie}
        return self.base.request(method, url, headers=headers, **kwargs)

    def get(self, url: str, **kwargs: Any) -> Any:
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> Any:
        return self.request("POST", url, **kwargs)

    def patch(self, url: str, **kwargs: Any) -> Any:
        return self.request("PATCH", url, **kwargs)

    def delete(self, url: str, **kwargs: Any) -> Any:
        return self.request("DELETE", url, **kwargs)


def played_by_two(accounts: TestClient, title: str) -> tuple[As, As, int]:
    """An adventure "mara" hosts as Mara and "tal" joined as a player, Tal: the two, and
    its id."""
    mara, tal = As(accounts, "mara"), As(accounts, "tal")
    made = mara.post("/api/adventures", json={"title": title, "persona": {"name": "Mara"}})
    aid = int(made.json()["id"])
    code = mara.post(f"/api/adventures/{aid}/invites", json={}).json()["code"]
    joined = tal.post(f"/api/invites/{code}/join", json={"persona": {"name": "Tal"}})
    assert joined.status_code == 200, joined.text
    return mara, tal, aid


class Announced:
    """What the app's start handed to ``app.state.announce_setup``."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    def __call__(self, path: str) -> None:
        self.paths.append(path)

    @property
    def path(self) -> str:
        assert len(self.paths) == 1, self.paths
        return self.paths[0]

    @property
    def secret(self) -> str:
        return self.path.removeprefix("/setup#")


def built(settings: Settings, announced: Announced) -> FastAPI:
    app = create_app(settings)
    app.state.announce_setup = announced
    return app
