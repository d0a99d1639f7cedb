"""The PostgreSQL job queue's own table (procrastinate's ``procrastinate_jobs``), read
where the queue's library has no call for it. Never commits.

Invariants:

- A job's ``lock`` and ``queueing_lock`` name its subject (``jobs.Subject.key``);
  ``todo`` is waiting, ``doing`` running. A ``todo`` job whose ``scheduled_at`` lies ahead
  (a retry's backoff) waits for its time: it is not work to wait for yet, unless it is
  the queue's own retry of a run that raised.
- ``hold_waiting`` locks the waiting job's row until the caller's transaction ends, so a
  worker cannot take it between the caller's check and its commit; asked to, it also
  brings that job's time forward to now.
"""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session

# A job put back after its run raised (``attempts``) is work under way; one asked for later
# is not work yet.
_WAITING_OR_RUNNING = text(
    "SELECT EXISTS (SELECT 1 FROM procrastinate_jobs WHERE queue_name = :queue AND "
    "(status = 'doing' OR (status = 'todo' AND "
    "(scheduled_at IS NULL OR scheduled_at <= now() OR attempts > 0))))"
)
_PENDING = text(
    "SELECT EXISTS (SELECT 1 FROM procrastinate_jobs "
    "WHERE lock = :lock AND status IN ('todo', 'doing'))"
)
# The waiting job, held until the caller's transaction ends (see the module's invariants).
_HOLD_WAITING = text(
    "SELECT id FROM procrastinate_jobs WHERE queueing_lock = :lock AND status = 'todo' FOR UPDATE"
)
_NOW = text("UPDATE procrastinate_jobs SET scheduled_at = NULL WHERE id = :id")


class QueueRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def waiting_or_running(self, queue: str) -> bool:
        """Whether any job of ``queue`` runs, waits and is due, or waits to be retried."""
        return bool(self.session.scalar(_WAITING_OR_RUNNING, {"queue": queue}))

    def pending(self, lock: str) -> bool:
        """Whether a job of this lock waits or runs."""
        return bool(self.session.scalar(_PENDING, {"lock": lock}))

    def hold_waiting(self, lock: str, *, now: bool = False) -> bool:
        """Lock the waiting job of this queueing lock, if there is one, and with ``now``
        make it due at once; whether there was one."""
        found = self.session.execute(_HOLD_WAITING, {"lock": lock}).first()
        if found is not None and now:
            self.session.execute(_NOW, {"id": found[0]})
        return found is not None
