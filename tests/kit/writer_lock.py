"""Another connection to the app's database that holds its one writer lock, taken from
outside as another process would: on SQLite a plain ``sqlite3`` connection's ``BEGIN
IMMEDIATE``, on PostgreSQL the advisory lock the app's writers take."""

from __future__ import annotations

import sqlite3
from typing import Any

import psycopg
from sqlalchemy.engine import make_url

from talekeeper.storage.postgresql import WRITER_LOCK
from talekeeper_testkit import pg


class OutsideLock:
    """Another connection to the app's database (opened once the app has created it)
    that can hold the one writer lock."""

    def __init__(self, url: str) -> None:
        self.url = make_url(url)
        self.connection: sqlite3.Connection | psycopg.Connection[Any] | None = None

    def take(self) -> None:
        if self.url.get_backend_name() == "postgresql":
            if self.connection is None:
                self.connection = pg.connect(self.url.render_as_string(hide_password=False))
            assert isinstance(self.connection, psycopg.Connection)
            self.connection.execute("SELECT pg_advisory_xact_lock(%s)", (WRITER_LOCK,))
            return
        if self.connection is None:
            self.connection = sqlite3.connect(
                str(self.url.database), isolation_level=None, check_same_thread=False, timeout=30
            )
        assert isinstance(self.connection, sqlite3.Connection)
        self.connection.execute("BEGIN IMMEDIATE")

    def release(self) -> None:
        if isinstance(self.connection, psycopg.Connection):
            self.connection.rollback()
            return
        assert self.connection is not None
        self.connection.execute("ROLLBACK")

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
