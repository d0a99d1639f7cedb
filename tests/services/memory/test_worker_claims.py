"""Background-work claims belong to a process: two workers on one database file (as
``talekeeper serve`` and ``talekeeper play`` are) never run one job twice, and a job whose
owner was killed is recovered once its claim goes stale.

Real parts throughout: a migrated SQLite file, ``Worker`` instances with short timings,
and for the kill a worker in a child process ended with SIGKILL. The outbox and its
worker are SQLite's only: ``Worker`` refuses PostgreSQL (tested here), whose queue is
procrastinate's (tests/services/memory/test_job_queue.py).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker
from tests.conftest import database_url

from talekeeper.core.clock import utcnow
from talekeeper.services.background.worker import Worker
from talekeeper.services.memory.base import NullMemory
from talekeeper.services.story import adventures
from talekeeper.storage import migrate
from talekeeper.storage.db import make_engine, make_session_factory, session_scope
from talekeeper.storage.models import BackgroundJob
from talekeeper.storage.repositories.jobs import JobRepository, Subject
from talekeeper.storage.repositories.users import UserRepository

pytestmark = pytest.mark.sqlite_only("the outbox and its in-process worker are SQLite's")

BEAT = 0.05
STALE = timedelta(seconds=1.0)

CHILD = """
import asyncio, sys
from datetime import timedelta
from talekeeper.services.background.worker import Worker
from talekeeper.storage.db import make_engine, make_session_factory

async def main():
    async def run(subject):
        print("running", flush=True)
        await asyncio.sleep(3600)
    sessions = make_session_factory(make_engine(sys.argv[1]))
    worker = Worker(sessions, run, heartbeat=0.05, stale=timedelta(seconds=1), poll=0.05)
    await worker.start()
    await asyncio.sleep(3600)

asyncio.run(main())
"""


@pytest.fixture
def database(tmp_path: Path) -> Iterator[tuple[str, sessionmaker[Session]]]:
    url = database_url(tmp_path / "tk.db")
    engine = make_engine(url)
    migrate.upgrade(engine)
    yield url, make_session_factory(engine)
    engine.dispose()


def job_for_new_adventure(sessions: sessionmaker[Session], **claim: object) -> int:
    with session_scope(sessions) as session:
        uid = UserRepository(session).local_user().id
        story = adventures.create(session, uid, {"title": "T", "opening": "Once."}, NullMemory())
        adventure_id = story.adventure.id
        session.add(
            BackgroundJob(kind="adventure", subject_id=adventure_id, requested_at=utcnow(), **claim)
        )
    return adventure_id


def job(sessions: sessionmaker[Session], adventure_id: int) -> BackgroundJob | None:
    with session_scope(sessions) as session:
        return session.get(BackgroundJob, ("adventure", adventure_id))


class Runs:
    """A worker's ``run``: records each call's subject id and blocks until released."""

    def __init__(self) -> None:
        self.calls: list[int] = []
        self.subjects: list[Subject] = []
        self.release = asyncio.Event()

    async def __call__(self, subject: Subject) -> None:
        self.calls.append(subject.id)
        self.subjects.append(subject)
        await self.release.wait()


def worker(sessions: sessionmaker[Session], runs: Runs) -> Worker:
    return Worker(sessions, runs, heartbeat=BEAT, stale=STALE, poll=BEAT)


async def until(condition: object, timeout: float = 10.0) -> None:
    assert callable(condition)
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


def test_a_second_worker_neither_releases_nor_runs_a_live_workers_job(
    database: tuple[str, sessionmaker[Session]],
) -> None:
    _, sessions = database
    adventure_id = job_for_new_adventure(sessions)

    async def scenario() -> None:
        first_runs, second_runs = Runs(), Runs()
        first, second = worker(sessions, first_runs), worker(sessions, second_runs)
        await first.start()
        await until(lambda: first_runs.calls == [adventure_id])
        await second.start()
        # Several staleness windows and polls: the first worker's heartbeat keeps its claim.
        await asyncio.sleep(3 * STALE.total_seconds())
        held = job(sessions, adventure_id)
        assert held is not None and held.claimed_by == first.owner
        assert second_runs.calls == []
        first_runs.release.set()
        await until(lambda: job(sessions, adventure_id) is None)
        await asyncio.sleep(3 * BEAT)
        assert first_runs.calls == [adventure_id] and second_runs.calls == []
        await first.stop()
        await second.stop()

    asyncio.run(scenario())


def test_a_killed_owners_claim_is_recovered_once_it_goes_stale(
    database: tuple[str, sessionmaker[Session]],
) -> None:
    url, sessions = database
    adventure_id = job_for_new_adventure(sessions)
    child = subprocess.Popen([sys.executable, "-c", CHILD, url], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "running"  # its claim is made and live
        held = job(sessions, adventure_id)
        assert held is not None and held.claimed_by and held.claimed_by.startswith(f"{child.pid}-")
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)

    async def scenario() -> None:
        runs = Runs()
        runs.release.set()
        recovering = worker(sessions, runs)
        await recovering.start()
        await until(lambda: runs.calls == [adventure_id], timeout=10)
        taken = job(sessions, adventure_id)
        assert taken is None or taken.claimed_by == recovering.owner
        await until(lambda: job(sessions, adventure_id) is None)
        await recovering.stop()

    asyncio.run(scenario())


def test_a_claim_with_no_owner_is_released_at_start(
    database: tuple[str, sessionmaker[Session]],
) -> None:
    _, sessions = database
    # Left by a version whose claims had no owner: its every start released them all.
    adventure_id = job_for_new_adventure(sessions, claimed_at=utcnow())

    async def scenario() -> None:
        runs = Runs()
        runs.release.set()
        fresh = worker(sessions, runs)
        await fresh.start()
        await until(lambda: runs.calls == [adventure_id], timeout=STALE.total_seconds() / 2)
        await until(lambda: job(sessions, adventure_id) is None)
        await fresh.stop()

    asyncio.run(scenario())


def test_a_stopped_worker_hands_its_claims_back_for_the_next_start(
    database: tuple[str, sessionmaker[Session]],
) -> None:
    _, sessions = database
    adventure_id = job_for_new_adventure(sessions)

    async def scenario() -> None:
        runs = Runs()
        first = worker(sessions, runs)
        await first.start()
        await until(lambda: runs.calls == [adventure_id])
        await first.stop()  # mid-run: the run is cancelled, its job stays to do
        left = job(sessions, adventure_id)
        assert left is not None and left.claimed_by is None
        again = Runs()
        again.release.set()
        second = worker(sessions, again)
        await second.start()
        await until(lambda: again.calls == [adventure_id], timeout=STALE.total_seconds() / 2)
        await second.stop()

    asyncio.run(scenario())


def test_a_run_asked_for_later_waits_for_its_time_and_a_plain_request_brings_it_forward(
    database: tuple[str, sessionmaker[Session]],
) -> None:
    _, sessions = database
    source = Subject.library_source(41)  # any subject: the worker knows no kinds

    async def scenario() -> None:
        runs = Runs()
        runs.release.set()
        outbox = worker(sessions, runs)
        await outbox.start()
        with session_scope(sessions) as session:
            outbox.request(session, source, timedelta(hours=1))
        await asyncio.sleep(5 * BEAT)  # several polls
        assert runs.subjects == []  # not before its time
        await outbox.idle(timeout=2)  # a run asked for later is no work to wait for yet
        with session_scope(sessions) as session:
            outbox.request(session, source, timedelta(minutes=5))  # a sooner later
            assert job_of(session, source).run_after is not None
            outbox.request(session, source)  # now wins over any backoff
        await until(lambda: runs.subjects == [source], timeout=2)
        await outbox.idle(timeout=2)
        with session_scope(sessions) as session:
            assert JobRepository(session).job(source) is None
        await outbox.stop()

    asyncio.run(scenario())


def test_a_retry_asked_for_during_its_run_is_not_run_at_once(
    database: tuple[str, sessionmaker[Session]],
) -> None:
    """A run that failed asks for its own retry after a backoff: the job stays, not due,
    instead of running again in a loop."""
    _, sessions = database
    source = Subject.library_source(7)

    async def scenario() -> None:
        calls: list[Subject] = []

        async def failing(subject: Subject) -> None:
            calls.append(subject)
            with session_scope(sessions) as session:
                outbox.request(session, subject, timedelta(seconds=30))

        outbox = Worker(sessions, failing, heartbeat=BEAT, stale=STALE, poll=BEAT)
        await outbox.start()
        with session_scope(sessions) as session:
            outbox.request(session, source)
        await until(lambda: calls == [source], timeout=2)
        await asyncio.sleep(5 * BEAT)
        assert calls == [source]
        with session_scope(sessions) as session:
            waiting = job_of(session, source)
            assert waiting.claimed_by is None and waiting.run_after is not None
            assert waiting.run_after > utcnow() + timedelta(seconds=25)
        await outbox.stop()

    asyncio.run(scenario())


def test_runs_of_different_subjects_go_on_side_by_side_and_each_alone(
    database: tuple[str, sessionmaker[Session]],
) -> None:
    _, sessions = database
    subjects = [Subject.adventure(3), Subject.library_source(3), Subject.library_source(4)]

    async def scenario() -> None:
        runs = Runs()  # blocks every run until released
        outbox = worker(sessions, runs)
        await outbox.start()
        with session_scope(sessions) as session:
            for subject in subjects:
                outbox.request(session, subject)
        await until(lambda: sorted(runs.subjects) == sorted(subjects), timeout=2)
        with session_scope(sessions) as session:
            outbox.request(session, subjects[1])  # asked again while its run goes on
        await asyncio.sleep(5 * BEAT)
        assert len(runs.subjects) == 3  # not a second run of it at once
        runs.release.set()
        await until(lambda: len(runs.subjects) == 4, timeout=2)
        assert runs.subjects[-1] == subjects[1]  # the request made during the run
        await outbox.idle(timeout=2)
        await outbox.stop()

    asyncio.run(scenario())


def job_of(session: Session, subject: Subject) -> BackgroundJob:
    found = JobRepository(session).job(subject)
    assert found is not None
    return found
