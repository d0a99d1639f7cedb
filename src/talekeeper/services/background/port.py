"""The port for "background work needs doing for this subject", and its contract.

A subject (``Subject``) is what one run works on: an adventure (every memory pass:
``services.memory.passes.runner``) or a knowledge library source (its vectors:
``services.library.indexer``). The request-time side (the memory system, the library)
asks for work through this protocol only; an adapter runs the subject's run out of the
request. Two adapters, one per kind of queue the database has
(``storage.dialect.job_queue``), picked by the composition root (``bootstrap``):

- ``worker.Worker`` (SQLite): a ``background_jobs`` row written in the caller's
  transaction (an outbox) and an in-process worker that claims it, in the process that
  serves.
- ``queue.QueuedWork`` (PostgreSQL): a procrastinate job deferred in the caller's
  transaction, run by ``talekeeper worker`` processes (and, when asked, by this one).

The contract an adapter keeps:

- ``request(session, subject, after=None)`` runs inside the caller's transaction (the
  turn's, the change's, the upload's) and does not commit: the request exists exactly
  when that transaction commits, so a rolled-back turn leaves no job and a committed one
  is never without its job, whatever crashes after. Requests made before a run starts
  collapse into one run; a request made while a run goes on is followed by another run
  (nothing requested is ever lost, nothing runs twice for one request). ``after``: not
  before that long from now (a retry's backoff); a request without it makes a waiting
  job due at once (a player asking to retry now wins over the backoff).
- ``kick(subject)`` comes after the commit, from any thread; it only hastens the
  run, never blocks, and may be a no-op (a poll must find every job anyway). An
  adapter may also wake itself after the caller's commit.
- At most one run per subject at a time, across every process on the database; a
  run whose process died is run again after a bounded delay.
- A run is ``Run``: ``run(subject)``, which the adapter is built with (``dispatch`` hands
  each kind to its owner); the adapter logs and survives any error it raises.
- ``pending(session, subject)``: whether a run of the subject waits or goes on,
  read in the caller's unit of work (the player's view of the background work).
- ``start`` and ``stop`` run on the event loop that runs the passes; ``stop`` hands
  this process's claims back so another process (or the next start) takes them at
  once. ``start(queue_worker=False)``: where the database's queue is shared, this
  process leaves the runs to the worker processes (``talekeeper serve``); an outbox has
  no worker but this process's, which runs either way. ``idle`` waits until no job
  waits or runs (tests and the terminal use it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from typing import Protocol

from sqlalchemy.orm import Session

from talekeeper.storage.repositories.jobs import Subject
from talekeeper.storage.vocabulary import WorkKind

__all__ = ["BackgroundWork", "Run", "Subject", "WorkKind", "dispatch"]

Run = Callable[[Subject], Awaitable[None]]  # one background run for one subject
RunOf = Callable[[int], Awaitable[None]]  # one kind's run, given its subject's id


class BackgroundWork(Protocol):
    def request(self, session: Session, subject: Subject, after: timedelta | None = None) -> None:
        """Ask for a run of ``subject`` in the caller's transaction (see the contract)."""

    def kick(self, subject: Subject) -> None: ...

    def pending(self, session: Session, subject: Subject) -> bool: ...

    async def start(self, *, queue_worker: bool = True) -> None: ...

    async def stop(self) -> None: ...

    async def idle(self, timeout: float = 60.0) -> None: ...


def dispatch(runs: Mapping[WorkKind, RunOf]) -> Run:
    """One ``Run`` for every kind of subject: each goes to its owner's run. A kind with no
    run here (a job a newer version wrote) is an error the adapter logs, never a crash."""

    async def run(subject: Subject) -> None:
        owner = runs.get(subject.kind)
        if owner is None:
            raise LookupError(f"no background run for {subject.key}")
        await owner(subject.id)

    return run
