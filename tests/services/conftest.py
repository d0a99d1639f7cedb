"""A migrated temporary SQLite database and its session factory, for service tests; and the
app on the model double with the extractive writer (``app_client``), for tests that drive a
service through the API."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker
from tests.conftest import LOCAL, make_settings
from tests.double.server import ModelDouble

from talekeeper.storage import migrate
from talekeeper.storage.db import make_engine, make_session_factory
from talekeeper.web.app import create_app


@pytest.fixture
def sessions(tmp_path: Path) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(f"sqlite:///{tmp_path / 'tk.db'}")
    migrate.upgrade(engine)
    yield make_session_factory(engine)
    engine.dispose()


@pytest.fixture
def app_client(tmp_path: Path, double: ModelDouble) -> Iterator[TestClient]:
    settings = make_settings(
        tmp_path,
        endpoint_url=double.url,
        model="double-narrator",
        embedding_model="double-embed",
        summary_model="extractive",
        timeout="5",
    )
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        yield client
