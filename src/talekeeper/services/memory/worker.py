"""The in-process background worker: one run per adventure at a time, never in a turn.

Invariants:

- Work exists as a ``derived_jobs`` row written in the transaction of the turn
  (or change) that caused it, so it exists exactly when that commit happened.
- A run claims the row (``claimed_at``) in its own transaction, runs every
  pass, then deletes the row — unless a newer request arrived during the run,
  in which case it runs again. At most one run per adventure at a time in this
  process (one task per adventure), and a claim held by another live process
  is respected until ``LEASE`` runs out.
- After a restart or a kill -9, ``start`` releases this deployment's stale
  claims (in-process mode: this process is the only worker) and runs every
  waiting job; a poll every ``POLL_SECONDS`` picks up jobs whose wake-up was
  lost. The turn never waits for any of this.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta

from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from talekeeper.core.clock import utcnow
from talekeeper.storage.db import session_scope
from talekeeper.storage.models import DerivedJob
from talekeeper.storage.repositories.memory import MemoryRepository

log = logging.getLogger(__name__)

LEASE = timedelta(minutes=10)  # longer than any run; a claim older than this was abandoned
POLL_SECONDS = 5.0  # how soon a job whose wake-up was lost still runs


class Worker:
    def __init__(
        self, sessions: sessionmaker[Session], run: Callable[[int], Awaitable[None]]
    ) -> None:
        self.sessions = sessions
        self.run = run
        self.loop: asyncio.AbstractEventLoop | None = None
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self._poller: asyncio.Task[None] | None = None

    async def start(self, *, release_claims: bool = True) -> None:
        self.loop = asyncio.get_running_loop()
        if release_claims:
            await asyncio.to_thread(self._release_claims)
        for adventure_id in await asyncio.to_thread(self._waiting):
            self._spawn(adventure_id)
        self._poller = self.loop.create_task(self._poll())

    async def stop(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
        for task in list(self.tasks.values()):
            task.cancel()
        for task in list(self.tasks.values()):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self.tasks.clear()
        self.loop = None

    def kick(self, adventure_id: int) -> None:
        """Wake the worker for an adventure; safe from any thread, a no-op when stopped."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._spawn(adventure_id)
        else:
            loop.call_soon_threadsafe(self._spawn, adventure_id)

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
            for adventure_id in waiting:
                self._spawn(adventure_id)
            if self._now() > deadline:
                raise TimeoutError("background work did not finish in time")
            await asyncio.sleep(0.05)

    def _now(self) -> float:
        return asyncio.get_running_loop().time()

    def _spawn(self, adventure_id: int) -> None:
        task = self.tasks.get(adventure_id)
        if task is not None and not task.done():
            return  # the running task sees the newer request when it finishes
        assert self.loop is not None
        self.tasks[adventure_id] = self.loop.create_task(self._drain(adventure_id))

    async def _drain(self, adventure_id: int) -> None:
        while True:
            requested = await asyncio.to_thread(self._claim, adventure_id)
            if requested is None:
                return
            try:
                await self.run(adventure_id)
            except Exception:  # the worker loop is a process boundary: log, keep serving
                log.exception("background run for adventure %s failed", adventure_id)
            more = await asyncio.to_thread(self._finish, adventure_id, requested)
            if not more:
                return

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(POLL_SECONDS)
            try:
                waiting = await asyncio.to_thread(self._waiting)
            except Exception:  # a locked or vanished database must not end the poller
                log.exception("polling for background work failed")
                continue
            for adventure_id in waiting:
                self._spawn(adventure_id)

    # -- the job rows ---------------------------------------------------------------

    def _release_claims(self) -> None:
        with session_scope(self.sessions) as session:
            session.execute(update(DerivedJob).values(claimed_at=None))

    def _waiting(self) -> list[int]:
        """Jobs nobody is running: unclaimed, or claimed longer than the lease ago."""
        cutoff = utcnow() - LEASE
        with session_scope(self.sessions) as session:
            return [
                job.adventure_id
                for job in MemoryRepository(session).jobs()
                if job.claimed_at is None or job.claimed_at < cutoff
            ]

    def _claim(self, adventure_id: int) -> datetime | None:
        with session_scope(self.sessions) as session:
            job = MemoryRepository(session).job(adventure_id)
            if job is None:
                return None
            if job.claimed_at is not None and job.claimed_at >= utcnow() - LEASE:
                return None
            job.claimed_at = utcnow()
            return job.requested_at

    def _finish(self, adventure_id: int, requested: datetime) -> bool:
        with session_scope(self.sessions) as session:
            return MemoryRepository(session).finish_job(adventure_id, requested)
