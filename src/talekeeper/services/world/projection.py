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
  in the order they came. What the player carries: the items whose last holder is the
  player, in the order they came to them; an item used up is gone.
- Time only moves forward (``clock``): a ``time`` event that would take it back is kept
  as evidence and not applied (``ignored``), and the day moves once per action. Quests:
  the last state each was given (by its name).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from talekeeper.services.world import clock
from talekeeper.services.world.clock import Moment
from talekeeper.storage.vocabulary import EntityKind, EventKind

DEAD = "dead"  # a status that takes someone out of every scene


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


@dataclass(frozen=True)
class Quest:
    name: str
    state: str


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
    ignored: tuple[int, ...] = ()  # events kept as evidence but not applied (time backward)


@dataclass
class _Fold:
    location: Ref | None = None
    places: dict[int, Ref | None] = field(default_factory=dict)  # person -> last place
    holders: dict[int, int | None] = field(default_factory=dict)  # item -> holder (0: player)
    refs: dict[int, Ref] = field(default_factory=dict)
    statuses: dict[int, str] = field(default_factory=dict)
    time: str | None = None
    moment: Moment | None = None
    moved_on: int | None = None  # the action whose events already moved the day
    quests: dict[str, Quest] = field(default_factory=dict)
    ignored: list[int] = field(default_factory=list)


PLAYER = 0  # the player's character as an item's holder


def _holder(ref: Ref | None) -> int:
    return PLAYER if ref is None else ref.id


def _apply(fold: _Fold, fact: Fact) -> None:
    subject, thing = fact.subject, fact.object
    match fact.kind:
        case EventKind.MOVED if subject is None:
            fold.location = thing
        case EventKind.MOVED | EventKind.ARRIVED if subject is not None:
            fold.places.pop(subject.id, None)  # to the end: the order they came in
            fold.places[subject.id] = thing if thing is not None else fold.location
        case EventKind.LEFT if subject is not None:
            fold.places[subject.id] = None
        case EventKind.TOOK | EventKind.EQUIPPED if thing is not None:
            fold.holders.pop(thing.id, None)
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


def _tick(fold: _Fold, fact: Fact, value: str) -> None:
    reading = clock.read(value)
    if reading is None:  # no time this can read: shown as said, the clock as it was
        fold.time = value
        return
    moved = fold.moved_on == fact.action_id
    moment = clock.advance(fold.moment, reading, moved)
    if moment is None:
        fold.ignored.append(fact.id)
        return
    if reading.days_on or (fold.moment is not None and moment.day > fold.moment.day):
        fold.moved_on = fact.action_id
    fold.moment, fold.time = moment, value


def project(facts: Iterable[Fact], at_action: int | None) -> WorldState:
    """The state after ``facts`` (the path's events up to ``at_action``, oldest first)."""
    fold = _Fold()
    for fact in facts:
        for ref in (fact.subject, fact.object, fact.target):
            if ref is not None:
                fold.refs.setdefault(ref.id, ref)
        _apply(fold, fact)
    here = fold.location
    present = tuple(
        fold.refs[person]
        for person, place in fold.places.items()
        if here is not None
        and place is not None
        and place.id == here.id
        and fold.statuses.get(person) != DEAD
    )
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
        ignored=tuple(fold.ignored),
    )
