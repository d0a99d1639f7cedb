"""What a reply leaves behind: the context its prompt was built from (its Insights
snapshot, for the player) and where its prompt put what may change between turns (its
placement record, for the next turn).

Invariants:

- Both belong to the reply's action and go with it; at most one of each per reply.
- The next turn reads the placement record, never the snapshot: the snapshot is a display
  format, the record a versioned one (``services.prompt.placement``).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from talekeeper.core.clock import utcnow
from talekeeper.storage.models.base import ID, Base, UtcDateTime


class InsightSnapshot(Base):
    """The exact context a narration was generated from, as JSON
    (``services.prompt.insights``)."""

    __tablename__ = "insights"

    action_id: Mapped[int] = mapped_column(
        ID, ForeignKey("actions.id", ondelete="CASCADE"), primary_key=True
    )
    data: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class ContextPlacement(Base):
    """Where a reply's ``cache`` prompt put what may change between turns, and which cards
    its Story Cards section held: what the next turn keeps in place (see
    ``services.prompt.placement``, which reads and writes it by ``version``). ``floating``
    is a JSON object (section name -> [depth, digest]), ``cards_held`` a JSON list of card
    ids, or NULL where the prompt's cards were not recorded."""

    __tablename__ = "context_placements"

    action_id: Mapped[int] = mapped_column(
        ID, ForeignKey("actions.id", ondelete="CASCADE"), primary_key=True
    )
    version: Mapped[int] = mapped_column(Integer)
    history_start: Mapped[int | None] = mapped_column(Integer, nullable=True)
    top_digest: Mapped[str] = mapped_column(String(64))
    floating: Mapped[str] = mapped_column(Text)
    cards_held: Mapped[str | None] = mapped_column(Text, nullable=True)
