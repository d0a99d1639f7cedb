"""A migrated temporary database (SQLite, or PostgreSQL with ``--db=postgresql``) and its
session factory, for service tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker
from tests.conftest import database_url

from talekeeper.storage import migrate
from talekeeper.storage.db import make_engine, make_session_factory


@pytest.fixture
def sessions(tmp_path: Path) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(database_url(tmp_path / "tk.db"))
    migrate.upgrade(engine)
    yield make_session_factory(engine)
    engine.dispose()
