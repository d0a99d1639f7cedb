"""The PostgreSQL job queue's own table (procrastinate's ``procrastinate_jobs``), read
where the queue's library has no call for it. Never commits.

Invariants:

- A job's ``lock`` and ``queueing_lock`` name its adventure (``memory.queue.lock_of``);
  ``todo`` is waiting, ``doing`` running.
- ``hold_waiting`` locks the waiting job's row until the caller's transaction ends, so a
  worker cannot take it between the caller's check and its commit.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session

_WAITING_OR_RUNNING = text(
    "SELECT EXISTS (SELECT 1 FROM procrastinate_jobs "
    "WHERE queue_name = :queue AND status IN ('todo', 'doing'))"
)
_PENDING = text(
    "SELECT EXISTS (SELECT 1 FROM procrastinate_jobs "
    "WHERE lock = :lock AND status IN ('todo', 'doing'))"
)
# The waiting job, held until the caller's transaction ends (see the module's invariants).
_HOLD_WAITING = text(
    "SELECT id FROM procrastinate_jobs WHERE queueing_lock = :lock AND status = 'todo' FOR UPDATE"
)


class QueueRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def waiting_or_running(self, queue: str) -> bool:
        """Whether any job of ``queue`` waits or runs."""
        return bool(self.session.scalar(_WAITING_OR_RUNNING, {"queue": queue}))

    def pending(self, lock: str) -> bool:
        """Whether a job of this lock waits or runs."""
        return bool(self.session.scalar(_PENDING, {"lock": lock}))

    def hold_waiting(self, lock: str) -> bool:
        """Lock the waiting job of this queueing lock, if there is one; whether there was."""
        return self.session.execute(_HOLD_WAITING, {"lock": lock}).first() is not None
