"""The log of model calls (``services.endpoints.ai_calls``).

Invariants:

- A call outlives its user and its adventure: deleting either leaves the row, with the
  reference cleared, so the log still counts what was spent.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Float, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from talekeeper.core.clock import utcnow
from talekeeper.storage.models.base import ID, Base, UtcDateTime


class AiCall(Base):
    """One model call: narration, memory, summary, embedding or test. ``status`` (a
    ``vocabulary.CallStatus``): ``ok``, ``error`` (``error`` says what failed) or
    ``cancelled`` (the consumer stopped reading before the end)."""

    __tablename__ = "ai_calls"
    __table_args__ = (Index("ix_ai_calls_user_id_id", "user_id", "id"),)

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    user_id: Mapped[int | None] = mapped_column(
        ID, ForeignKey("users.id", ondelete="SET NULL"), nullable=True
    )
    adventure_id: Mapped[int | None] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="SET NULL"), nullable=True, index=True
    )
    kind: Mapped[str] = mapped_column(String(16))
    provider: Mapped[str] = mapped_column(String(255))
    model: Mapped[str] = mapped_column(String(255))
    started_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    duration_ms: Mapped[float] = mapped_column(Float())
    tokens_in: Mapped[int | None] = mapped_column(Integer, nullable=True)
    tokens_out: Mapped[int | None] = mapped_column(Integer, nullable=True)
    status: Mapped[str] = mapped_column(String(16))
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
