"""Background work on an adventure: the request waiting for a worker, and the outcome of
each pass's last run.

Invariants:

- At most one request per adventure (the adventure is its key), and one outcome per
  (adventure, pass).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from talekeeper.core.clock import utcnow
from talekeeper.storage.models.base import ID, Base, UtcDateTime
from talekeeper.storage.vocabulary import PassState


class DerivedJob(Base):
    """Background work waiting for an adventure, written in the transaction that causes it.

    One row per adventure: a worker claims it (``claimed_by``, its own token, and
    ``claimed_at``), refreshes ``claimed_at`` while its run goes on, runs every pass, and
    deletes it unless a newer request arrived meanwhile. A claim nobody refreshed for
    ``STALE`` (its process died) is claimed again (see ``services.memory.worker``).
    """

    __tablename__ = "derived_jobs"

    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), primary_key=True
    )
    requested_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
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
