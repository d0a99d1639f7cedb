"""Background work: the requests waiting for a worker (``BackgroundJob``), and the outcome
of each memory pass's last run (``DerivedState``).

Invariants:

- At most one request per subject (``kind`` and ``subject_id`` are its key: an adventure's
  memory passes, a library source's vectors), and one outcome per (adventure, pass).
- A job names its subject by id without a foreign key: a job whose subject was deleted
  meanwhile runs, finds nothing and ends (the runs say so), so deleting a story or a source
  never waits on the queue.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from talekeeper.core.clock import utcnow
from talekeeper.storage.models.base import ID, Base, UtcDateTime
from talekeeper.storage.vocabulary import PassState


class BackgroundJob(Base):
    """Background work waiting for its subject, written in the transaction that causes it
    (the outbox of a SQLite database: ``services.background.worker``).

    One row per subject (``kind``, a ``vocabulary.WorkKind``: ``adventure`` or
    ``library_source``; and ``subject_id``): a worker
    claims it (``claimed_by``, its own token, and ``claimed_at``), refreshes ``claimed_at``
    while its run goes on, and deletes it after the run unless a newer request arrived
    meanwhile. ``run_after``: not before then (a retry's backoff); none, at once. A claim
    nobody refreshed for ``STALE`` (its process died) is claimed again.
    """

    __tablename__ = "background_jobs"

    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    subject_id: Mapped[int] = mapped_column(ID, primary_key=True)
    requested_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    run_after: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    claimed_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    claimed_by: Mapped[str | None] = mapped_column(String(64), nullable=True)


class DerivedState(Base):
    """The outcome of the last run of one pass (memory, summary, embedding, eviction):
    ``state`` (a ``vocabulary.PassState``) is ``idle``, ``running`` or ``failed``."""

    __tablename__ = "derived_states"

    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), primary_key=True
    )
    kind: Mapped[str] = mapped_column(String(16), primary_key=True)
    state: Mapped[str] = mapped_column(String(8), default=PassState.IDLE.value)
    last_run_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    last_success_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    last_failure_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    did_work: Mapped[bool] = mapped_column(Boolean, default=False)
    failures: Mapped[int] = mapped_column(Integer, default=0)  # in a row
