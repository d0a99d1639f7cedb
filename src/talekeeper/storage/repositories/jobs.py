"""The background work's rows: an adventure's pending job (``DerivedJob``: requested,
claimed by a worker) and each pass's state (``DerivedState``). Never commits.

Invariants:

- A job's claim names its owner (a worker's token); claiming is one conditional
  UPDATE, so of two workers racing for a job exactly one wins, and a claim is
  free again only when unclaimed or not refreshed since the staleness cutoff.
- A job is dropped only by its owner, and only when nothing was requested since the run
  began (``finish_job``); a later request keeps it waiting.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, delete, or_, select, update
from sqlalchemy.orm import Session

from talekeeper.core.clock import utcnow
from talekeeper.storage.models import DerivedJob, DerivedState
from talekeeper.storage.vocabulary import PassState


def _free_claim(stale_before: datetime) -> Any:
    """Jobs nobody live holds: unclaimed, or a claim last refreshed before ``stale_before``."""
    return or_(DerivedJob.claimed_at.is_(None), DerivedJob.claimed_at < stale_before)


class JobRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def request_work(self, adventure_id: int) -> None:
        """Record (or refresh) the adventure's pending background run."""
        job = self.session.get(DerivedJob, adventure_id)
        if job is None:
            self.session.add(DerivedJob(adventure_id=adventure_id, requested_at=utcnow()))
        else:
            job.requested_at = utcnow()
        self.session.flush()

    def job(self, adventure_id: int) -> DerivedJob | None:
        return self.session.get(DerivedJob, adventure_id)

    def waiting_jobs(self, stale_before: datetime) -> list[int]:
        """Adventures whose job nobody runs: unclaimed, or claimed by an owner that stopped
        refreshing its claim before ``stale_before``."""
        query = select(DerivedJob.adventure_id).where(_free_claim(stale_before))
        return [int(a) for a in self.session.scalars(query).all()]

    def claim_job(self, adventure_id: int, owner: str, stale_before: datetime) -> datetime | None:
        """Claim the job for ``owner`` if nobody live holds it: one conditional UPDATE, so
        two workers racing for it cannot both win. Returns its ``requested_at``, or None."""
        claimed = self.session.execute(
            update(DerivedJob)
            .where(DerivedJob.adventure_id == adventure_id, _free_claim(stale_before))
            .values(claimed_by=owner, claimed_at=utcnow())
            .execution_options(synchronize_session=False)
        )
        if getattr(claimed, "rowcount", 0) != 1:
            return None
        query = select(DerivedJob.requested_at).where(DerivedJob.adventure_id == adventure_id)
        return self.session.scalar(query)

    def refresh_claims(self, owner: str, adventure_ids: Sequence[int]) -> int:
        """Mark ``owner``'s claims on these jobs as still held now; returns how many it holds."""
        if not adventure_ids:
            return 0
        refreshed = self.session.execute(
            update(DerivedJob)
            .where(DerivedJob.claimed_by == owner, DerivedJob.adventure_id.in_(adventure_ids))
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
            which: Any = DerivedJob.claimed_by == owner
        else:
            assert stale_before is not None
            which = and_(
                DerivedJob.claimed_at.is_not(None),
                or_(DerivedJob.claimed_by.is_(None), DerivedJob.claimed_at < stale_before),
            )
        released = self.session.execute(
            update(DerivedJob)
            .where(which)
            .values(claimed_by=None, claimed_at=None)
            .execution_options(synchronize_session=False)
        )
        return int(getattr(released, "rowcount", 0))

    def finish_job(self, adventure_id: int, requested_at: datetime, owner: str) -> bool:
        """Drop ``owner``'s job if nothing new was requested since ``requested_at``; else
        release it. Returns whether more work is waiting. A job that another worker took
        over meanwhile (this one stopped refreshing its claim) is left to that worker."""
        job = self.session.get(DerivedJob, adventure_id)
        if job is None or job.claimed_by != owner:
            return False
        if job.requested_at <= requested_at:
            self.session.execute(delete(DerivedJob).where(DerivedJob.adventure_id == adventure_id))
            return False
        job.claimed_at = None
        job.claimed_by = None
        return True

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
