"""Who has a shared adventure open and who is writing (``models.Presence``). Never
commits.

Invariants: one row per account and adventure (unique), found and changed in place;
callers hold the writer lock for ``row`` when they mean to change it.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from talekeeper.storage.models import Presence


class PresenceRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def row(self, adventure_id: int, user_id: int) -> Presence:
        """The account's row for the adventure, made (unsaved times: now) if it has none."""
        query = select(Presence).where(
            Presence.adventure_id == adventure_id, Presence.user_id == user_id
        )
        found = self.session.scalars(query).first()
        if found is None:
            found = Presence(adventure_id=adventure_id, user_id=user_id)
            self.session.add(found)
        return found

    def seen_since(self, adventure_id: int, cutoff: datetime) -> list[Presence]:
        """The adventure's rows seen at or after ``cutoff``, in the order they were made."""
        query = select(Presence).where(
            Presence.adventure_id == adventure_id, Presence.seen_at >= cutoff
        )
        return list(self.session.scalars(query.order_by(Presence.id)))
