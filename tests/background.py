"""Background work as a harness that runs the runner itself sees it: whether a job waits,
and taking it off the queue once the run is done, on whichever queue the database has
(the ``background_jobs`` outbox on SQLite, procrastinate's on PostgreSQL)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, text, update
from sqlalchemy.orm import Session

from talekeeper.services.background.queue import lock_of
from talekeeper.storage.dialect import JobQueue, job_queue
from talekeeper.storage.models import BackgroundJob
from talekeeper.storage.repositories.jobs import Subject


def take_job(session: Session, adventure_id: int) -> None:
    """What a worker does when its run of the adventure ends: the job is gone."""
    if job_queue(session.get_bind()) is JobQueue.OUTBOX:
        session.execute(
            delete(BackgroundJob).where(
                BackgroundJob.kind == "adventure", BackgroundJob.subject_id == adventure_id
            )
        )
    else:
        session.execute(
            text("DELETE FROM procrastinate_jobs WHERE lock = :lock"),
            {"lock": lock_of(Subject.adventure(adventure_id))},
        )


def postpone(session: Session, subject: Subject, when: datetime) -> None:
    """Push the subject's waiting job to ``when``, as a long backoff would have."""
    if job_queue(session.get_bind()) is JobQueue.OUTBOX:
        session.execute(
            update(BackgroundJob)
            .where(BackgroundJob.kind == subject.kind, BackgroundJob.subject_id == subject.id)
            .values(run_after=when)
        )
    else:
        session.execute(
            text(
                "UPDATE procrastinate_jobs SET scheduled_at = :when "
                "WHERE queueing_lock = :lock AND status = 'todo'"
            ),
            {"when": when, "lock": lock_of(subject)},
        )
