"""The adventures whose story the rules never read for the world (``WorldBacklog``), and
whether an adventure has a world at all. Never commits.

Invariants:

- A row is deleted only by the unit that writes its adventure's world (or finds one
  there already), so an adventure leaves the backlog exactly when that commit does.
- A failure is counted on the row it was for; a row already gone (read meanwhile by
  another process, or its adventure deleted) is not written again.
"""

from __future__ import annotations

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from talekeeper.core.clock import utcnow
from talekeeper.storage.models import WorldBacklog, WorldEntity, WorldEvent

ERROR_MAX = 2000  # characters of a failed reading's error kept on its row


class WorldBacklogRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def waiting(self) -> list[int]:
        """Every adventure in the backlog, by id."""
        query = select(WorldBacklog.adventure_id).order_by(WorldBacklog.adventure_id)
        return [int(i) for i in self.session.scalars(query)]

    def row(self, adventure_id: int) -> WorldBacklog | None:
        return self.session.get(WorldBacklog, adventure_id)

    def has_world(self, adventure_id: int) -> bool:
        """Whether the adventure has any world entity or event (of any origin)."""
        for column in (WorldEvent.adventure_id, WorldEntity.adventure_id):
            query = select(column).where(column == adventure_id).limit(1)
            if self.session.scalar(query) is not None:
                return True
        return False

    def done(self, adventure_id: int) -> None:
        self.session.execute(delete(WorldBacklog).where(WorldBacklog.adventure_id == adventure_id))

    def failed(self, adventure_id: int, error: str) -> None:
        """One more failed reading of the adventure, with its error."""
        self.session.execute(
            update(WorldBacklog)
            .where(WorldBacklog.adventure_id == adventure_id)
            .values(
                failures=WorldBacklog.failures + 1,
                last_error=error[:ERROR_MAX],
                last_failure_at=utcnow(),
            )
        )
