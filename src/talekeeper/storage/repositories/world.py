"""The world's rows: an adventure's entities and the events its actions say. Never commits.

Invariants:

- "On the path" for an event is its node (branch, depth) on the lineage
  (``story.on_path``, the clause actions use) and its action active; a dismissed event
  is never on it.
- Path events come oldest first: by depth, then by id (the order they were written), each
  with its entities read in the same statement.
"""

from __future__ import annotations

from typing import NamedTuple

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, aliased

from talekeeper.core.lineage import Lineage
from talekeeper.storage.models import Action, WorldEntity, WorldEvent
from talekeeper.storage.repositories.story import on_path
from talekeeper.storage.vocabulary import ActionState, EventOrigin


class PathEvent(NamedTuple):
    event: WorldEvent
    subject: WorldEntity | None
    object: WorldEntity | None
    target: WorldEntity | None


class WorldRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def path_events(self, lineage: Lineage, max_depth: int | None = None) -> list[PathEvent]:
        """The events of the path's active actions (down to ``max_depth``), oldest first."""
        subject, thing, target = (aliased(WorldEntity) for _ in range(3))
        query = (
            select(WorldEvent, subject, thing, target)
            .join(Action, Action.id == WorldEvent.action_id)
            .outerjoin(subject, subject.id == WorldEvent.subject_id)
            .outerjoin(thing, thing.id == WorldEvent.object_id)
            .outerjoin(target, target.id == WorldEvent.target_id)
            .where(
                on_path(WorldEvent.branch_id, WorldEvent.depth, lineage),
                Action.state == ActionState.ACTIVE,
                WorldEvent.dismissed.is_(False),
            )
            .order_by(WorldEvent.depth, WorldEvent.id)
        )
        if max_depth is not None:
            query = query.where(WorldEvent.depth <= max_depth)
        return [PathEvent(*row) for row in self.session.execute(query).all()]

    def entity(self, adventure_id: int, kind: str, key: str) -> WorldEntity | None:
        query = select(WorldEntity).where(
            WorldEntity.adventure_id == adventure_id,
            WorldEntity.kind == kind,
            WorldEntity.key == key,
        )
        return self.session.scalars(query).first()

    def add_entity(self, entity: WorldEntity) -> WorldEntity:
        self.session.add(entity)
        self.session.flush()
        return entity

    def add_event(self, event: WorldEvent) -> WorldEvent:
        self.session.add(event)
        self.session.flush()
        return event

    def event(self, event_id: int) -> WorldEvent | None:
        return self.session.get(WorldEvent, event_id)

    def delete_derived(self, action_id: int) -> None:
        """Every event of the action that the player did not write."""
        self.session.execute(
            delete(WorldEvent).where(
                WorldEvent.action_id == action_id, WorldEvent.origin != EventOrigin.PLAYER
            )
        )

    def delete_event(self, event: WorldEvent) -> None:
        self.session.delete(event)
        self.session.flush()
