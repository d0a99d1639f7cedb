"""PostgreSQL: a server shared by any number of processes, one writer at a time.

Invariants:

- Connections run READ COMMITTED. A unit that may write (``session_scope``, and a
  plain ``engine.begin()`` or ``engine.connect()``) first takes the database's writer
  lock, a transaction-level advisory lock (``WRITER_LOCK``), and holds it until its
  commit or rollback. Writers therefore take turns as they do on SQLite, across every
  process that uses the database: a unit that reads and then writes never meets a
  commit made in between, so every read-then-write check (limits, counters, claims)
  holds on both databases alike. PostgreSQL grants the lock in the order it was asked
  for, so no queue of our own is needed.
- Waiting for the writer lock is bounded by the unit's wait (``locking.wait_for``),
  set as the transaction's ``lock_timeout``; a unit that gives up has written nothing.
- A read unit runs REPEATABLE READ and READ ONLY: one consistent snapshot, it never
  waits for the writer lock, and a write in it fails loudly.
- The URL's ``timeout`` is the busy timeout (as for SQLite) and never reaches the
  driver; connecting gives up after ``CONNECT_TIMEOUT_S`` unless the URL's
  ``connect_timeout`` says otherwise. The pool is small and pings a connection before
  handing it out, so a restarted server costs no request.
- Connections SQLAlchemy does not make (the job queue's pool and its LISTEN connection,
  ``conninfo``) reach the same server, database and user with the same options.
- "Busy" (``postgresql_busy``): the lock wait ran out, a serialization failure, a
  deadlock, a server that refuses or drops connections for now. Each means "try again
  shortly"; nothing else does.
"""

from __future__ import annotations

from typing import Any

import psycopg
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL

from talekeeper.storage.locking import READ_ONLY, TIMEOUT_QUERY, busy_timeout, wait_for

# The writer lock's key, the same in every process ("Talekeep" as a 64-bit number).
WRITER_LOCK = 0x54616C656B656570
CONNECT_TIMEOUT_S = 10
POOL_SIZE = 5
MAX_OVERFLOW = 10
# Rows per INSERT of a batch that returns its ids (an import): as many as the server takes
# in one statement (SQLAlchemy also keeps each under 32,700 parameters), not its default 1000.
BATCH_ROWS = 5000

_BUSY_STATES = frozenset(
    {
        "55P03",  # lock_not_available: the lock wait ran out
        "40001",  # serialization_failure
        "40P01",  # deadlock_detected
        "53300",  # too_many_connections
        "57P01",  # admin_shutdown
        "57P02",  # crash_shutdown
        "57P03",  # cannot_connect_now: starting up or shutting down
    }
)


def postgresql_engine(url: URL) -> Engine:
    timeout = busy_timeout(url)
    url = url.difference_update_query([TIMEOUT_QUERY])
    connect_args: dict[str, Any] = {}
    if "connect_timeout" not in url.query:
        connect_args["connect_timeout"] = CONNECT_TIMEOUT_S
    engine = create_engine(
        url,
        connect_args=connect_args,
        isolation_level="READ COMMITTED",
        pool_size=POOL_SIZE,
        max_overflow=MAX_OVERFLOW,
        pool_pre_ping=True,
        insertmanyvalues_page_size=BATCH_ROWS,
        hide_parameters=True,
    )
    event.listen(engine, "begin", _begin(timeout))
    return engine


def conninfo(url: URL) -> str:
    """The libpq connection string of a PostgreSQL URL, for connections SQLAlchemy does not
    make (the job queue's): without the driver's name and Talekeeper's busy timeout (which
    libpq would refuse), with the engine's connect timeout unless the URL names one."""
    url = url.difference_update_query([TIMEOUT_QUERY]).set(drivername="postgresql")
    if "connect_timeout" not in url.query:
        url = url.update_query_dict({"connect_timeout": str(CONNECT_TIMEOUT_S)})
    return url.render_as_string(hide_password=False)


def _begin(timeout: float) -> Any:
    def begin(connection: Connection) -> None:
        """Start a transaction: a read-only snapshot for a read; for a write, the writer
        lock within the unit's wait."""
        options = connection.get_execution_options()
        if options.get(READ_ONLY, False):
            connection.exec_driver_sql("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            return
        wait_ms = max(1, round(wait_for(options, timeout) * 1000))  # 0 would mean forever
        connection.exec_driver_sql(f"SET LOCAL lock_timeout = {wait_ms}")
        connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({WRITER_LOCK})")

    return begin


def postgresql_busy(error: BaseException | None) -> bool:
    """Whether a driver error means "the database cannot do this now, try again"."""
    if not isinstance(error, psycopg.Error):
        return False
    state = error.sqlstate
    if state is None:  # no answer from a server: it refused or dropped the connection
        return isinstance(error, psycopg.OperationalError)
    return state in _BUSY_STATES or state.startswith("08")  # 08: connection exception
