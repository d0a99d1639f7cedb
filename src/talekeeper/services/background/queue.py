"""Background work on a database that several processes share: procrastinate's job queue.

The adapter of ``port.BackgroundWork`` where the database keeps a shared queue
(``storage.dialect.job_queue``: PostgreSQL). Any number of processes defer work into it
(``talekeeper serve`` on several machines, ``talekeeper play``) and any number of
workers run it (``talekeeper worker``, or ``start(queue_worker=True)`` in this process).

Invariants:

- A request is one procrastinate job (on queue ``QUEUE``: task ``TASK`` with arguments
  ``{"adventure_id": id}`` for an adventure's passes, ``INDEX_TASK`` with
  ``{"source_id": id}`` for a library source's vectors) inserted on the caller's own
  connection, inside its
  transaction, in a savepoint: it exists exactly when that transaction commits, so a
  rolled-back turn leaves no job; the commit sends the NOTIFY that wakes the workers
  (``kick`` has nothing to do). Deferring goes through procrastinate's own job manager
  (``defer_job(job, connection=...)``) on a connector that is never opened
  (``_deferrer``: no pool, no connection of its own), rather than through SQL of ours: the
  job's columns, its encoding and the SQL function that inserts it stay procrastinate's,
  and a queueing-lock conflict comes back as its ``AlreadyEnqueued``.
- ``lock`` = ``queueing_lock`` = ``lock_of(subject)``: at most one run of a subject goes
  on at a time across every worker (a job whose lock is held is not fetched), and at
  most one waits. A request with ``after`` defers its job to that time
  (``scheduled_at``); one without makes a waiting job due at once. A request that finds
  one waiting is success: its savepoint is rolled back, the caller's transaction goes
  on, and the waiting job's row is locked (``FOR UPDATE``) until the caller commits or
  rolls back. Workers fetch with ``SKIP LOCKED``, so that job cannot start before the
  work it now stands for is committed and visible: nothing requested is lost, and
  requests made before a run starts collapse into it.
- A run is the subject's run (``port.dispatch``); runs record their own failures, so it
  raises only on a fault of the database or the process. Then the job is retried with
  exponential backoff (``RETRY``), and after its last attempt it stays as failed (the
  next request makes a new job) for ``KEEP_FAILED_HOURS``. Succeeded jobs are deleted.
- A job left running by a worker that died (SIGKILL, a lost machine) runs again: every
  worker sends a heartbeat every ``stalled_after / 3`` seconds, and every worker puts
  back, as often, the jobs of workers silent for ``stalled_after`` (``_put_back``). The
  pass seam's re-check makes a run done twice write nothing twice.
- Putting a job back (after an error or a stall) while another job of its subject
  waits would break procrastinate's unique queueing lock; the job is then deleted
  instead (``_Covered``): the waiting job does the same whole run.
- A lock that is freed sends no NOTIFY, so workers also poll every ``POLL_SECONDS``.
- Workers use the queue's own connection pool (procrastinate's, over psycopg's async
  pool) and one connection of their own, outside that pool, for LISTEN: the database URL
  must reach the server directly or through a pooler in session mode.
- A worker stops only when asked (SIGTERM or SIGINT for ``talekeeper worker``, ``stop``
  here), and always through procrastinate's graceful stop, never a cancellation. One
  that stops on its own (the server restarted: its heartbeat or LISTEN connection
  failed) starts again after ``RESTART_SECONDS``. Its hourly housekeeping job
  (``PRUNE_TASK``, deleting old failed jobs) is what lets it notice such a failure (see
  ``_worker_app``).
- Nothing here assumes that this process is the only worker: nothing is released or
  reset at start, and ``stop`` hands a running job back (aborted, so it is retried)
  rather than dropping it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from datetime import timedelta
from typing import Any

from procrastinate import App, PsycopgConnector, RetryStrategy, SyncPsycopgConnector
from procrastinate.exceptions import AlreadyEnqueued, ConnectorException, UniqueViolation
from procrastinate.jobs import Job, Status
from procrastinate.manager import QUEUEING_LOCK_CONSTRAINT, JobManager
from procrastinate.worker import Worker as ProcrastinateWorker
from sqlalchemy.orm import Session, sessionmaker

from talekeeper.core.clock import utcnow
from talekeeper.services.background.port import Run, Subject, WorkKind
from talekeeper.storage.db import busy, read_scope
from talekeeper.storage.repositories.queue import QueueRepository

log = logging.getLogger(__name__)

TASK = "talekeeper.passes"  # an adventure's run: all its memory passes
INDEX_TASK = "talekeeper.index"  # a library source's run: its missing vectors
QUEUE = "passes"
# Each kind's task, and the name its subject's id goes by among the task's arguments.
TASKS = {
    WorkKind.ADVENTURE: (TASK, "adventure_id"),
    WorkKind.LIBRARY_SOURCE: (INDEX_TASK, "source_id"),
}
POLL_SECONDS = 0.5  # a freed lock sends no NOTIFY: the next run of an adventure waits this long
CONCURRENCY = 4  # jobs one worker runs at once (one per subject, by the lock)
STALLED_AFTER = 30.0  # seconds without a heartbeat after which a worker's jobs run elsewhere
GRACE_SECONDS = 20.0  # how long a stopping `talekeeper worker` lets its running jobs finish
RESTART_SECONDS = 5.0  # how soon a worker that stopped on an error starts again
# Retries of a run that raised: 2, 4, 8 .. 256 seconds apart, then the job stays failed.
RETRY = RetryStrategy(max_attempts=8, exponential_wait=2)
DEFER_ATTEMPTS = 3  # a waiting job taken by a worker between two statements: defer again
IDLE_POLL_SECONDS = 0.05
PRUNE_TASK = "talekeeper.prune_jobs"  # hourly: failed jobs kept a week, then deleted
PRUNE_CRON = "17 * * * *"
KEEP_FAILED_HOURS = 7 * 24
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
STOP_REPEAT_SECONDS = 0.2


def lock_of(subject: Subject) -> str:
    """The lock and queueing lock of a subject's jobs (``adventure:12``, as ever)."""
    return subject.key


class _Covered(JobManager):
    """Procrastinate's job manager, except that a job put back while another job of its
    subject waits is deleted: the waiting one does the same run (see the invariants)."""

    async def retry_job_by_id_async(
        self,
        job_id: int,
        retry_at: Any,
        priority: int | None = None,
        queue: str | None = None,
        lock: str | None = None,
    ) -> None:
        try:
            await super().retry_job_by_id_async(job_id, retry_at, priority, queue, lock)
        except UniqueViolation as exc:
            if exc.constraint_name != QUEUEING_LOCK_CONSTRAINT:
                raise
            log.info(
                "background job %s is not retried: the job waiting after it does its run", job_id
            )
            await self.finish_job_by_id_async(job_id, Status.FAILED, delete_job=True)


class QueuedWork:
    """The ``BackgroundWork`` adapter over procrastinate's queue (see the module)."""

    def __init__(self, sessions: sessionmaker[Session], run: Run, *, conninfo: str) -> None:
        self.sessions = sessions
        self.run = run
        self.conninfo = conninfo  # libpq's, for the workers' pool and LISTEN connection
        # Never opened: every statement it sends goes over a connection the caller passes.
        # A bare job manager, not an app: an app and a deferral each log a line, on every
        # command's console (a one-shot command defers work too).
        self._deferrer = JobManager(SyncPsycopgConnector())
        self._here: asyncio.Task[None] | None = None  # this process's worker, when asked
        self._stop_here = asyncio.Event()

    # -- the request side -------------------------------------------------------------

    def request(self, session: Session, subject: Subject, after: timedelta | None = None) -> None:
        """Defer a run in the caller's transaction (see the module's invariants)."""
        lock = lock_of(subject)
        task, argument = TASKS[subject.kind]
        for _ in range(DEFER_ATTEMPTS):
            try:
                with session.begin_nested():
                    connection = session.connection().connection.driver_connection
                    job = Job(
                        queue=QUEUE,
                        lock=lock,
                        queueing_lock=lock,
                        task_name=task,
                        task_kwargs={argument: subject.id},
                        scheduled_at=None if after is None else utcnow() + after,
                    )
                    self._deferrer.defer_job(job, connection=connection)
                return
            except AlreadyEnqueued:
                pass  # rolled back to the savepoint; the caller's transaction is intact
            if QueueRepository(session).hold_waiting(lock, now=after is None):
                return
        raise busy()  # a worker took the waiting job at each attempt: the caller retries

    def kick(self, subject: Subject) -> None:
        """Nothing to do: the caller's commit sent the NOTIFY that wakes the workers."""

    def pending(self, session: Session, subject: Subject) -> bool:
        return QueueRepository(session).pending(lock_of(subject))

    # -- running workers --------------------------------------------------------------

    async def start(self, *, queue_worker: bool = True) -> None:
        """With ``queue_worker``, also run a worker of the queue in this process (playing
        in the terminal, the tests); without, leave the runs to ``talekeeper worker``."""
        if not queue_worker:
            log.info(
                "The background passes (memories, summaries, embeddings) of this PostgreSQL "
                "database run in 'talekeeper worker' processes: keep at least one running."
            )
            return
        if self._here is None or self._here.done():
            self._stop_here = asyncio.Event()
            # Stopping this process's worker hands its jobs back at once: a stopping
            # ``play`` or test must not wait for a model; the job is retried a moment later.
            work = self.work(grace=0.0, stop=self._stop_here)
            self._here = asyncio.get_running_loop().create_task(work)

    async def stop(self) -> None:
        """Stop this process's worker: a running job is aborted and retried, by another
        worker or by the next start."""
        here, self._here = self._here, None
        if here is None:
            return
        self._stop_here.set()
        await here

    async def idle(self, timeout: float = 60.0) -> None:
        """Wait until no job of the queue waits or runs, whichever worker runs it."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while await asyncio.to_thread(self._waiting_or_running):
            if loop.time() > deadline:
                raise TimeoutError("background work did not finish in time")
            await asyncio.sleep(IDLE_POLL_SECONDS)

    async def work(
        self,
        *,
        concurrency: int = CONCURRENCY,
        stalled_after: float = STALLED_AFTER,
        grace: float = GRACE_SECONDS,
        signals: bool = False,
        stop: asyncio.Event | None = None,
    ) -> None:
        """Run a worker until ``stop`` is set, or with ``signals`` until SIGTERM or SIGINT
        (a second signal ends the process at once). Its running jobs then get ``grace``
        seconds to finish, and are aborted and retried after. A worker that stops on its
        own (the server went away, or a connection it needs) starts again after
        ``RESTART_SECONDS``: only a stop asked for ends this."""
        loop = asyncio.get_running_loop()
        asked = stop if stop is not None else asyncio.Event()
        if signals:
            for signum in STOP_SIGNALS:
                loop.add_signal_handler(signum, self._stop_asked, loop, asked, grace)
        try:
            while True:
                try:
                    await self._work_once(concurrency, stalled_after, grace, asked)
                except Exception:  # the worker is a process boundary: log, start again
                    log.exception(
                        "The background worker stopped on an error; unless it was asked to "
                        "stop, it starts again in %g s.",
                        RESTART_SECONDS,
                    )
                else:
                    if not asked.is_set():
                        log.error(
                            "The background worker stopped (a connection it needs was lost); "
                            "it starts again in %g s.",
                            RESTART_SECONDS,
                        )
                if asked.is_set():
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asked.wait(), RESTART_SECONDS)
                    return
        finally:
            if signals:
                for signum in STOP_SIGNALS:
                    loop.remove_signal_handler(signum)

    @staticmethod
    def _stop_asked(loop: asyncio.AbstractEventLoop, stop: asyncio.Event, grace: float) -> None:
        for signum in STOP_SIGNALS:  # a second signal acts as it would anywhere: at once
            loop.remove_signal_handler(signum)
        if not stop.is_set():
            log.info(
                "Stopping: running passes have %g s to finish, then run again elsewhere "
                "(a second Ctrl-C or SIGTERM stops at once).",
                grace,
            )
        stop.set()

    async def _work_once(
        self, concurrency: int, stalled_after: float, grace: float, stop: asyncio.Event
    ) -> None:
        """One procrastinate worker, from opening its pool to closing it: until ``stop``,
        or until it stops on its own (then its error, if any, is raised)."""
        app = self._worker_app(concurrency)
        heartbeat = stalled_after / 3
        try:
            await app.open_async()
            worker = ProcrastinateWorker(
                app,
                name=f"passes-{os.getpid()}",
                queues=[QUEUE],
                concurrency=concurrency,
                fetch_job_polling_interval=POLL_SECONDS,
                shutdown_graceful_timeout=grace,
                delete_jobs="successful",
                install_signal_handlers=False,  # ours (``work``) tell a stop from a failure
                update_heartbeat_interval=heartbeat,
                stalled_worker_timeout=stalled_after,
            )
            running = asyncio.create_task(worker.run())  # type: ignore[no-untyped-call]
            put_back = asyncio.create_task(self._put_back(app, heartbeat, stalled_after))
            asked = asyncio.create_task(stop.wait())
            try:
                await asyncio.wait({running, asked}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                asked.cancel()
                put_back.cancel()
                # A graceful stop however far the worker got, never a cancellation (which a
                # library may swallow while it connects). The request is repeated: one made
                # before its run began is forgotten when it begins.
                while not running.done():
                    worker.stop()  # type: ignore[no-untyped-call]
                    await asyncio.wait({running}, timeout=STOP_REPEAT_SECONDS)
                with contextlib.suppress(asyncio.CancelledError):
                    await put_back
            running.result()  # its error, when it stopped on one
        finally:
            # Also a pool left half open by a stop while it connected: its own tasks would
            # outlive the event loop.
            await app.close_async()

    def _worker_app(self, concurrency: int) -> App:
        """An app of its own per worker: its pool, its tasks bound to this runner."""
        connector = PsycopgConnector(conninfo=self.conninfo, min_size=1, max_size=concurrency + 2)
        # A periodic task is deferred at its own ticks only, never late on a worker's start.
        app = App(connector=connector, periodic_defaults={"max_delay": 1.0})
        app.job_manager = _Covered(connector)
        app.task(name=TASK, queue=QUEUE, retry=RETRY)(self._passes)
        app.task(name=INDEX_TASK, queue=QUEUE, retry=RETRY)(self._index)

        async def prune(timestamp: int) -> None:
            await app.job_manager.delete_old_jobs(
                nb_hours=KEEP_FAILED_HOURS, queue=QUEUE, include_failed=True, include_aborted=True
            )

        # Housekeeping, and more: with a periodic task, procrastinate's deferrer keeps
        # running, and only then does its worker notice that another of its side tasks (the
        # heartbeat, the LISTEN connection) died, and stop, for ``work`` to start it again.
        # Without one, a worker whose heartbeat died in a server restart would run on,
        # and its jobs be taken for a dead worker's and run twice at once.
        pruning = app.task(name=PRUNE_TASK, queue=QUEUE)(prune)
        app.periodic(cron=PRUNE_CRON, periodic_id="prune")(pruning)
        return app

    async def _passes(self, adventure_id: int) -> None:
        await self.run(Subject.adventure(adventure_id))

    async def _index(self, source_id: int) -> None:
        await self.run(Subject.library_source(source_id))

    async def _put_back(self, app: App, every: float, stalled_after: float) -> None:
        """Queue again the jobs of workers that stopped sending heartbeats (killed)."""
        while True:
            await asyncio.sleep(every)
            try:
                stalled = await app.job_manager.get_stalled_jobs(
                    queue=QUEUE, seconds_since_heartbeat=stalled_after
                )
                for job in stalled:
                    try:
                        await app.job_manager.retry_job(job)
                    except ConnectorException:
                        continue  # another worker put it back first
                    log.warning(
                        "Background job %s was left by a worker that stopped (no heartbeat "
                        "for %g s): it runs again.",
                        job.call_string,
                        stalled_after,
                    )
            except Exception:  # the server away for a moment: the next round tries again
                log.exception("looking for background runs left by stopped workers failed")

    def _waiting_or_running(self) -> bool:
        with read_scope(self.sessions) as session:
            return QueueRepository(session).waiting_or_running(QUEUE)
