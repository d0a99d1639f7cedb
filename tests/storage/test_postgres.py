"""PostgreSQL itself (collected only with ``--db=postgresql``): the writer lock and the
read snapshot, every way the server says "not now" becoming ``DatabaseBusy`` (a lock
wait that ran out, a serialization failure, a deadlock, a server that refuses
connections), ids past 32 bits, and SQL parameters kept out of logged errors.

Real parts: the throwaway cluster of ``talekeeper_testkit.pg``, a database of each test's own,
plain ``psycopg`` connections standing in for other processes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker
from tests.conftest import LOCAL, database_url, make_settings

from talekeeper.core.errors import DatabaseBusy
from talekeeper.storage import migrate
from talekeeper.storage.db import (
    busy_error,
    is_busy,
    make_engine,
    make_session_factory,
    read_scope,
    session_scope,
)
from talekeeper.storage.models import User
from talekeeper.storage.postgresql import WRITER_LOCK
from talekeeper.web.app import create_app
from talekeeper_testkit import pg

pytestmark = pytest.mark.postgresql_only("about PostgreSQL's own locks, errors and types")


@pytest.fixture
def url(tmp_path: Path) -> str:
    return database_url(tmp_path / "tk.db")


@pytest.fixture
def sessions(url: str) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(url)
    migrate.upgrade(engine)
    yield make_session_factory(engine)
    engine.dispose()


def _error(url: str, sql: str) -> psycopg.Error:
    """The error the server answers ``sql`` with, on a connection of its own."""
    with pg.connect(url, autocommit=True) as connection, pytest.raises(psycopg.Error) as raised:
        connection.execute(sql)
    return raised.value


def test_a_writer_waits_for_the_writer_lock_and_a_reader_does_not(url: str) -> None:
    engine = make_engine(f"{url}&timeout=0.2")
    sessions = make_session_factory(engine)
    with pg.connect(url) as outside:
        outside.execute("SELECT pg_advisory_xact_lock(%s)", (WRITER_LOCK,))
        began = time.monotonic()
        with read_scope(sessions) as session:
            assert session.scalar(select(User.name)) == "local"
        assert time.monotonic() - began < 0.5
        began = time.monotonic()
        with pytest.raises(DatabaseBusy), session_scope(sessions, attempts=2) as session:
            session.add(User(name="never"))
        assert time.monotonic() - began >= 0.4  # two busy timeouts of 0.2 s
        outside.rollback()
    with session_scope(sessions) as session:  # the lock is free again: the write goes in
        session.add(User(name="at last"))
    with read_scope(sessions) as session:
        assert set(session.scalars(select(User.name))) == {"local", "at last"}
    engine.dispose()


def test_a_write_in_a_read_unit_is_refused_by_the_server(
    sessions: sessionmaker[Session],
) -> None:
    with pytest.raises(DBAPIError, match="read-only transaction"), read_scope(sessions) as s:
        s.execute(text("UPDATE users SET name = 'renamed'"))
    with read_scope(sessions) as session:
        assert session.scalar(select(User.name)) == "local"


def test_a_serialization_failure_is_busy(url: str) -> None:
    """Two REPEATABLE READ transactions change one row: the second to write fails with
    40001, which means "try again", never a server error."""
    with pg.connect(url) as first, pg.connect(url) as second:
        for connection in (first, second):
            connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            connection.execute("SELECT name FROM users").fetchall()
        first.execute("UPDATE users SET name = 'first'")
        first.commit()
        with pytest.raises(psycopg.Error) as raised:
            second.execute("UPDATE users SET name = 'second'")
    assert raised.value.sqlstate == "40001"
    assert is_busy(raised.value) and isinstance(busy_error(raised.value), DatabaseBusy)


def test_a_deadlock_is_busy(url: str) -> None:
    """Two transactions lock two rows in opposite orders: the server ends one with
    40P01."""
    with pg.connect(url, autocommit=True) as setup:
        setup.execute("INSERT INTO users (name, created_at) VALUES ('other', now())")
    errors: list[psycopg.Error] = []
    both_hold_one = threading.Barrier(2)

    def lock(first: str, then: str) -> None:
        with pg.connect(url) as connection:
            connection.execute("SET lock_timeout = '10s'")
            connection.execute("SELECT 1 FROM users WHERE name = %s FOR UPDATE", (first,))
            both_hold_one.wait()
            try:
                connection.execute("SELECT 1 FROM users WHERE name = %s FOR UPDATE", (then,))
            except psycopg.Error as exc:
                errors.append(exc)

    threads = [
        threading.Thread(target=lock, args=("local", "other")),
        threading.Thread(target=lock, args=("other", "local")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [e.sqlstate for e in errors] == ["40P01"]
    assert is_busy(errors[0])


def test_a_server_that_refuses_connections_is_busy(url: str) -> None:
    nowhere = make_engine("postgresql+psycopg://postgres@/nothing?host=/nonexistent")
    with pytest.raises(DatabaseBusy), session_scope(make_session_factory(nowhere)) as session:
        session.scalar(select(User.id))
    nowhere.dispose()


def test_errors_that_are_not_busy_stay_errors(url: str) -> None:
    for sql, state in (
        ("SELECT * FROM no_such_table", "42P01"),
        ("INSERT INTO users (name, created_at) VALUES ('local', now())", "23505"),
        ("SELECT 1/0", "22012"),
    ):
        error = _error(url, sql)
        assert error.sqlstate == state and not is_busy(error), sql


def test_the_app_answers_503_while_the_server_refuses_connections(tmp_path: Path) -> None:
    """The server takes no more connections for the app's role (as when it is full): the
    app's connections are ended, and each request is a 503 that says to try again, never
    a 500; once it takes connections again, the app goes on."""
    url = make_url(database_url(tmp_path / "data"))
    with pg.connect(url.render_as_string(hide_password=False), autocommit=True) as owner:
        owner.execute("CREATE ROLE player LOGIN")
        owner.execute("GRANT ALL ON ALL TABLES IN SCHEMA public TO player")
        owner.execute("GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO player")
    as_player = url.set(username="player").render_as_string(hide_password=False)
    settings = make_settings(tmp_path, database_url=as_player)
    assert pg.active is not None
    with (
        TestClient(create_app(settings), base_url=LOCAL) as client,
        pg.active.cluster.admin() as admin,
    ):
        assert client.post("/api/adventures", json={"title": "Before"}).status_code == 201
        admin.execute("ALTER ROLE player CONNECTION LIMIT 0")
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'player'"
        )
        try:
            for answer in (
                client.get("/api/adventures"),
                client.post("/api/adventures", json={"title": "Never"}),
            ):
                assert answer.status_code == 503, answer.text
                assert answer.json()["error"]["code"] == "database_busy"
                assert answer.headers["Retry-After"]
            probe = client.get("/api/ready")  # what a load balancer sees meanwhile
            assert probe.status_code == 503 and probe.json() == {"status": "down"}
            assert probe.headers["Retry-After"]
        finally:
            admin.execute("ALTER ROLE player CONNECTION LIMIT -1")
        assert client.get("/api/ready").json() == {"status": "ok"}
        assert [a["title"] for a in client.get("/api/adventures").json()] == ["Before"]
    with pg.active.cluster.admin() as admin:  # roles belong to the cluster, not the database
        admin.execute(f"DROP DATABASE {url.database} WITH (FORCE)")
        admin.execute("DROP ROLE player")


def test_ids_past_32_bits_are_stored_and_found(sessions: sessionmaker[Session]) -> None:
    """Row ids are BIGINT: a row numbered past 2**31 is written, read and named in a URL
    (an id a client may send, up to 2**63 - 1, is a 404 when absent, never a 500)."""
    big = 2**40
    with session_scope(sessions) as session:
        session.execute(text(f"SELECT setval('users_id_seq', {big})"))
        session.add(User(name="far"))
    with read_scope(sessions) as session:
        assert session.scalar(select(User.id).where(User.name == "far")) == big + 1
