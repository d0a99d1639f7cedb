"""What a unit of work asks of its connection, on every database.

Invariants:

- A unit of work writes unless it says it only reads (the ``READ_ONLY`` execution
  option). A unit that may write takes the database's one writer lock before its first
  statement; a read unit never takes it and never waits for it.
- Waiting for the writer lock is bounded: ``ATTEMPTS`` (default ``LOCK_ATTEMPTS``) times
  the database's busy timeout, which is the URL's ``timeout`` in seconds (0 to 3600) or
  ``BUSY_TIMEOUT_S``. A unit that gives up has written nothing and ends in ``busy()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy.engine import URL

from talekeeper.core.errors import ConfigurationError, DatabaseBusy

# Long enough to ride out a background write or an import's bulk write, short enough
# that a stuck lock surfaces as "busy" within LOCK_ATTEMPTS x this.
BUSY_TIMEOUT_S = 5.0
LOCK_ATTEMPTS = 3

# Execution options a unit of work passes to its connection (read when it begins).
READ_ONLY = "talekeeper_read_only"
ATTEMPTS = "talekeeper_lock_attempts"

TIMEOUT_QUERY = "timeout"  # the URL's query key for the busy timeout, on every database


def busy_timeout(url: URL) -> float:
    """The busy timeout in seconds the URL asks for, else ``BUSY_TIMEOUT_S``."""
    given = url.query.get(TIMEOUT_QUERY)
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


def wait_for(options: Mapping[str, Any], timeout: float) -> float:
    """How long a unit with these execution options may wait for the writer lock, in
    seconds."""
    return max(1, int(options.get(ATTEMPTS, LOCK_ATTEMPTS))) * timeout


def busy() -> DatabaseBusy:
    return DatabaseBusy(
        "The database is busy with other work (a large import or another change held it "
        "too long), so nothing was changed. Try again in a few seconds."
    )
