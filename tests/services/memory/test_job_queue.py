"""PostgreSQL's job queue (``services.memory.queue``, procrastinate): a request is a job
exactly when its transaction commits, one adventure has at most one job waiting, a job
counted on is held until the requester commits, a run that raised is retried with a pause,
and a retry that would clash with a waiting job gives way to it. Also: the migration
that writes the queue's schema undoes itself, and the outbox's in-process worker refuses
PostgreSQL.

Real parts throughout: a database of the throwaway cluster (``talekeeper_testkit.pg``), plain
``psycopg`` connections standing in for another process's worker, and for the runs a
worker of the queue in the test's own event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from alembic import command
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker
from tests.conftest import database_url

from talekeeper.core.errors import ConfigurationError
from talekeeper.services.background.port import Run, Subject
from talekeeper.services.background.queue import QueuedWork, lock_of
from talekeeper.services.background.worker import Worker
from talekeeper.services.memory.base import NullMemory
from talekeeper.services.story import adventures
from talekeeper.storage import migrate
from talekeeper.storage.db import make_engine, make_session_factory, session_scope
from talekeeper.storage.models import Adventure
from talekeeper.storage.postgresql import conninfo
from talekeeper.storage.repositories.users import UserRepository
from talekeeper_testkit import pg

pytestmark = pytest.mark.postgresql_only("the job queue is PostgreSQL's (procrastinate)")


@dataclass
class Database:
    url: str
    engine: Engine
    sessions: sessionmaker[Session]

    def queue(self, run: Run | None = None) -> QueuedWork:
        async def nothing(_subject: Subject) -> None:
            return None

        return QueuedWork(self.sessions, run or nothing, conninfo=conninfo(self.engine.url))

    def adventure(self) -> int:
        with session_scope(self.sessions) as session:
            uid = UserRepository(session).local_user().id
            story = adventures.create(
                session, uid, {"title": "T", "opening": "Once."}, NullMemory()
            )
            return story.adventure.id

    def request(self, queue: QueuedWork, adventure_id: int) -> None:
        """A committed turn's request."""
        with session_scope(self.sessions) as session:
            queue.request(session, Subject.adventure(adventure_id))

    def jobs(self) -> list[tuple[Any, ...]]:
        with pg.connect(self.url, autocommit=True) as connection:
            rows = connection.execute(
                "SELECT status, lock, queueing_lock, args FROM procrastinate_jobs ORDER BY id"
            )
            return [tuple(row) for row in rows]


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    url = database_url(tmp_path / "tk.db")
    engine = make_engine(url)
    migrate.upgrade(engine)
    yield Database(url, engine, make_session_factory(engine))
    engine.dispose()


class OtherWorker:
    """Another process's worker, as procrastinate's SQL functions see it."""

    def __init__(self, url: str) -> None:
        self.connection = pg.connect(url, autocommit=True)
        row = self.connection.execute("SELECT * FROM procrastinate_register_worker_v1()").fetchone()
        assert row is not None
        self.id = row[0]

    def fetch(self) -> int | None:
        """Take the next job it may run (``doing``), as a worker does; its id, or None."""
        row = self.connection.execute(
            "SELECT id FROM procrastinate_fetch_job_v2(ARRAY['passes'], %s)", (self.id,)
        ).fetchone()
        assert row is not None  # one row always; its id is NULL when no job may run
        return None if row[0] is None else int(row[0])

    def close(self) -> None:
        self.connection.close()


@pytest.fixture
def other(db: Database) -> Iterator[OtherWorker]:
    worker = OtherWorker(db.url)
    yield worker
    worker.close()


def test_a_rolled_back_turn_leaves_no_job_and_a_committed_one_exactly_one(db: Database) -> None:
    queue, aid = db.queue(), db.adventure()
    with pytest.raises(RuntimeError), session_scope(db.sessions) as session:
        queue.request(session, Subject.adventure(aid))
        assert queue.pending(session, Subject.adventure(aid))  # its own transaction sees it
        raise RuntimeError("the turn failed after asking for its work")
    assert db.jobs() == []
    with session_scope(db.sessions) as session:
        assert not queue.pending(session, Subject.adventure(aid))
    db.request(queue, aid)
    lock = lock_of(Subject.adventure(aid))
    assert db.jobs() == [("todo", lock, lock, {"adventure_id": aid})]
    with session_scope(db.sessions) as session:
        assert queue.pending(session, Subject.adventure(aid))


def test_requests_before_a_run_leave_one_job_and_the_transaction_goes_on(db: Database) -> None:
    queue, aid = db.queue(), db.adventure()
    with session_scope(db.sessions) as session:
        queue.request(session, Subject.adventure(aid))
        queue.request(
            session, Subject.adventure(aid)
        )  # the queueing lock: rolled back to its savepoint
        adventure = session.get(Adventure, aid)
        assert adventure is not None
        adventure.title = "Written after"  # the turn's transaction is still usable
    db.request(queue, aid)  # a later turn, the job still waiting
    assert [status for status, *_ in db.jobs()] == ["todo"]
    with session_scope(db.sessions) as session:
        changed = session.get(Adventure, aid)
        assert changed is not None and changed.title == "Written after"


def test_a_waiting_job_counted_on_is_not_run_before_the_request_commits(
    db: Database, other: OtherWorker
) -> None:
    """A turn whose request finds a job waiting counts on that job to see its work: until
    the turn commits, no worker may start it (else it would run without the new work)."""
    queue, aid = db.queue(), db.adventure()
    db.request(queue, aid)
    with session_scope(db.sessions) as session:
        queue.request(session, Subject.adventure(aid))
        assert other.fetch() is None  # held by the open turn
    assert other.fetch() is not None  # committed: the job, now with the turn's work to do


def test_a_request_while_a_run_goes_on_leaves_one_more_job_waiting(
    db: Database, other: OtherWorker
) -> None:
    queue, aid = db.queue(), db.adventure()
    db.request(queue, aid)
    assert other.fetch() is not None  # the run goes on
    db.request(queue, aid)
    db.request(queue, aid)
    assert [status for status, *_ in db.jobs()] == ["doing", "todo"]
    assert other.fetch() is None  # the lock: one run of an adventure at a time
    second = db.adventure()
    db.request(queue, second)
    assert other.fetch() is not None  # another adventure's job runs meanwhile


@contextlib.asynccontextmanager
async def requested_and_started(db: Database, run: Run, aid: int) -> AsyncIterator[QueuedWork]:
    """A queue with a run of ``aid`` requested, and a worker of it in this process."""
    queue = db.queue(run)
    await asyncio.to_thread(db.request, queue, aid)
    await queue.start()
    try:
        yield queue
    finally:
        await queue.stop()


def test_a_run_that_raised_is_retried_after_a_pause(db: Database) -> None:
    aid = db.adventure()
    calls: list[float] = []

    async def run(subject: Subject) -> None:
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise RuntimeError("the database went away for a moment")

    async def scenario() -> None:
        async with requested_and_started(db, run, aid) as queue:
            await queue.idle(timeout=30)

    asyncio.run(scenario())
    assert len(calls) == 2
    assert calls[1] - calls[0] >= 1.5  # exponential backoff: 2 s before the first retry
    assert db.jobs() == []  # a run that succeeded leaves no job


def test_a_retry_gives_way_to_the_job_waiting_after_it(db: Database) -> None:
    """A run that raises while another job of its adventure waits is not put back (the
    queueing lock would refuse it and leave the lock held): the waiting job runs."""
    aid = db.adventure()
    calls: list[int] = []
    running = asyncio.Event()
    fail = asyncio.Event()

    async def run(subject: Subject) -> None:
        calls.append(subject.id)
        if len(calls) == 1:
            running.set()
            await fail.wait()
            raise RuntimeError("the database went away for a moment")

    async def scenario() -> None:
        async with requested_and_started(db, run, aid) as queue:
            await asyncio.wait_for(running.wait(), 30)
            await asyncio.to_thread(db.request, queue, aid)  # waits behind the run
            fail.set()
            await queue.idle(timeout=30)

    asyncio.run(scenario())
    assert calls == [aid, aid]
    assert db.jobs() == []


def test_the_queue_schema_migration_goes_down_and_up(db: Database) -> None:
    def objects() -> dict[str, int]:
        with pg.connect(db.url, autocommit=True) as connection:
            counts = {}
            for kind, sql in {
                "tables": "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'procrastinate%%'",
                "functions": "SELECT count(*) FROM pg_proc WHERE proname LIKE 'procrastinate%%'",
                "types": "SELECT count(*) FROM pg_type WHERE typname LIKE '%%procrastinate%%'",
            }.items():
                row = connection.execute(sql, ()).fetchone()
                counts[kind] = row[0] if row else 0
            return counts

    assert all(objects().values())
    command.downgrade(migrate.alembic_config(db.engine), "0008")
    assert objects() == {"tables": 0, "functions": 0, "types": 0}
    migrate.upgrade(db.engine)
    assert all(objects().values())
    queue, aid = db.queue(), db.adventure()
    db.request(queue, aid)
    assert len(db.jobs()) == 1


def test_the_in_process_worker_refuses_postgresql(db: Database) -> None:
    async def run(_subject: Subject) -> None:
        return None

    with pytest.raises(ConfigurationError, match="talekeeper worker"):
        Worker(db.sessions, run)


def test_jobs_are_in_the_database_not_in_the_outbox(db: Database) -> None:
    queue, aid = db.queue(), db.adventure()
    db.request(queue, aid)
    with session_scope(db.sessions) as session:
        assert session.scalar(text("SELECT count(*) FROM background_jobs")) == 0
    with pytest.raises(psycopg.errors.UniqueViolation), pg.connect(db.url) as connection:
        lock = lock_of(Subject.adventure(aid))
        connection.execute(  # the queueing lock is the database's, whoever defers
            "INSERT INTO procrastinate_jobs (queue_name, task_name, lock, queueing_lock, args) "
            "VALUES ('passes', 'talekeeper.passes', %s, %s, '{}')",
            (lock, lock),
        )


def test_a_library_source_is_a_job_of_its_own_task_and_lock(
    db: Database, other: OtherWorker
) -> None:
    queue, aid = db.queue(), db.adventure()
    source = Subject.library_source(aid)  # the same id as the adventure: another subject
    with session_scope(db.sessions) as session:
        queue.request(session, Subject.adventure(aid))
        queue.request(session, source)
    assert [(lock, args) for _, lock, _, args in db.jobs()] == [
        (f"adventure:{aid}", {"adventure_id": aid}),
        (f"library_source:{aid}", {"source_id": aid}),
    ]
    assert other.fetch() is not None and other.fetch() is not None  # side by side


def test_a_run_asked_for_later_waits_and_a_plain_request_brings_it_forward(
    db: Database, other: OtherWorker
) -> None:
    queue, source = db.queue(), Subject.library_source(5)
    with session_scope(db.sessions) as session:
        queue.request(session, source, timedelta(hours=1))  # a failed batch's backoff
    assert other.fetch() is None  # not before its time
    asyncio.run(queue.idle(timeout=2))  # nor is it work to wait for yet
    with session_scope(db.sessions) as session:
        assert queue.pending(session, source)  # but the player sees it is coming
        queue.request(session, source)  # a turn used the source, or the player asked
    assert len(db.jobs()) == 1  # the same job, now due
    assert other.fetch() is not None
