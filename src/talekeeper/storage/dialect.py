"""Which database a URL names, and every choice that depends on it.

Invariants:

- Two databases are supported: SQLite (``sqlite:///PATH``, the zero-setup default) and
  PostgreSQL through psycopg 3 (``postgresql+psycopg://USER:PASSWORD@HOST/DATABASE``;
  a bare ``postgresql://`` or ``postgres://`` means the same). Any other URL is refused with a
  ``ConfigurationError`` that names the setting and both forms, before anything
  connects, and never quotes the URL (it may carry a password).
- Every "SQLite or PostgreSQL?" of the application is answered here: the engine and
  its locking (``storage.sqlite``, ``storage.postgresql``), what "busy" means, whether
  a batch insert returns its ids in order, whether a migration alters a table by
  copying it, which file to copy before a migration, and where background work waits
  (``job_queue``). Other code asks these questions and never looks at a dialect's name.
"""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError

from talekeeper.core.errors import ConfigurationError
from talekeeper.storage.postgresql import postgresql_busy, postgresql_engine
from talekeeper.storage.sqlite import existing_file, sqlite_busy, sqlite_engine

SETTING = "TALEKEEPER_DATABASE_URL"
FORMS = (
    "sqlite:///PATH/TO/talekeeper.db (the default: one file, nothing to set up) or "
    "postgresql+psycopg://USER:PASSWORD@HOST/DATABASE (PostgreSQL through psycopg 3)"
)


class Backend(StrEnum):
    SQLITE = "sqlite"
    POSTGRESQL = "postgresql"


class JobQueue(StrEnum):
    """Where background work waits, and which processes run it."""

    # A ``background_jobs`` row per subject (an adventure, a library source), run by the
    # in-process worker of the process that serves (or plays): a database file on one
    # machine.
    OUTBOX = "outbox"
    # Procrastinate's tables on the server, run by any number of worker processes.
    SHARED = "shared"


# Driver names each backend is reached through; the first is the one a bare name means.
_DRIVERS = {Backend.SQLITE: ("pysqlite",), Backend.POSTGRESQL: ("psycopg",)}
_ALIASES = {"postgres": Backend.POSTGRESQL.value}  # as many hosts write their URLs


def complaint(url: str | URL) -> str | None:
    """Why Talekeeper cannot use this database URL, in words; None if it can."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return f"it is not a database URL; use {FORMS}"
    try:
        backend = Backend(_ALIASES.get(parsed.get_backend_name(), parsed.get_backend_name()))
    except ValueError:
        return f"Talekeeper does not support {parsed.drivername!r} databases; use {FORMS}"
    driver = parsed.get_driver_name() if "+" in parsed.drivername else _DRIVERS[backend][0]
    if driver not in _DRIVERS[backend]:
        return f"Talekeeper does not support the driver {parsed.drivername!r}; use {FORMS}"
    return None


def resolved(url: str | URL) -> URL:
    """The URL to connect with (a PostgreSQL one names psycopg), or ``ConfigurationError``."""
    problem = complaint(url)
    if problem is not None:
        raise ConfigurationError(f"{SETTING} cannot be used: {problem}.")
    parsed = make_url(url)
    if parsed.get_backend_name() == Backend.SQLITE.value:
        return parsed
    return parsed.set(drivername=f"{Backend.POSTGRESQL.value}+{_DRIVERS[Backend.POSTGRESQL][0]}")


def make_engine(url: str | URL) -> Engine:
    parsed = resolved(url)
    if backend_of(parsed) is Backend.SQLITE:
        return sqlite_engine(parsed)
    return postgresql_engine(parsed)


def backend_of(bind: Any) -> Backend:
    """The backend of a URL, an engine, a connection or a session's bind."""
    if isinstance(bind, URL):
        return Backend(bind.get_backend_name())
    return Backend(bind.dialect.name)


def is_busy(exc: BaseException) -> bool:
    """Whether a database error means another unit holds a lock we need, or the server
    cannot serve us just now: "try again shortly"."""
    error = exc.orig if isinstance(exc, DBAPIError) else exc
    return sqlite_busy(error) or postgresql_busy(error)


def returns_ids_in_order(bind: Any) -> bool:
    """Whether ``INSERT .. RETURNING`` of a batch gives the ids in the order sent (SQLite
    would send the batch row by row to do so)."""
    return backend_of(bind) is Backend.POSTGRESQL


def alters_by_copy(bind: Any) -> bool:
    """Whether a migration alters a table by copying it (SQLite's ALTER TABLE cannot
    change constraints)."""
    return backend_of(bind) is Backend.SQLITE


def job_queue(bind: Any) -> JobQueue:
    """Where background work waits on this database: several processes on several machines
    share a PostgreSQL server, so its work waits in a queue any of them may run; a SQLite
    file's waits in its outbox for the process that serves it."""
    return JobQueue.SHARED if backend_of(bind) is Backend.POSTGRESQL else JobQueue.OUTBOX


def database_file(engine: Engine) -> Path | None:
    """The file that holds the whole database, when there is one that holds data."""
    if backend_of(engine) is not Backend.SQLITE:
        return None
    return existing_file(engine.url)
