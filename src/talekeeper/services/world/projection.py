"""The state of the world at an action: the fold of the events on the path up to it.

Invariants:

- ``project`` is pure: the same events in the same order give the same state, and it is
  the only place that says what an event does. Events come oldest first (by their
  action's depth, then in the order they were written); the caller passes only events of
  active actions on the path, up to the action asked about, and none the player
  dismissed. So retry, undo, redo, delete, edit and fork are right by construction.
- No ``subject`` means the player's own character (docs/world.md lists each kind's roles).
- Where the player is (``location``) is the last place they moved to. Who is present:
  the people whose last known place is the player's, who have not left and are not dead,
  in the order they came; in a shared adventure, first the other player characters the
  story never placed (they stand with the player: ``party``). What the player carries:
  the items whose last holder is the player, in the order they came to them; an item
  used up is gone.
- A ``moved`` of the player's whose value is ``unsure.UNSURE`` makes where the player is
  unknown, unless they already stand at its place.
- A ``moved`` or ``took`` whose value is ``refusal.REFUSED`` says the story refused the
  player's attempt: where the player still stands at that place, or still holds that
  item, the place or holder before that change is back.
- Time only moves forward (``clock``): a ``time`` event that would take it back is kept
  as evidence and not applied (``ignored``), and the day moves once per action. Quests:
  the last state each was given (by its name).
- The player has the last word. Each event sets one *coordinate* (where the player is,
  where one person is, who holds one item, one entity's status, the time, one quest); a
  player's event holds its coordinate. A derived event at a held coordinate is not applied
  (``ignored``, ``HELD``) when it belongs to the same action as the player's event, or
  when its evidence does not say so explicitly (``explicit``: a rules event always does,
  its patterns are explicit; a model's must name everything the event names). An explicit
  one is applied, releases the hold, and is named in ``overrides`` with the player's
  event it changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum

from talekeeper.services.world import clock
from talekeeper.services.world.clock import Moment
from talekeeper.services.world.names import key_of
from talekeeper.services.world.refusal import REFUSED
from talekeeper.services.world.unsure import UNSURE
from talekeeper.storage.vocabulary import EntityKind, EventKind, EventOrigin, QuestState

DEAD = "dead"  # a status that takes someone out of every scene
OPEN = (QuestState.OPENED, QuestState.ADVANCED)  # the quests still to do


@dataclass(frozen=True)
class Ref:
    """A named thing, as the state shows it."""

    id: int
    name: str
    kind: EntityKind


@dataclass(frozen=True)
class Fact:
    """One event as the fold reads it."""

    id: int
    action_id: int
    kind: EventKind
    subject: Ref | None = None
    object: Ref | None = None
    target: Ref | None = None
    value: str | None = None
    origin: EventOrigin = EventOrigin.RULES
    evidence: str = ""


class Why(Enum):
    """Why an event is kept as evidence but not applied."""

    BACKWARD = "backward"  # a time earlier than the story's
    HELD = "held"  # the player set that fact, and the event does not say otherwise outright


@dataclass(frozen=True)
class Override:
    """A derived event that changed what a player's event had set."""

    event_id: int
    player_event_id: int


@dataclass(frozen=True)
class Quest:
    name: str
    state: str


@dataclass(frozen=True)
class Elsewhere:
    """A player character of a shared adventure as the state shows them: whether they
    stand with the player (``here``), their place (None when unknown), and what they
    carry."""

    who: Ref
    here: bool
    place: Ref | None
    carrying: tuple[Ref, ...]


@dataclass(frozen=True)
class WorldState:
    at_action: int | None
    location: Ref | None
    present: tuple[Ref, ...]
    inventory: tuple[Ref, ...]
    time: str | None
    quests: tuple[Quest, ...]
    statuses: dict[int, str]  # an entity's id -> its last status ("dead", "wounded", …)
    entities: tuple[Ref, ...]  # every entity an event counted here names, first named first
    ignored: tuple[int, ...] = ()  # events kept as evidence but not applied
    why: dict[int, Why] = field(default_factory=dict)  # each ignored event's reason
    overrides: tuple[Override, ...] = ()  # derived events that changed a player's fact
    party: tuple[Elsewhere, ...] = ()  # the other player characters (``members``)
    lead: str | None = None  # the host's character's name, where several play


Coordinate = tuple[str, int | str | None]  # what one event sets: ("holder", item id), …


@dataclass
class Fold:
    location: Ref | None = None
    came_from: Ref | None = None  # where the player was before the last move
    held_before: dict[int, int | None] = field(default_factory=dict)  # item -> holder before
    places: dict[int, Ref | None] = field(default_factory=dict)  # person -> last place
    holders: dict[int, int | None] = field(default_factory=dict)  # item -> holder (0: player)
    refs: dict[int, Ref] = field(default_factory=dict)
    statuses: dict[int, str] = field(default_factory=dict)
    time: str | None = None
    moment: Moment | None = None
    moved_on: int | None = None  # the action whose events already moved the day
    quests: dict[str, Quest] = field(default_factory=dict)
    why: dict[int, Why] = field(default_factory=dict)
    held: dict[Coordinate, Fact] = field(default_factory=dict)  # the player's, by coordinate
    overrides: list[Override] = field(default_factory=list)


PLAYER = 0  # the player's character as an item's holder


def coordinate(fact: Fact) -> Coordinate | None:
    """The one fact of the state ``fact`` sets (None: it sets none the state shows)."""
    subject, thing = fact.subject, fact.object
    match fact.kind:
        case EventKind.MOVED if subject is None:
            return ("location", None)
        case EventKind.MOVED | EventKind.ARRIVED | EventKind.LEFT if subject is not None:
            return ("place", subject.id)
        case (
            EventKind.TOOK
            | EventKind.EQUIPPED
            | EventKind.DROPPED
            | EventKind.GAVE
            | EventKind.USED_UP
        ) if thing is not None:
            return ("holder", thing.id)
        case EventKind.STATUS:
            return ("status", _holder(subject))
        case EventKind.TIME:
            return ("time", None)
        case EventKind.QUEST if thing is not None:
            return ("quest", thing.name)
        case _:
            return None


def explicit(fact: Fact) -> bool:
    """Whether ``fact``'s evidence states it outright. The rules' patterns are explicit by
    construction; a model's event must name, in its evidence, everything it names."""
    if fact.value == UNSURE:
        return False  # the rules could not read it: never a reason to undo the player's word
    if fact.origin is not EventOrigin.MODEL:
        return True
    said = f" {key_of(fact.evidence)} "
    names = [r.name for r in (fact.subject, fact.object, fact.target) if r is not None]
    if fact.kind in (EventKind.STATUS, EventKind.TIME) and fact.value:
        names.append(fact.value)
    return all(f" {key_of(n)} " in said for n in names if key_of(n))


def _reading(fold: Fold, at: Coordinate) -> object:
    """What the state says at one coordinate now (to see whether an event changed it)."""
    match at:
        case ("place", int(person)):
            return fold.places.get(person)
        case ("holder", int(item)):
            return fold.holders.get(item)
        case ("status", int(entity)):
            return fold.statuses.get(entity)
        case ("quest", str(name)):
            return fold.quests.get(name)
        case ("time", _):
            return fold.time
        case _:
            return fold.location


def step(fold: Fold, fact: Fact) -> None:
    """Fold one event in: note the entities it names (the first name kept), and apply it
    unless a player's event holds its coordinate against it."""
    for ref in (fact.subject, fact.object, fact.target):
        if ref is not None:
            fold.refs.setdefault(ref.id, ref)
    at = coordinate(fact)
    if at is None:
        _apply(fold, fact)
        return
    if fact.origin is EventOrigin.PLAYER:
        _apply(fold, fact)
        fold.held[at] = fact
        return
    mine = fold.held.get(at)
    if mine is None:
        _apply(fold, fact)
        return
    if mine.action_id == fact.action_id or not explicit(fact):
        fold.why[fact.id] = Why.HELD
        return
    before = _reading(fold, at)
    _apply(fold, fact)
    if fact.id in fold.why or _reading(fold, at) == before:
        return  # it changed nothing the player set: the hold stays
    del fold.held[at]
    fold.overrides.append(Override(fact.id, mine.id))


def _holder(ref: Ref | None) -> int:
    return PLAYER if ref is None else ref.id


def _refuse(fold: Fold, fact: Fact) -> None:
    """Undo the change ``fact`` refuses, where it still stands (``refusal``)."""
    thing = fact.object
    if thing is None:
        return
    if fact.kind is EventKind.MOVED and fold.location == thing:
        fold.location = fold.came_from
    elif fact.kind is EventKind.TOOK and fold.holders.get(thing.id) == PLAYER:
        earlier = fold.held_before.get(thing.id)
        fold.holders.pop(thing.id, None)
        if earlier is not None:
            fold.holders[thing.id] = earlier


def _apply(fold: Fold, fact: Fact) -> None:
    subject, thing = fact.subject, fact.object
    if fact.value == REFUSED and fact.kind in (EventKind.MOVED, EventKind.TOOK):
        _refuse(fold, fact)
        return
    match fact.kind:
        case EventKind.MOVED if subject is None and fact.value == UNSURE:
            if fold.location != thing:  # perhaps gone there, perhaps not: unknown
                fold.came_from, fold.location = fold.location, None
        case EventKind.MOVED if subject is None:
            fold.came_from, fold.location = fold.location, thing
        case EventKind.MOVED | EventKind.ARRIVED if subject is not None:
            fold.places.pop(subject.id, None)  # to the end: the order they came in
            fold.places[subject.id] = thing if thing is not None else fold.location
        case EventKind.LEFT if subject is not None:
            fold.places[subject.id] = None
        case EventKind.TOOK | EventKind.EQUIPPED if thing is not None:
            fold.held_before[thing.id] = fold.holders.pop(thing.id, None)
            fold.holders[thing.id] = _holder(subject)
        case EventKind.DROPPED if thing is not None:
            if fold.holders.get(thing.id) == _holder(subject):
                fold.holders[thing.id] = None
        case EventKind.GAVE if thing is not None:
            fold.holders.pop(thing.id, None)
            fold.holders[thing.id] = _holder(fact.target)
        case EventKind.USED_UP if thing is not None:
            fold.holders.pop(thing.id, None)
        case EventKind.STATUS if fact.value:
            fold.statuses[_holder(subject)] = fact.value
        case EventKind.TIME if fact.value:
            _tick(fold, fact, fact.value)
        case EventKind.QUEST if thing is not None and fact.value:
            fold.quests[thing.name] = Quest(thing.name, fact.value)
        case _:
            pass  # relations and what someone learned change no field of the state


def _tick(fold: Fold, fact: Fact, value: str) -> None:
    reading = clock.read(value)
    if reading is None:  # no time this can read: shown as said, the clock as it was
        fold.time = value
        return
    moved = fold.moved_on == fact.action_id
    moment = clock.advance(fold.moment, reading, moved)
    if moment is None:
        fold.why[fact.id] = Why.BACKWARD
        return
    if reading.days_on or (fold.moment is not None and moment.day > fold.moment.day):
        fold.moved_on = fact.action_id
    fold.moment, fold.time = moment, value


def present_of(fold: Fold, members: Sequence[Ref] = ()) -> tuple[Ref, ...]:
    """Who the state shows present: the people whose last place is the player's, not
    dead, in the order they came (nobody where the player's place is unknown); first, the
    player characters of ``members`` the story never placed, who stand with the player
    (``party``)."""
    with_player = unplaced(fold, members)
    here = fold.location
    if here is None:
        return with_player
    return with_player + tuple(
        fold.refs[person]
        for person, place in fold.places.items()
        if place is not None and place.id == here.id and fold.statuses.get(person) != DEAD
    )


def unplaced(fold: Fold, members: Sequence[Ref]) -> tuple[Ref, ...]:
    """The people of ``members`` the story never placed, none dead."""
    return tuple(
        fold.refs.get(m.id, m)
        for m in members
        if m.id not in fold.places and fold.statuses.get(m.id) != DEAD
    )


def project(
    facts: Iterable[Fact],
    at_action: int | None,
    members: Sequence[Ref] = (),
    lead: str | None = None,
) -> WorldState:
    """The state after ``facts`` (the path's events up to ``at_action``, oldest first);
    ``members`` and ``lead``: the other player characters of a shared adventure several
    play, and the host's character's name (``party``)."""
    fold = Fold()
    for fact in facts:
        step(fold, fact)
    here, present = fold.location, present_of(fold, members)
    carried = tuple(fold.refs[item] for item, holder in fold.holders.items() if holder == PLAYER)
    return WorldState(
        at_action=at_action,
        location=here,
        present=present,
        inventory=carried,
        time=fold.time,
        quests=tuple(fold.quests.values()),
        statuses={k: v for k, v in fold.statuses.items() if k != PLAYER},
        entities=tuple(r for r in fold.refs.values() if r.kind is not EntityKind.QUEST),
        ignored=tuple(fold.why),
        why=dict(fold.why),
        overrides=tuple(fold.overrides),
        party=tuple(_whereabouts(fold, m) for m in members),
        lead=lead,
    )


def _whereabouts(fold: Fold, member: Ref) -> Elsewhere:
    """Where a player character of ``members`` stands, and what they carry."""
    carried = tuple(fold.refs[item] for item, holder in fold.holders.items() if holder == member.id)
    who = fold.refs.get(member.id, member)
    if member.id not in fold.places:
        return Elsewhere(who, True, fold.location, carried)  # never placed: with the player
    place, here = fold.places[member.id], fold.location
    at_player = place is not None and here is not None and place.id == here.id
    return Elsewhere(who, at_player, place, carried)
