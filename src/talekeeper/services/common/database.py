"""The database as a whole, for the entry points that run without a runtime: migrate it,
open it as a session factory, and say which job queue it gives. No rows, no statements."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.orm import Session, sessionmaker

from talekeeper.storage import migrate
from talekeeper.storage.db import make_engine, make_session_factory
from talekeeper.storage.dialect import JobQueue, job_queue, resolved


def upgrade(url: str) -> tuple[str | None, str]:
    """Migrate the database at ``url`` to the newest revision; its revision then, and the
    engine's URL as ``repr`` shows it (the password hidden)."""
    engine = make_engine(url)
    try:
        migrate.upgrade(engine)
        return migrate.current_revision(engine), repr(engine.url)
    finally:
        engine.dispose()


@contextmanager
def migrated(url: str) -> Iterator[sessionmaker[Session]]:
    """The database at ``url``, migrated first, as a session factory; closed afterwards."""
    engine = make_engine(url)
    try:
        migrate.upgrade(engine)
        yield make_session_factory(engine)
    finally:
        engine.dispose()


def shared_queue(url: str) -> bool:
    """Whether the database at ``url`` gives a queue that separate workers can share."""
    return job_queue(resolved(url)) is JobQueue.SHARED
