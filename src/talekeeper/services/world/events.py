"""The world's events in the caller's unit of work: the state at an action of the current
path, the path's events, and the player's own events (docs/world.md).

Invariants:

- Nothing here commits; every read is of the current path (``story.lineage()``), so a
  take, an undone action or another branch's action never counts.
- A player's event is written on the head action with origin ``player``, at the current
  branch's node of that depth: it is part of the story from there on, on this branch
  (and the branches forked from it later), and an undo of that action takes it away.
- Each kind names its roles (``ROLES``): which of subject, object and value it needs and
  what kind of thing each names. A name is matched to the adventure's entity of that
  kind with the same key (``names.key_of``), or makes one. The state shows each entity
  with the story card of the same key, as the cards are when it is read. No subject: the
  player's own character.
- An adventure holds at most ``limits.MAX_WORLD_EVENTS`` events: a player's event past
  that is refused (409 ``limit_reached``); derived ones are never refused.
- A player's event may be a secret from the start (``known_by``, checked before anything
  is written); removing events and marking them secret later is ``marks``'s.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import NamedTuple

from talekeeper.core.errors import Conflict, InvalidInput
from talekeeper.core.lineage import on_lineage
from talekeeper.services.common import limits
from talekeeper.services.story.tree import Story
from talekeeper.services.world import secrets
from talekeeper.services.world.facts import fact_of
from talekeeper.services.world.names import clean_name, key_of
from talekeeper.services.world.party import Party
from talekeeper.services.world.party_path import cast_of, party_of
from talekeeper.services.world.party_view import NamedRef, PlayerView, named, players_of
from talekeeper.services.world.projection import Fact, Quest, WorldState, project
from talekeeper.storage.models import WorldEntity, WorldEvent
from talekeeper.storage.models.world import ALIASES_MAX, VALUE_MAX
from talekeeper.storage.repositories.story import StoryRepository
from talekeeper.storage.repositories.world import EntityRow, EventRow, PathEvent, WorldRepository
from talekeeper.storage.vocabulary import (
    ActionState,
    EntityKind,
    EventKind,
    EventOrigin,
    QuestState,
)

PERSON, PLACE, ITEM, QUEST = EntityKind.PERSON, EntityKind.PLACE, EntityKind.ITEM, EntityKind.QUEST


@dataclass(frozen=True)
class Roles:
    """What an event of one kind names: the kind of its subject and object (None: it has
    none), whether each is required, and whether it needs a value."""

    subject: EntityKind | None
    object: EntityKind | None
    needs_subject: bool = False
    needs_object: bool = False
    needs_value: bool = False


ROLES: dict[EventKind, Roles] = {
    EventKind.MOVED: Roles(PERSON, PLACE, needs_object=True),
    EventKind.ARRIVED: Roles(PERSON, PLACE, needs_subject=True),
    EventKind.LEFT: Roles(PERSON, PLACE, needs_subject=True),
    EventKind.TOOK: Roles(PERSON, ITEM, needs_object=True),
    EventKind.DROPPED: Roles(PERSON, ITEM, needs_object=True),
    EventKind.GAVE: Roles(PERSON, ITEM, needs_object=True),  # value: the recipient
    EventKind.EQUIPPED: Roles(PERSON, ITEM, needs_object=True),
    EventKind.USED_UP: Roles(PERSON, ITEM, needs_object=True),
    EventKind.STATUS: Roles(PERSON, None, needs_value=True),
    EventKind.RELATION: Roles(PERSON, PERSON, True, True, True),
    EventKind.TIME: Roles(None, None, needs_value=True),
    EventKind.QUEST: Roles(None, QUEST, needs_object=True, needs_value=True),
    EventKind.LEARNED: Roles(PERSON, None, needs_subject=True, needs_value=True),
}


@dataclass(frozen=True)
class GivenEvent:
    """A player's event as sent: names and a value, not yet matched."""

    kind: EventKind
    subject: str | None = None
    object: str | None = None
    value: str | None = None
    known_by: list[str] | None = None  # names (a secret of theirs), checked by ``secrets``


@dataclass(frozen=True)
class TimeView:
    text: str


@dataclass(frozen=True)
class EntityView:
    id: int
    name: str
    kind: EntityKind
    aliases: list[str]
    card_id: int | None
    status: str | None


@dataclass(frozen=True)
class WorldView:
    at_action: int | None
    location: NamedRef | None
    present: list[NamedRef]
    inventory: list[NamedRef]
    time: TimeView | None
    quests: list[Quest]
    entities: list[EntityView]
    lead: str | None = None  # the host's character, where several play
    players: list[PlayerView] = field(default_factory=list)  # the other player characters


@dataclass(frozen=True)
class EventView:
    id: int
    action_id: int
    kind: EventKind
    subject: str | None
    object: str | None
    value: str | None
    origin: EventOrigin
    evidence: str
    known_by: tuple[str, ...] | None = None  # a secret of these characters (``secrets``)


# -- reading -------------------------------------------------------------------------------


def _at_depth(story: Story, at: int | None) -> tuple[int | None, int | None]:
    """The action asked about and its depth; the head when none is asked."""
    if at is None:
        head = story.head()
        return (head.id, head.depth) if head is not None else (None, None)
    row = story.action(at)
    if row.state != ActionState.ACTIVE or not on_lineage(story.lineage(), row.branch_id, row.depth):
        raise InvalidInput(
            f"Action {at} is not on the current path; the world is shown at an action of it."
        )
    return row.id, row.depth


def state_through(story: Story, max_depth: int | None) -> WorldState:
    """The projection of the current path's events down to ``max_depth`` (None: all of
    them): what a turn's context reads."""
    rows = WorldRepository(story.session).path_events(story.lineage(), max_depth)
    return project((fact_of(r) for r in rows), None, *cast_of(party_of(story, turns=False)))


class TurnWorld(NamedTuple):
    """What a turn reads of the world (``for_turn``)."""

    state: WorldState  # down to the turn's depth
    changed: list[EventView]  # since the previous reply read the world (for Insights)
    steps: list[tuple[int, Fact]]  # the events folded, each with its action's depth
    secrets: dict[int, tuple[str, ...]]  # the secrets among those events: id -> who knows
    party: Party | None  # who plays a shared adventure, and who acted where on the path


def for_turn(story: Story, after_depth: int, max_depth: int | None) -> TurnWorld:
    """What a turn reads of the world, in one query: the state down to ``max_depth`` (None:
    the whole path), its events deeper than ``after_depth`` (what changed since the
    previous reply, for Insights), and the events it was folded from, each with its
    action's depth (who was present, and who was told what: ``witnesses``), with their
    secrets."""
    rows = WorldRepository(story.session).path_events(story.lineage(), max_depth)
    changed = [event_view_of(r.event, r) for r in rows if r.event.depth > after_depth]
    steps = [(r.event.depth, fact_of(r)) for r in rows]
    secrets = {r.event.id: names for r in rows if (names := known_by(r.event)) is not None}
    party = party_of(story, max_depth)
    state = project((fact for _, fact in steps), None, *cast_of(party))
    return TurnWorld(state, changed, steps, secrets, party)


def world_at(story: Story, at: int | None = None) -> WorldView:
    """The projection at action ``at`` of the current path (the head when None)."""
    action_id, depth = _at_depth(story, at)
    rows = (
        [] if depth is None else WorldRepository(story.session).path_events(story.lineage(), depth)
    )
    state = project((fact_of(r) for r in rows), action_id, *cast_of(party_of(story, turns=False)))
    entities = {e.id: e for r in rows for e in (r.subject, r.object, r.target) if e is not None}
    # Each entity's card by name, as the cards are now (a link is never stored to go stale).
    cards = {key_of(c.name): c.id for c in StoryRepository(story.session).cards(story.adventure.id)}

    return WorldView(
        at_action=action_id,
        location=named(state.location) if state.location else None,
        present=[named(r) for r in state.present],
        inventory=[named(r) for r in state.inventory],
        time=TimeView(state.time) if state.time else None,
        quests=list(state.quests),
        entities=[
            EntityView(
                id=ref.id,
                name=ref.name,
                kind=ref.kind,
                aliases=list(json.loads(entities[ref.id].aliases or "[]")),
                card_id=cards.get(key_of(ref.name)),
                status=state.statuses.get(ref.id),
            )
            for ref in state.entities
        ],
        lead=state.lead,
        players=players_of(state),
    )


@dataclass(frozen=True)
class Named:
    """An event's entities, matched: who, what or where, and for ``gave`` who receives."""

    subject: WorldEntity | None = None
    object: WorldEntity | None = None
    target: WorldEntity | None = None


def event_view_of(row: WorldEvent | EventRow, named: Named | PathEvent) -> EventView:
    def name(entity: WorldEntity | EntityRow | None) -> str | None:
        return entity.name if entity is not None else None

    value = name(named.target) if row.kind == EventKind.GAVE else row.value
    return EventView(
        id=row.id,
        action_id=row.action_id,
        kind=EventKind(row.kind),
        subject=name(named.subject),
        object=name(named.object),
        value=value,
        origin=EventOrigin(row.origin),
        evidence=row.evidence,
        known_by=known_by(row),
    )


def known_by(row: WorldEvent | EventRow) -> tuple[str, ...] | None:
    """The characters an event is a secret of (None: no secret)."""
    return None if row.known_by is None else tuple(json.loads(row.known_by))


def path_events(story: Story) -> list[EventView]:
    """The events of the current path, oldest first."""
    rows = WorldRepository(story.session).path_events(story.lineage())
    return [event_view_of(r.event, r) for r in rows]


# -- the player's events -------------------------------------------------------------------


def entity_for(story: Story, kind: EntityKind, name: str, role: str) -> WorldEntity:
    """The adventure's entity of ``kind`` named ``name``: the one with its key, else the one
    it names told shorter or longer (the name joins its aliases), else a new one. A name
    that could be several is refused, saying which."""
    clean = clean_name(name, role)
    key = key_of(clean)
    world = WorldRepository(story.session)
    found = world.entity(story.adventure.id, kind, key)
    if found is not None:
        return found
    near = world.told_shorter(story.adventure.id, kind, key)
    if len(near) > 1:
        could = " or ".join(limits.quoted(e.name, 60) for e in near[:3])
        raise InvalidInput(f"The {role} {limits.quoted(clean, 60)} could be {could}; name which.")
    if near:
        aliases = json.loads(near[0].aliases or "[]")
        if clean not in aliases and len(aliases) < ALIASES_MAX:
            near[0].aliases = json.dumps([*aliases, clean], ensure_ascii=False)
        return near[0]
    return world.add_entity(
        WorldEntity(
            adventure_id=story.adventure.id,
            kind=kind,
            name=clean,
            key=key,
            aliases="[]",
        )
    )


def _value(given: GivenEvent) -> str | None:
    if given.value is None:
        return None
    value = " ".join(given.value.split())
    if len(value) > VALUE_MAX:
        raise InvalidInput(f"The value is {len(value):,} characters long; at most {VALUE_MAX} fit.")
    if given.kind == EventKind.QUEST and value not in set(QuestState):
        raise InvalidInput(
            f"A quest's value is its state: one of {', '.join(QuestState)}; got {value!r}."
        )
    return value or None


def _check_roles(given: GivenEvent, roles: Roles, value: str | None) -> None:
    kind = given.kind.value
    for role, kind_of, needed, sent in (
        ("subject", roles.subject, roles.needs_subject, given.subject),
        ("object", roles.object, roles.needs_object, given.object),
    ):
        if sent is not None and kind_of is None:
            raise InvalidInput(f"A {kind} event has no {role}; leave it out.")
        if needed and sent is None:
            raise InvalidInput(f"A {kind} event needs its {role} (a {kind_of} name).")
    if roles.needs_value and value is None:
        raise InvalidInput(f"A {kind} event needs a value.")
    if given.kind == EventKind.GAVE and value is None:
        raise InvalidInput("A gave event needs its value: the name of who receives the item.")


@dataclass(frozen=True)
class RoleName:
    """One entity an event names: its role (``subject``, ``object``, ``target``), the kind
    of thing it is, the name as given, and how a refusal calls it."""

    role: str
    kind: EntityKind
    name: str
    called: str


def role_names(
    kind: EventKind, subject: str | None, thing: str | None, value: str | None
) -> tuple[list[RoleName], str | None]:
    """The entities an event names (``ROLES`` says what kind each is), and the value left
    to store: ``gave``'s value is its recipient, an entity."""
    roles = ROLES[kind]
    named: list[RoleName] = []
    if subject is not None and roles.subject is not None:
        named.append(RoleName("subject", roles.subject, subject, "subject"))
    if thing is not None and roles.object is not None:
        named.append(RoleName("object", roles.object, thing, "object"))
    if kind == EventKind.GAVE and value is not None:
        named.append(RoleName("target", PERSON, value, "recipient"))
        value = None
    return named, value


def match_names(
    story: Story, kind: EventKind, subject: str | None, thing: str | None, value: str | None
) -> tuple[Named, str | None]:
    """An event's names matched to the adventure's entities, and the value left to store."""
    wanted, value = role_names(kind, subject, thing, value)
    found = {w.role: entity_for(story, w.kind, w.name, w.called) for w in wanted}
    return Named(**found), value


def write_event(
    story: Story,
    at: Node,
    kind: EventKind,
    named: Named,
    value: str | None,
    origin: EventOrigin,
    evidence: str,
    known_by: str | None = None,
) -> EventView:
    """One event on its action and node (``at``), in the caller's unit (``known_by``: its
    secret, as stored)."""
    row = WorldRepository(story.session).add_event(
        WorldEvent(
            adventure_id=story.adventure.id,
            action_id=at.action_id,
            branch_id=at.branch_id,
            depth=at.depth,
            kind=kind,
            subject_id=_id(named.subject),
            object_id=_id(named.object),
            target_id=_id(named.target),
            value=value,
            origin=origin,
            evidence=evidence,
            known_by=known_by,
        )
    )
    return event_view_of(row, named)


@dataclass(frozen=True)
class Node:
    """Where an event sits: its action, and the node (branch, depth) it is read on."""

    action_id: int
    branch_id: int
    depth: int


def checked_value(given: GivenEvent) -> str | None:
    """The value ``given`` stores, once its roles are what its kind needs (``ROLES``);
    ``InvalidInput`` saying what to fix when they are not."""
    value = _value(given)
    _check_roles(given, ROLES[given.kind], value)
    return value


def add_player_event(story: Story, given: GivenEvent) -> EventView:
    """The player's event, on the head action, at the current branch's node of its depth."""
    head = story.head()
    if head is None:
        raise Conflict("The story has no action yet for the event to belong to.")
    value = checked_value(given)
    secret = secrets.dumps(secrets.clean_known_by(given.known_by))
    count = WorldRepository(story.session).count_events(story.adventure.id)
    if count >= limits.MAX_WORLD_EVENTS:
        raise Conflict(
            f"Adventure {story.adventure.id} has {count:,} world events and one adventure may "
            f"hold at most {limits.MAX_WORLD_EVENTS:,}: remove events you no longer need first.",
            code="limit_reached",
        )
    named, value = match_names(story, given.kind, given.subject, given.object, value)
    at = Node(head.id, story.branch.id, head.depth)
    return write_event(story, at, given.kind, named, value, EventOrigin.PLAYER, "", secret)


def _id(entity: WorldEntity | None) -> int | None:
    return None if entity is None else entity.id
