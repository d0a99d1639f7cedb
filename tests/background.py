"""Background work as a harness that runs the runner itself sees it: whether a job waits,
and taking it off the queue once the run is done, on whichever queue the database has
(the ``derived_jobs`` outbox on SQLite, procrastinate's on PostgreSQL)."""

from __future__ import annotations

from sqlalchemy import delete, text
from sqlalchemy.orm import Session

from talekeeper.services.memory.queue import lock_of
from talekeeper.storage.dialect import JobQueue, job_queue
from talekeeper.storage.models import DerivedJob


def take_job(session: Session, adventure_id: int) -> None:
    """What a worker does when its run of the adventure ends: the job is gone."""
    if job_queue(session.get_bind()) is JobQueue.OUTBOX:
        session.execute(delete(DerivedJob).where(DerivedJob.adventure_id == adventure_id))
    else:
        session.execute(
            text("DELETE FROM procrastinate_jobs WHERE lock = :lock"),
            {"lock": lock_of(adventure_id)},
        )
