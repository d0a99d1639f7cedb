"""The world's rows: an adventure's entities and the events its actions say. Never commits.

Invariants:

- "On the path" for an event is its node (branch, depth) on the lineage
  (``story.on_path``, the clause actions use) and its action active; a dismissed event
  is never on it.
- Path events come oldest first: by depth, then by id (the order they were written), each
  with its entities read in the same statement. They are plain rows (``EventRow``,
  ``EntityRow``), not ORM objects: every turn folds the whole path's events, and a long
  story has thousands (the ORM's objects made that read three times slower).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from sqlalchemy import delete, func, or_, select
from sqlalchemy.orm import Session, aliased

from talekeeper.core.lineage import Lineage
from talekeeper.storage.models import Action, WorldEntity, WorldEvent, WorldReading
from talekeeper.storage.repositories.story import on_path
from talekeeper.storage.vocabulary import ActionState, EventOrigin


class EventRow(NamedTuple):
    """A ``WorldEvent`` as a path read returns it: the fields the world is folded from."""

    id: int
    action_id: int
    depth: int
    kind: str
    value: str | None
    origin: str
    evidence: str
    known_by: str | None


class EntityRow(NamedTuple):
    """A ``WorldEntity`` as a path read returns it."""

    id: int
    kind: str
    name: str
    aliases: str


class PathEvent(NamedTuple):
    event: EventRow
    subject: EntityRow | None
    object: EntityRow | None
    target: EntityRow | None


# The columns read are the rows' fields, by name, so the two cannot drift apart.
_EVENT = tuple(getattr(WorldEvent, name) for name in EventRow._fields)


def _entity_columns(entity: Any) -> tuple[Any, ...]:
    return tuple(getattr(entity, name) for name in EntityRow._fields)


class WorldRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def path_events(self, lineage: Lineage, max_depth: int | None = None) -> list[PathEvent]:
        """The events of the path's active actions (down to ``max_depth``), oldest first."""
        subject, thing, target = (aliased(WorldEntity) for _ in range(3))
        query = (
            select(*_EVENT, *(c for e in (subject, thing, target) for c in _entity_columns(e)))
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
        entities: dict[int, EntityRow] = {}

        def entity(fields: Sequence[Any]) -> EntityRow | None:
            if fields[0] is None:
                return None
            found = entities.get(fields[0])
            if found is None:
                found = entities[fields[0]] = EntityRow._make(fields)
            return found

        at, size = len(EventRow._fields), len(EntityRow._fields)
        return [
            PathEvent(
                EventRow._make(row[:at]),
                entity(row[at : at + size]),
                entity(row[at + size : at + 2 * size]),
                entity(row[at + 2 * size : at + 3 * size]),
            )
            for row in self.session.execute(query).all()
        ]

    def path_authors(
        self, lineage: Lineage, types: Sequence[str], max_depth: int | None = None
    ) -> list[tuple[int, int | None, str | None]]:
        """(depth, author's account, author's persona) of each active action of ``types``
        (the player's) on the path (down to ``max_depth``), by depth: who acted where."""
        query = (
            select(Action.depth, Action.author_id, Action.author_name)
            .where(
                on_path(Action.branch_id, Action.depth, lineage),
                Action.state == ActionState.ACTIVE,
                Action.type.in_(types),
            )
            .order_by(Action.depth)
        )
        if max_depth is not None:
            query = query.where(Action.depth <= max_depth)
        return [(d, a, n) for d, a, n in self.session.execute(query).all()]

    def entity(self, adventure_id: int, kind: str, key: str) -> WorldEntity | None:
        query = select(WorldEntity).where(
            WorldEntity.adventure_id == adventure_id,
            WorldEntity.kind == kind,
            WorldEntity.key == key,
        )
        return self.session.scalars(query).first()

    def told_shorter(self, adventure_id: int, kind: str, key: str) -> list[WorldEntity]:
        """The adventure's entities of ``kind`` whose key is ``key`` told longer or shorter:
        it ends with " " + ``key``, or is one of ``key``'s last words (``names.trailing``)."""
        words = key.split(" ")
        shorter = [" ".join(words[i:]) for i in range(1, len(words))]  # as names.trailing
        query = (
            select(WorldEntity)
            .where(
                WorldEntity.adventure_id == adventure_id,
                WorldEntity.kind == kind,
                or_(
                    WorldEntity.key.endswith(" " + key, autoescape=True),
                    WorldEntity.key.in_(shorter),
                ),
            )
            .order_by(WorldEntity.id)
        )
        return list(self.session.scalars(query))

    def entities(self, adventure_id: int) -> list[WorldEntity]:
        """Every entity of the adventure, oldest first."""
        query = (
            select(WorldEntity)
            .where(WorldEntity.adventure_id == adventure_id)
            .order_by(WorldEntity.id)
        )
        return list(self.session.scalars(query))

    def entity_names(self, adventure_id: int) -> list[tuple[str, str, str]]:
        """Every entity's kind, name and aliases (JSON), oldest first: what reading an action
        matches names against, as plain rows (read on every action saved)."""
        query = (
            select(WorldEntity.kind, WorldEntity.name, WorldEntity.aliases)
            .where(WorldEntity.adventure_id == adventure_id)
            .order_by(WorldEntity.id)
        )
        return [(kind, name, aliases) for kind, name, aliases in self.session.execute(query)]

    def events(self, adventure_id: int) -> list[WorldEvent]:
        """Every event of the adventure, on any branch, dismissed or not, oldest first."""
        query = (
            select(WorldEvent)
            .where(WorldEvent.adventure_id == adventure_id)
            .order_by(WorldEvent.id)
        )
        return list(self.session.scalars(query))

    def has_events(self, adventure_id: int) -> bool:
        query = select(WorldEvent.id).where(WorldEvent.adventure_id == adventure_id).limit(1)
        return self.session.scalar(query) is not None

    def count_events(self, adventure_id: int) -> int:
        query = select(func.count()).where(WorldEvent.adventure_id == adventure_id)
        return int(self.session.scalar(query) or 0)

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

    def action_events(self, action_id: int) -> list[WorldEvent]:
        """Every event of one action, dismissed or not, oldest first."""
        query = select(WorldEvent).where(WorldEvent.action_id == action_id).order_by(WorldEvent.id)
        return list(self.session.scalars(query))

    def delete_origin(self, action_ids: list[int], origin: str) -> None:
        """The events of those actions that ``origin`` said."""
        self.session.execute(
            delete(WorldEvent).where(
                WorldEvent.action_id.in_(action_ids), WorldEvent.origin == origin
            )
        )

    def reading(self, action_id: int) -> WorldReading | None:
        return self.session.get(WorldReading, action_id)

    def add_reading(
        self, action_id: int, adventure_id: int, model: str, found: int, kept: int
    ) -> None:
        self.session.add(
            WorldReading(
                action_id=action_id, adventure_id=adventure_id, model=model, found=found, kept=kept
            )
        )
        self.session.flush()

    def forget_readings(self, row: Action) -> None:
        """After an edit of ``row``: its reading, and that of a reply a depth below it on its
        branch (which was read with ``row`` as the action it answers), are gone."""
        below = select(Action.id).where(
            Action.branch_id == row.branch_id, Action.depth == row.depth + 1
        )
        self.session.execute(
            delete(WorldReading).where(
                or_(WorldReading.action_id == row.id, WorldReading.action_id.in_(below))
            )
        )

    def delete_event(self, event: WorldEvent) -> None:
        self.session.delete(event)
        self.session.flush()
