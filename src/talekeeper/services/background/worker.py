"""The in-process background worker: one run per subject at a time, never in a turn.

The adapter of ``port.BackgroundWork`` over the ``background_jobs`` table (an
outbox written in the caller's transaction) and this process's event loop, for a
database whose queue is an outbox (``storage.dialect.job_queue``: a SQLite file).

Invariants:

- It is never built on a database whose queue is shared (PostgreSQL): there any
  number of processes on any number of machines share the database, and the
  procrastinate queue (``queue.QueuedWork``) runs the work. ``Worker`` refuses
  such a database with a ``ConfigurationError``.

- Work exists as a ``background_jobs`` row written in the transaction of the turn
  (or change, or upload) that caused it (``request``), so it exists exactly when that
  commit happened; the worker wakes itself after that commit. A job asked for later
  (``after``: a retry's backoff) is left alone until then, and found by the poll.
- Claims belong to a worker: each ``Worker`` has its own token (``owner``), and a
  run claims the row for it (``claimed_by``, ``claimed_at``) in one conditional
  UPDATE, runs the subject's run, then deletes the row, unless a newer request arrived
  during the run, in which case it runs again. While a run goes on its claim is
  refreshed every ``HEARTBEAT_SECONDS``, so a claim refreshed within ``STALE`` is
  live and no other worker (another process on the same database: ``talekeeper
  serve`` and ``talekeeper play``) takes or releases it. At most one run per
  subject at a time in this process (one task per subject); runs of different subjects
  go on side by side.
- A claim nobody refreshed for ``STALE`` was left by a process that died (a
  kill -9): any worker claims it again, at start or at its next poll, so the
  work is recovered within about ``STALE`` plus ``POLL_SECONDS``. A claim with no
  owner (written before claims had one) is released at start. ``stop`` releases
  this worker's own claims, so a restart picks its work up at once.
- A poll every ``POLL_SECONDS`` picks up jobs whose wake-up was lost. The turn
  never waits for any of this.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
from datetime import datetime, timedelta

from sqlalchemy import event
from sqlalchemy.orm import Session, sessionmaker

from talekeeper.core.clock import utcnow
from talekeeper.core.errors import ConfigurationError
from talekeeper.services.background.port import Run, Subject
from talekeeper.storage.db import read_scope, session_scope
from talekeeper.storage.dialect import JobQueue, job_queue
from talekeeper.storage.repositories.jobs import JobRepository

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 10.0  # how often a running claim is marked as still held
STALE = timedelta(seconds=60)  # a claim not refreshed for this long was left by a dead process
POLL_SECONDS = 5.0  # how soon a job whose wake-up was lost (or a dead owner's) still runs


class Worker:
    def __init__(
        self,
        sessions: sessionmaker[Session],
        run: Run,
        *,
        heartbeat: float = HEARTBEAT_SECONDS,
        stale: timedelta = STALE,
        poll: float = POLL_SECONDS,
    ) -> None:
        if heartbeat >= stale.total_seconds() / 2:
            raise ValueError("the heartbeat must come well within the staleness window")
        bind = sessions.kw.get("bind")
        if bind is None or job_queue(bind) is not JobQueue.OUTBOX:
            raise ConfigurationError(
                "The in-process background worker runs on a SQLite database only: a "
                "PostgreSQL database is shared by several processes, and its background "
                "work runs in 'talekeeper worker' processes."
            )
        self.sessions = sessions
        self.run = run
        self.heartbeat = heartbeat
        self.stale = stale
        self.poll = poll
        self.owner = f"{os.getpid()}-{secrets.token_hex(8)}"  # this worker's claims
        self.loop: asyncio.AbstractEventLoop | None = None
        self.tasks: dict[Subject, asyncio.Task[None]] = {}
        self._chores: list[asyncio.Task[None]] = []

    async def start(self, *, queue_worker: bool = True, release_claims: bool = True) -> None:
        """Start working. ``queue_worker`` does not apply: an outbox has no other worker
        than this process's (see ``port``)."""
        self.loop = asyncio.get_running_loop()
        if release_claims:
            await asyncio.to_thread(self._release_stale)
        for subject in await asyncio.to_thread(self._waiting):
            self._spawn(subject)
        self._chores = [self.loop.create_task(self._poll()), self.loop.create_task(self._beat())]

    async def stop(self) -> None:
        for chore in self._chores:
            chore.cancel()
        for chore in self._chores:
            with contextlib.suppress(asyncio.CancelledError):
                await chore
        self._chores = []
        for task in list(self.tasks.values()):
            task.cancel()
        for task in list(self.tasks.values()):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.tasks:
            try:  # handed back at once: the next start need not wait for them to go stale
                await asyncio.to_thread(self._release_own)
            except Exception:
                log.exception("releasing this worker's background work claims failed")
        self.tasks.clear()
        self.loop = None

    def request(self, session: Session, subject: Subject, after: timedelta | None = None) -> None:
        """Ask for a run in the caller's transaction; the worker wakes once it commits (a
        run asked for later is found by the poll when its time comes)."""
        JobRepository(session).request_work(subject, None if after is None else utcnow() + after)
        if after is not None:
            return

        def wake(_: Session) -> None:
            self.kick(subject)

        event.listen(session, "after_commit", wake, once=True)

    def pending(self, session: Session, subject: Subject) -> bool:
        return JobRepository(session).job(subject) is not None

    def kick(self, subject: Subject) -> None:
        """Wake the worker for a subject; safe from any thread, a no-op when stopped."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._spawn(subject)
        else:
            loop.call_soon_threadsafe(self._spawn, subject)

    async def idle(self, timeout: float = 60.0) -> None:
        """Wait until no run is going and no job waits (tests and the terminal use it)."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            busy = [t for t in self.tasks.values() if not t.done()]
            if busy:
                await asyncio.wait(busy, timeout=max(0.0, deadline - self._now()))
            waiting = await asyncio.to_thread(self._waiting)
            if not waiting and not any(not t.done() for t in self.tasks.values()):
                return
            for subject in waiting:
                self._spawn(subject)
            if self._now() > deadline:
                raise TimeoutError("background work did not finish in time")
            await asyncio.sleep(0.05)

    def _now(self) -> float:
        return asyncio.get_running_loop().time()

    def _spawn(self, subject: Subject) -> None:
        task = self.tasks.get(subject)
        if task is not None and not task.done():
            return  # the running task sees the newer request when it finishes
        assert self.loop is not None
        self.tasks[subject] = self.loop.create_task(self._drain(subject))

    async def _drain(self, subject: Subject) -> None:
        while True:
            requested = await asyncio.to_thread(self._claim, subject)
            if requested is None:
                return
            try:
                await self.run(subject)
            except Exception:  # the worker loop is a process boundary: log, keep serving
                log.exception("background run for %s failed", subject.key)
            more = await asyncio.to_thread(self._finish, subject, requested)
            if not more:
                return

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.poll)
            try:
                waiting = await asyncio.to_thread(self._waiting)
            except Exception:  # a locked or vanished database must not end the poller
                log.exception("polling for background work failed")
                continue
            for subject in waiting:
                self._spawn(subject)

    async def _beat(self) -> None:
        """Keep this worker's running claims live (see ``STALE``)."""
        while True:
            await asyncio.sleep(self.heartbeat)
            running = [s for s, task in self.tasks.items() if not task.done()]
            if not running:
                continue
            try:
                await asyncio.to_thread(self._refresh, running)
            except Exception:  # a locked database: the next beat tries again, well in time
                log.exception("refreshing background work claims failed")

    # -- the job rows ---------------------------------------------------------------

    def _release_stale(self) -> None:
        with session_scope(self.sessions) as session:
            released = JobRepository(session).release_claims(stale_before=self._cutoff())
        if released:
            log.info("released %d background job claim(s) left by stopped workers", released)

    def _release_own(self) -> None:
        with session_scope(self.sessions) as session:
            JobRepository(session).release_claims(owner=self.owner)

    def _refresh(self, subjects: list[Subject]) -> None:
        with session_scope(self.sessions) as session:
            JobRepository(session).refresh_claims(self.owner, subjects)

    def _cutoff(self) -> datetime:
        return utcnow() - self.stale

    def _waiting(self) -> list[Subject]:
        """Due jobs nobody is running: unclaimed, or claimed by an owner that went silent."""
        with read_scope(self.sessions) as session:
            return JobRepository(session).waiting_jobs(self._cutoff())

    def _claim(self, subject: Subject) -> datetime | None:
        with session_scope(self.sessions) as session:
            return JobRepository(session).claim_job(subject, self.owner, self._cutoff())

    def _finish(self, subject: Subject, requested: datetime) -> bool:
        with session_scope(self.sessions) as session:
            return JobRepository(session).finish_job(subject, requested, self.owner)
