"""SQLite: one file, one writer at a time.

Invariants:

- SQLite runs with WAL journaling (readers never block the one writer),
  foreign keys enforced and a busy timeout, set on every new connection.
  SQLAlchemy emits ``BEGIN`` itself (the driver's own transaction control is
  off), so a unit of work is one transaction from its first statement, reads
  included.
- A unit that may write (``session_scope``, and a plain ``engine.begin()`` or
  ``engine.connect()``) starts with ``BEGIN IMMEDIATE``: it takes the one write lock
  before its first statement, so a transaction that reads and then writes never meets
  a commit made in between (in WAL, a deferred transaction that upgrades to a write
  after another connection committed fails at once, without waiting). A read unit
  starts a deferred ``BEGIN`` on a connection set to ``query_only``: readers never
  queue behind a writer, and a read unit that tries to write fails loudly.
- Waiting for the write lock is bounded (``locking.wait_for``), retrying
  ``BEGIN IMMEDIATE`` while SQLite's busy handler gives up within that time. The lock
  is taken before anything is written, so a unit that gives up has changed nothing.
- The writers of one process take turns in the order they asked (``WriterQueue``)
  before they ask SQLite: its busy handler polls with sleeps of up to 100 ms, so under
  steady load a waiting writer could lose to newcomers again and again; in the queue
  only the writer at its head waits in SQLite, and only for another process's writer.
  A writer holds its place from ``BEGIN IMMEDIATE`` to its commit or rollback (or,
  whatever happens, until its connection goes back to the pool).
- Secrets at rest: the directory of the database file is created private (0700) when
  it is created here; the database file is created 0600 before SQLite opens it (SQLite
  gives its ``-wal`` and ``-shm`` files the database file's mode), and an existing
  database's files are tightened to 0600.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
import threading
import time
from collections import deque
from contextlib import suppress
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError

from talekeeper.storage.locking import READ_ONLY, busy, busy_timeout, wait_for

log = logging.getLogger(__name__)

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600

_IN_TURN = "talekeeper_writer_turn"  # in a pooled connection's info: it holds the queue
_BUSY_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def sqlite_engine(url: URL) -> Engine:
    timeout = busy_timeout(url)
    path = database_path(url)
    if path is not None:
        private_database(path)
    engine = create_engine(url, connect_args={"timeout": timeout}, hide_parameters=True)
    writers = WriterQueue()
    event.listen(engine, "connect", _sqlite_connect(round(timeout * 1000)))
    event.listen(engine, "begin", _begin(writers, timeout))

    def done(connection: Connection) -> None:
        _leave(writers, connection.info)

    def returned(_dbapi_connection: Any, record: Any) -> None:
        if record is not None:  # whatever ended the transaction, the place is given up
            _leave(writers, record.info)

    def reset(dbapi_connection: Any, record: Any, _state: Any) -> None:
        returned(dbapi_connection, record)

    def invalidated(dbapi_connection: Any, record: Any, _exc: Any) -> None:
        returned(dbapi_connection, record)

    event.listen(engine, "commit", done)
    event.listen(engine, "rollback", done)
    event.listen(engine, "reset", reset)
    event.listen(engine, "checkin", returned)
    event.listen(engine, "invalidate", invalidated)
    return engine


def database_path(url: URL) -> Path | None:
    """The database file a SQLite URL names; None for an in-memory database or a URI."""
    database = url.database
    if not database or database == ":memory:" or "uri" in url.query:
        return None
    return Path(database).expanduser()


def existing_file(url: URL) -> Path | None:
    """The database file a SQLite URL names, if it exists and holds anything."""
    path = database_path(url)
    if path is None or str(url.database).startswith("file:"):
        return None
    return path if path.is_file() and path.stat().st_size > 0 else None


class WriterQueue:
    """A lock handed to waiting writers first come, first served."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._held = False
        self._waiting: deque[threading.Event] = deque()

    @property
    def waiting(self) -> int:
        """How many writers wait for the lock now."""
        with self._mutex:
            return len(self._waiting)

    def acquire(self, timeout: float) -> bool:
        with self._mutex:
            if not self._held:
                self._held = True
                return True
            turn = threading.Event()
            self._waiting.append(turn)
        if turn.wait(max(0.0, timeout)):
            return True
        with self._mutex:
            if turn.is_set():  # handed over just as the wait ran out
                return True
            self._waiting.remove(turn)
            return False

    def release(self) -> None:
        with self._mutex:
            if self._waiting:
                self._waiting.popleft().set()  # straight to the next writer: no one barges in
            else:
                self._held = False


def _leave(writers: WriterQueue, info: dict[Any, Any]) -> None:
    if info.pop(_IN_TURN, False):
        writers.release()


def private_database(path: Path) -> None:
    """Create the database's directory (0700) and file (0600) if missing; tighten an
    existing database file and its ``-wal``/``-shm`` files to 0600."""
    if not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
        path.parent.chmod(PRIVATE_DIR)  # whatever the umask left of the mode
    with suppress(FileExistsError):  # created here so that SQLite never creates it 0644
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, PRIVATE_FILE))
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        try:
            if stat.S_IMODE(file.stat().st_mode) & ~PRIVATE_FILE:
                file.chmod(PRIVATE_FILE)
        except FileNotFoundError:
            continue
        except PermissionError as exc:  # not ours to change: say so, keep serving
            log.warning("Could not make %s readable by its owner only: %s", file, exc)


def _sqlite_connect(busy_timeout_ms: int) -> Any:
    def connect(dbapi_connection: Any, record: Any) -> None:
        dbapi_connection.isolation_level = None  # BEGIN comes from ``_begin``, not the driver
        record.info["query_only"] = False
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
            cursor.execute("PRAGMA synchronous=NORMAL")  # safe under WAL; a crash loses no commit
        finally:
            cursor.close()

    return connect


def _begin(writers: WriterQueue, timeout: float) -> Any:
    def begin(connection: Connection) -> None:
        """Start a transaction: deferred and query-only for a read; for a write, a place
        in the writers' queue, then ``BEGIN IMMEDIATE``, within the unit's wait."""
        options = connection.get_execution_options()
        read_only = bool(options.get(READ_ONLY, False))
        info = connection.info
        if info.get("query_only") != read_only:
            connection.exec_driver_sql(f"PRAGMA query_only={'ON' if read_only else 'OFF'}")
            info["query_only"] = read_only
        if read_only:
            connection.exec_driver_sql("BEGIN")
            return
        deadline = time.monotonic() + wait_for(options, timeout)
        if not info.get(_IN_TURN):
            if not writers.acquire(deadline - time.monotonic()):
                raise busy()
            info[_IN_TURN] = True
        try:
            _begin_immediate(connection, deadline)
        except BaseException:
            _leave(writers, info)
            raise

    return begin


def _begin_immediate(connection: Connection, deadline: float) -> None:
    """``BEGIN IMMEDIATE``, tried again while the database stays busy and time is left
    (each try waits up to the busy timeout in SQLite's busy handler)."""
    while True:
        try:
            connection.exec_driver_sql("BEGIN IMMEDIATE")
            return
        except DBAPIError as exc:
            if not sqlite_busy(exc.orig) or time.monotonic() >= deadline:
                raise
        time.sleep(0.01)  # the busy handler already waited; this only avoids a spin


def sqlite_busy(error: BaseException | None) -> bool:
    """Whether a driver error means another connection holds a lock we need."""
    if not isinstance(error, sqlite3.OperationalError):
        return False
    code = getattr(error, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in _BUSY_CODES
    text = str(error).lower()
    return "database is locked" in text or "database is busy" in text


NATIVE_ALTER = (3, 35, 0)  # the SQLite that drops a column in place (ALTER TABLE DROP COLUMN)


def require_native_alter(bind: Connection, direction: str) -> None:
    """Stop a migration that alters a table in place (``direction``: "upgrade" or
    "downgrade") on a SQLite too old to: a batch "move and copy" instead would drop the
    table, and with foreign keys on that drop cascades to every row that refers to it."""
    if bind.dialect.name == "sqlite":
        found = str(bind.exec_driver_sql("select sqlite_version()").scalar() or "0")
        native_alter_or_refuse(found, direction)


def native_alter_or_refuse(found: str, direction: str) -> None:
    """Refuse, saying what to do, when SQLite ``found`` predates ``NATIVE_ALTER``."""
    if tuple(int(p) for p in found.split(".")) < NATIVE_ALTER:
        raise RuntimeError(
            f"Talekeeper needs SQLite 3.35 or newer to {direction} this database (this "
            f"Python has {found}): use a Python built with a newer SQLite."
        )
