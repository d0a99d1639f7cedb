"""Card proposals (docs/world.md, "The lore clerk"): draft story cards the story itself
suggests, each line with the sentence of the story it rests on, for the player to accept
or dismiss.

Invariants:

- One row per entity an adventure was offered (``key``: its normalised name,
  ``services.world.names.key_of``): the clerk never writes a second row for a name that
  matches an existing row or card (``services.world.clerk``). A dismissed or accepted row
  keeps its name from being proposed again.
- An open row is shown on a path only while its entity is still named in enough actions
  of that path; its ``name``, ``keys``, ``entry`` and ``evidence`` are the path's as last
  listed. Evidence is a JSON list of ``{"action_id", "text"}``: the sentences the entry
  is made of, each with its action.
- ``card_id``: the card an ``update`` adds to, or the card an accepted proposal became
  (NULL once that card is deleted).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from talekeeper.core.clock import utcnow
from talekeeper.storage.models.base import ID, Base, UtcDateTime
from talekeeper.storage.models.world import NAME_MAX


class CardProposal(Base):
    """A draft card the story suggested. ``kind`` is a ``ProposalKind``: ``new`` (a new
    card) or ``update`` (lines added to ``card_id``); ``state`` a ``ProposalState``:
    ``open`` (waiting for the player), ``accepted`` or ``dismissed``. ``keys`` and
    ``evidence`` are JSON lists (see the module docstring)."""

    __tablename__ = "card_proposals"

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), index=True
    )
    kind: Mapped[str] = mapped_column(String(8))
    state: Mapped[str] = mapped_column(String(12))
    key: Mapped[str] = mapped_column(String(NAME_MAX))
    name: Mapped[str] = mapped_column(String(NAME_MAX))
    type: Mapped[str] = mapped_column(String(16))
    keys: Mapped[str] = mapped_column(Text, default="[]")
    entry: Mapped[str] = mapped_column(Text, default="")
    evidence: Mapped[str] = mapped_column(Text, default="[]")
    # Who wrote the entry: NULL, the story's own sentences; a model's name, that model (its
    # sentences each resting on the story's, ``services.world.card_drafting``); "", a
    # model was asked and nothing it wrote was kept.
    drafter: Mapped[str | None] = mapped_column(String(255), nullable=True, default=None)
    card_id: Mapped[int | None] = mapped_column(
        ID, ForeignKey("story_cards.id", ondelete="SET NULL"), nullable=True
    )
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, onupdate=utcnow)
