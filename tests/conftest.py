"""Shared fixtures: a loopback model double, a migrated temporary database, an app client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from argon2 import PasswordHasher
from fastapi.testclient import TestClient
from tests.double.server import ModelDouble

from talekeeper.services.accounts import create_user
from talekeeper.settings import Settings, load_settings
from talekeeper.storage.db import session_scope
from talekeeper.web.app import create_app

# The Host the test clients send: the app answers only loopback names (and those the
# host allows), never FastAPI's default "testserver".
LOCAL = "http://localhost"


@pytest.fixture
def double() -> Iterator[ModelDouble]:
    with ModelDouble() as server:
        yield server


def make_settings(tmp_path: Path, **env: str) -> Settings:
    values = {"TALEKEEPER_DATA_DIR": str(tmp_path / "data")}
    values.update({"TALEKEEPER_" + k.upper(): v for k, v in env.items()})
    return load_settings(values)


def double_settings(tmp_path: Path, double: ModelDouble, **env: str) -> Settings:
    """Every model on the double (narrator, embeddings, summaries), with ``env`` over it."""
    values = {
        "endpoint_url": double.url,
        "model": "double-narrator",
        "embedding_model": "double-embed",
        "summary_model": "double-summary",
        "timeout": "2",
    }
    return make_settings(tmp_path, **(values | env))


@pytest.fixture
def endpoint_settings(tmp_path: Path, double: ModelDouble) -> Settings:
    return double_settings(tmp_path, double)


@pytest.fixture
def client(endpoint_settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(endpoint_settings), base_url=LOCAL) as test_client:
        yield test_client


@pytest.fixture
def local_client(endpoint_settings: Settings) -> Iterator[TestClient]:
    """Local mode only, where a module runs its other tests in both modes (``each_mode``)."""
    with TestClient(create_app(endpoint_settings), base_url=LOCAL) as test_client:
        yield test_client


@pytest.fixture
def app_client(tmp_path: Path, double: ModelDouble) -> Iterator[TestClient]:
    """The app on the model double with the extractive writer, for tests that drive the
    memory system through the API."""
    settings = double_settings(tmp_path, double, summary_model="extractive", timeout="5")
    with TestClient(create_app(settings), base_url=LOCAL) as test_client:
        yield test_client


# Accounts mode for tests: argon2 at its lowest cost for the accounts the tests make (sign-in
# verifies with the parameters stored in the hash).
TEST_HASHER = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
TEST_PASSWORD = "correct horse battery"
MODES = ("local", "accounts")


def each_mode(mode: str, tmp_path: Path, double: ModelDouble, **env: str) -> Iterator[TestClient]:
    """The app on the double in ``mode``: in accounts mode, signed in (its cookie kept by the
    client) as an account that took over the local user, so every route is exercised through
    the auth layer as a player's browser would."""
    if mode == "local":
        settings = double_settings(tmp_path, double, **env)
    else:
        settings = double_settings(tmp_path, double, auth="accounts", **env)
    with TestClient(create_app(settings), base_url=LOCAL) as test_client:
        if mode == "accounts":
            runtime = test_client.app.state.runtime  # type: ignore[attr-defined]
            with session_scope(runtime.sessions) as session:
                create_user(session, "player", TEST_PASSWORD, hasher=TEST_HASHER)
            answer = test_client.post(
                "/api/auth/login", json={"username": "player", "password": TEST_PASSWORD}
            )
            assert answer.status_code == 200, answer.text
        yield test_client
