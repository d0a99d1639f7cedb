"""Database engine and units of work.

Invariants:

- SQLite runs with WAL journaling (readers never block the one writer),
  foreign keys enforced and a busy timeout, set on every new connection.
  SQLAlchemy emits ``BEGIN`` itself (the driver's own transaction control is
  off), so a unit of work is one transaction from its first statement, reads
  included.
- A unit of work writes unless it says it only reads. ``session_scope`` (and a
  plain ``engine.begin()``/``engine.connect()``) starts with ``BEGIN
  IMMEDIATE``: it takes the one write lock before its first statement, so a
  transaction that reads and then writes never meets a commit made in between
  (in WAL, a deferred transaction that upgrades to a write after another
  connection committed fails at once, without waiting). ``read_scope`` starts
  a deferred ``BEGIN`` on a connection set to ``query_only``: readers never
  queue behind a writer, and a read scope that tries to write fails loudly.
- Waiting for the write lock is bounded: a unit waits up to ``LOCK_ATTEMPTS``
  busy timeouts (the URL's ``timeout`` in seconds, else ``BUSY_TIMEOUT_S``; a
  unit of work may ask for more), retrying ``BEGIN IMMEDIATE`` while SQLite's
  busy handler gives up within that time. The lock is taken before anything is
  written, so a unit that gives up has changed nothing.
- The writers of one process take turns in the order they asked
  (``WriterQueue``) before they ask SQLite: its busy handler polls with sleeps
  of up to 100 ms, so under steady load a waiting writer could lose to
  newcomers again and again; in the queue only the writer at its head waits in
  SQLite, and only for another process's writer. A writer holds its place from
  ``BEGIN IMMEDIATE`` to its commit or rollback (or, whatever happens, until its
  connection goes back to the pool).
- A busy or locked database becomes ``DatabaseBusy`` in one place
  (``busy_error``), which the entry points answer as "try again shortly"
  (HTTP 503 with ``Retry-After``), never as an unexpected error.
- Secrets at rest: the directory of the database file is created private
  (0700) when it is created here; the database file is created 0600 before
  SQLite opens it (SQLite gives its ``-wal`` and ``-shm`` files the database
  file's mode), and an existing database's files are tightened to 0600. SQL
  parameters (story text, API keys) never appear in an error's text.
- Other dialects (PostgreSQL) get none of the SQLite behaviour; nothing else
  here is dialect-specific.
- Sessions never commit on their own: the entry point that opened one decides
  (a scope commits on success and rolls back on error).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from talekeeper.core.errors import ConfigurationError, DatabaseBusy

log = logging.getLogger(__name__)

# Long enough to ride out a background write or an import's bulk write, short enough
# that a stuck lock surfaces as "busy" within LOCK_ATTEMPTS x this.
BUSY_TIMEOUT_S = 5.0
LOCK_ATTEMPTS = 3
PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600

# Execution options a unit of work passes to its connection (read by ``_begin``).
READ_ONLY = "talekeeper_read_only"
ATTEMPTS = "talekeeper_lock_attempts"
_IN_TURN = "talekeeper_writer_turn"  # in a pooled connection's info: it holds the queue

_BUSY_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def make_engine(url: str) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True, hide_parameters=True)
    timeout = _busy_timeout(parsed)
    if parsed.database and parsed.database != ":memory:" and "uri" not in parsed.query:
        private_database(Path(parsed.database).expanduser())
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


def _busy_timeout(url: URL) -> float:
    given = url.query.get("timeout")
    if given is None:
        return BUSY_TIMEOUT_S
    try:
        value = float(given if isinstance(given, str) else given[0])
    except ValueError:
        value = -1.0
    if not 0 <= value <= 3600:
        raise ConfigurationError(
            f"The database URL's 'timeout' is how many seconds to wait for a busy database "
            f"(0 to 3600); got {given!r}."
        )
    return value


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


def _begin(writers: WriterQueue, busy_timeout: float) -> Any:
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
        attempts = max(1, int(options.get(ATTEMPTS, LOCK_ATTEMPTS)))
        deadline = time.monotonic() + attempts * busy_timeout
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
            if not is_busy(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(0.01)  # the busy handler already waited; this only avoids a spin


def is_busy(exc: BaseException) -> bool:
    """Whether a database error means another connection holds a lock we need."""
    orig = exc.orig if isinstance(exc, DBAPIError) else exc
    if not isinstance(orig, sqlite3.OperationalError):
        return False
    code = getattr(orig, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in _BUSY_CODES
    text = str(orig).lower()
    return "database is locked" in text or "database is busy" in text


def busy() -> DatabaseBusy:
    return DatabaseBusy(
        "The database is busy with other work (a large import or another change held it "
        "too long), so nothing was changed. Try again in a few seconds."
    )


def busy_error(exc: BaseException) -> DatabaseBusy | None:
    """The error to answer for a database error, when it means "busy"; else ``None``."""
    return busy() if is_busy(exc) else None


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False)


@contextmanager
def session_scope(
    factory: sessionmaker[Session], *, attempts: int = LOCK_ATTEMPTS
) -> Iterator[Session]:
    """One unit of work that may write: commit on success, roll back on any error, always
    close. It takes the write lock at its first statement, waiting up to ``attempts``
    busy timeouts for it (then ``DatabaseBusy``)."""
    with _scope(factory(execution_options={ATTEMPTS: attempts})) as session:
        yield session


@contextmanager
def read_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One unit of work that only reads: it never waits for a writer, cannot write, and
    sees one consistent snapshot of the database."""
    with _scope(factory(execution_options={READ_ONLY: True})) as session:
        yield session


@contextmanager
def _scope(session: Session) -> Iterator[Session]:
    try:
        yield session
        session.commit()
    except DBAPIError as exc:
        session.rollback()
        busy = busy_error(exc)
        if busy is not None:
            raise busy from exc
        raise
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()
