"""The port for "background work needs doing for this adventure", and its contract.

The request-time side (``service.MemorySystem``) asks for work through this protocol
only; an adapter runs the runner (``passes.runner``) out of the turn. Two adapters, one
per kind of queue the database has (``storage.dialect.job_queue``), picked by the
composition root (``bootstrap``):

- ``worker.Worker`` (SQLite): a ``derived_jobs`` row written in the caller's transaction
  (an outbox) and an in-process worker that claims it, in the process that serves.
- ``queue.QueuedWork`` (PostgreSQL): a procrastinate job deferred in the caller's
  transaction, run by ``talekeeper worker`` processes (and, when asked, by this one).

The contract an adapter keeps:

- ``request(session, adventure_id)`` runs inside the caller's transaction (the turn's,
  or the change's) and does not commit: the request exists exactly when that
  transaction commits, so a rolled-back turn leaves no job and a committed one is
  never without its job, whatever crashes after. Requests made before a run starts
  collapse into one run; a request made while a run goes on is followed by another
  run (nothing requested is ever lost, nothing runs twice for one request).
- ``kick(adventure_id)`` comes after the commit, from any thread; it only hastens the
  run, never blocks, and may be a no-op (a poll must find every job anyway). An
  adapter may also wake itself after the caller's commit.
- At most one run per adventure at a time, across every process on the database; a
  run whose process died is run again after a bounded delay.
- A run is ``Run``: the runner's ``run(adventure_id)``, which the adapter is built
  with; the adapter logs and survives any error it raises.
- ``pending(session, adventure_id)``: whether a run of the adventure waits or goes on,
  read in the caller's unit of work (the player's view of the background work).
- ``start`` and ``stop`` run on the event loop that runs the passes; ``stop`` hands
  this process's claims back so another process (or the next start) takes them at
  once. ``start(queue_worker=False)``: where the database's queue is shared, this
  process leaves the runs to the worker processes (``talekeeper serve``); an outbox has
  no worker but this process's, which runs either way. ``idle`` waits until no job
  waits or runs (tests and the terminal use it).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from sqlalchemy.orm import Session

Run = Callable[[int], Awaitable[None]]  # one background run for one adventure


class BackgroundWork(Protocol):
    def request(self, session: Session, adventure_id: int) -> None: ...

    def kick(self, adventure_id: int) -> None: ...

    def pending(self, session: Session, adventure_id: int) -> bool: ...

    async def start(self, *, queue_worker: bool = True) -> None: ...

    async def stop(self) -> None: ...

    async def idle(self, timeout: float = 60.0) -> None: ...
