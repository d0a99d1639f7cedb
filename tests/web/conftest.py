"""Fixtures the web tests share: an app in accounts mode with two players."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from tests.conftest import LOCAL, double_settings
from tests.kit.accounts import CHEAP, PASSWORD

from talekeeper.services.accounts import create_user
from talekeeper.storage.db import session_scope
from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble


@pytest.fixture
def accounts(tmp_path: Path, double: ModelDouble) -> Iterator[TestClient]:
    """One client for the app's whole life (the background work runs on its event loop),
    in accounts mode, with the players "mara" and "tal" (password ``PASSWORD``); sign in
    as one with ``tests.kit.accounts.As``."""
    built = create_app(double_settings(tmp_path, double, auth="accounts"))
    with TestClient(built, base_url=LOCAL) as client:
        with session_scope(built.state.runtime.sessions) as session:
            for name in ("mara", "tal"):
                create_user(session, name, PASSWORD, hasher=CHEAP)
        yield client
