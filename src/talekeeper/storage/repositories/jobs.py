"""The background work's rows: the pending job of each subject (``BackgroundJob``:
requested, perhaps not before ``run_after``, claimed by a worker) and each memory pass's
state (``DerivedState``). Never commits.

Invariants:

- A subject is ``(kind, subject_id)`` (``Subject``): one job per subject at most.
- A job's claim names its owner (a worker's token); claiming is one conditional
  UPDATE, so of two workers racing for a job exactly one wins, and a claim is
  free again only when unclaimed or not refreshed since the staleness cutoff. A job
  waiting for its ``run_after`` is neither waiting nor claimable before then.
- A request for a job nobody runs keeps the sooner of the two times it may run; a request
  made during a run sets the next run's time (the run under way consumed the earlier one).
- A job is dropped only by its owner, and only when nothing was requested since the run
  began (``finish_job``); a later request keeps it waiting.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import and_, delete, or_, select, tuple_, update
from sqlalchemy.orm import Session

from talekeeper.core.clock import utcnow
from talekeeper.storage.models import BackgroundJob, DerivedState
from talekeeper.storage.vocabulary import PassState, WorkKind


class Subject(NamedTuple):
    """What one job works on: an adventure's memory passes, a library source's vectors."""

    kind: WorkKind
    id: int

    @classmethod
    def adventure(cls, adventure_id: int) -> Subject:
        return cls(WorkKind.ADVENTURE, adventure_id)

    @classmethod
    def library_source(cls, source_id: int) -> Subject:
        return cls(WorkKind.LIBRARY_SOURCE, source_id)

    @property
    def key(self) -> str:
        """``kind:id``, as logs and the PostgreSQL queue's locks name it."""
        return f"{self.kind.value}:{self.id}"


def _free_claim(stale_before: datetime) -> Any:
    """Jobs nobody live holds: unclaimed, or a claim last refreshed before ``stale_before``."""
    return or_(BackgroundJob.claimed_at.is_(None), BackgroundJob.claimed_at < stale_before)


def _due(now: datetime) -> Any:
    return or_(BackgroundJob.run_after.is_(None), BackgroundJob.run_after <= now)


def _is(subject: Subject) -> Any:
    return and_(BackgroundJob.kind == subject.kind, BackgroundJob.subject_id == subject.id)


def _later(one: datetime | None, other: datetime | None) -> datetime | None:
    """The sooner of two times a job may run (None: at once)."""
    return None if one is None or other is None else min(one, other)


class JobRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def request_work(self, subject: Subject, run_after: datetime | None = None) -> None:
        """Record (or refresh) the subject's pending run: at once, or not before
        ``run_after`` (see the module's invariants for a job that already waits)."""
        job = self.job(subject)
        if job is None:
            self.session.add(
                BackgroundJob(
                    kind=subject.kind,
                    subject_id=subject.id,
                    requested_at=utcnow(),
                    run_after=run_after,
                )
            )
        else:
            job.requested_at = utcnow()
            running = job.claimed_by is not None
            job.run_after = run_after if running else _later(job.run_after, run_after)
        self.session.flush()

    def job(self, subject: Subject) -> BackgroundJob | None:
        return self.session.get(BackgroundJob, (subject.kind.value, subject.id))

    def waiting_jobs(self, stale_before: datetime) -> list[Subject]:
        """Subjects whose job is due and nobody runs: unclaimed, or claimed by an owner that
        stopped refreshing its claim before ``stale_before``."""
        query = select(BackgroundJob.kind, BackgroundJob.subject_id).where(
            _free_claim(stale_before), _due(utcnow())
        )
        return [Subject(WorkKind(k), int(i)) for k, i in self.session.execute(query).all()]

    def claim_job(self, subject: Subject, owner: str, stale_before: datetime) -> datetime | None:
        """Claim the due job for ``owner`` if nobody live holds it: one conditional UPDATE,
        so two workers racing for it cannot both win. Returns its ``requested_at``, or None."""
        claimed = self.session.execute(
            update(BackgroundJob)
            .where(_is(subject), _free_claim(stale_before), _due(utcnow()))
            .values(claimed_by=owner, claimed_at=utcnow())
            .execution_options(synchronize_session=False)
        )
        if getattr(claimed, "rowcount", 0) != 1:
            return None
        return self.session.scalar(select(BackgroundJob.requested_at).where(_is(subject)))

    def refresh_claims(self, owner: str, subjects: Sequence[Subject]) -> int:
        """Mark ``owner``'s claims on these jobs as still held now; returns how many it holds."""
        if not subjects:
            return 0
        keys = [(s.kind.value, s.id) for s in subjects]
        refreshed = self.session.execute(
            update(BackgroundJob)
            .where(
                BackgroundJob.claimed_by == owner,
                tuple_(BackgroundJob.kind, BackgroundJob.subject_id).in_(keys),
            )
            .values(claimed_at=utcnow())
            .execution_options(synchronize_session=False)
        )
        return int(getattr(refreshed, "rowcount", 0))

    def release_claims(
        self, *, owner: str | None = None, stale_before: datetime | None = None
    ) -> int:
        """Release ``owner``'s claims; or, with ``stale_before``, every claim whose owner
        stopped refreshing it before then, and every claim with no owner (written before
        claims had one, by a version whose every start released them all)."""
        if owner is not None:
            which: Any = BackgroundJob.claimed_by == owner
        else:
            assert stale_before is not None
            which = and_(
                BackgroundJob.claimed_at.is_not(None),
                or_(BackgroundJob.claimed_by.is_(None), BackgroundJob.claimed_at < stale_before),
            )
        released = self.session.execute(
            update(BackgroundJob)
            .where(which)
            .values(claimed_by=None, claimed_at=None)
            .execution_options(synchronize_session=False)
        )
        return int(getattr(released, "rowcount", 0))

    def finish_job(self, subject: Subject, requested_at: datetime, owner: str) -> bool:
        """Drop ``owner``'s job if nothing new was requested since ``requested_at``; else
        release it. Returns whether more work is due now (a request for later is found by
        the poll when its time comes). A job that another worker took over meanwhile (this
        one stopped refreshing its claim) is left to that worker."""
        job = self.job(subject)
        if job is None or job.claimed_by != owner:
            return False
        if job.requested_at <= requested_at:
            self.session.execute(delete(BackgroundJob).where(_is(subject)))
            return False
        job.claimed_at = None
        job.claimed_by = None
        return job.run_after is None or job.run_after <= utcnow()

    def states(self, adventure_id: int) -> dict[str, DerivedState]:
        query = select(DerivedState).where(DerivedState.adventure_id == adventure_id)
        return {row.kind: row for row in self.session.scalars(query).all()}

    def state(self, adventure_id: int, kind: str) -> DerivedState:
        row = self.session.get(DerivedState, (adventure_id, kind))
        if row is None:
            row = DerivedState(
                adventure_id=adventure_id,
                kind=kind,
                state=PassState.IDLE,
                did_work=False,
                failures=0,
            )
            self.session.add(row)
        return row
