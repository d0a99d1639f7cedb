"""Secrets at rest: the data directory and the database files are the owner's alone, and
no story text or key reaches a logged database error."""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from tests.conftest import LOCAL, make_settings

from talekeeper.web.app import create_app

SECRET_KEY = "sk-private-0123456789"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.sqlite_only("the modes of SQLite's own files")
def test_a_new_data_dir_and_its_database_files_are_private(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, fresh=True, api_key=SECRET_KEY)
    data = Path(settings.data_dir)
    assert not data.exists()
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        created = client.post("/api/adventures", json={"scenario": "lantern-coast"})
        assert created.status_code == 201, created.text
        modes = {p.name: _mode(p) for p in data.iterdir() if p.name.startswith("talekeeper.db")}
    assert _mode(data) == 0o700
    assert set(modes) >= {"talekeeper.db", "talekeeper.db-wal", "talekeeper.db-shm"}
    assert set(modes.values()) == {0o600}


@pytest.mark.sqlite_only("the modes of SQLite's own files")
def test_an_existing_database_readable_by_others_is_tightened_at_start(tmp_path: Path) -> None:
    data = tmp_path / "shared"
    data.mkdir(mode=0o755)
    data.chmod(0o755)
    database = data / "talekeeper.db"
    old = sqlite3.connect(database)
    old.execute("PRAGMA journal_mode=WAL")
    old.execute("CREATE TABLE leftover (x)")
    old.commit()
    for name in ("talekeeper.db", "talekeeper.db-wal", "talekeeper.db-shm"):
        os.chmod(data / name, 0o644)
    settings = make_settings(tmp_path, data_dir=str(data))
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        assert client.get("/api/health").status_code == 200
        modes = {p.name: _mode(p) for p in data.iterdir() if p.name.startswith("talekeeper.db")}
    old.close()
    assert set(modes) >= {"talekeeper.db", "talekeeper.db-wal", "talekeeper.db-shm"}
    assert set(modes.values()) == {0o600}
    assert _mode(data) == 0o755  # a directory we did not create is the owner's business
