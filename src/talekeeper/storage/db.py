"""Database engine and units of work, on SQLite or PostgreSQL alike.

Invariants:

- ``make_engine`` accepts a SQLite or a PostgreSQL URL and refuses any other
  (``storage.dialect``, the one place that tells the two apart).
- A unit of work writes unless it says it only reads. ``session_scope`` takes the
  database's one writer lock before its first statement, waiting up to ``attempts``
  busy timeouts for it; writers take turns, so a unit that reads and then writes never
  meets a commit made in between. ``read_scope`` never waits for a writer, cannot
  write, and sees one consistent snapshot. How each database does this:
  ``storage.sqlite`` and ``storage.postgresql``.
- A busy or locked database becomes ``DatabaseBusy`` in one place (``busy_error``),
  which the entry points answer as "try again shortly" (HTTP 503 with
  ``Retry-After``), never as an unexpected error.
- SQL parameters (story text, API keys) never appear in an error's text.
- Sessions never commit on their own: the entry point that opened one decides
  (a scope commits on success and rolls back on error).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from talekeeper.core.errors import DatabaseBusy
from talekeeper.storage.dialect import is_busy, make_engine
from talekeeper.storage.locking import (
    ATTEMPTS,
    BUSY_TIMEOUT_S,
    LOCK_ATTEMPTS,
    READ_ONLY,
    busy,
)
from talekeeper.storage.sqlite import PRIVATE_DIR, PRIVATE_FILE, WriterQueue, private_database

__all__ = [
    "ATTEMPTS",
    "BUSY_TIMEOUT_S",
    "LOCK_ATTEMPTS",
    "PRIVATE_DIR",
    "PRIVATE_FILE",
    "READ_ONLY",
    "WriterQueue",
    "busy",
    "busy_error",
    "is_busy",
    "make_engine",
    "make_session_factory",
    "private_database",
    "read_scope",
    "session_scope",
]


def ping(engine: Engine) -> None:
    """One ``SELECT 1`` on a read-only connection; raises whatever reaching it raised."""
    # Read-only: a probe must not queue behind writers for the one write lock.
    with engine.execution_options(**{READ_ONLY: True}).connect() as connection:
        connection.execute(text("SELECT 1"))


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
