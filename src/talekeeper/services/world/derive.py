"""Events derived from the story's text, written on the action that states them.

Invariants:

- Every action written to the story (the player's, a reply, a retry's new take, the
  opening) is read by the rules (``rules.derive``) in the unit that writes it, and its
  events are written on its own node with origin ``rules``: the turn costs no model call
  for them.
- An edit reads the action again: its derived events (dismissed or not) are replaced by
  what the new text states; the player's own events on it stay; a world model's reading
  of it, or of the reply that answers it, is forgotten (``reading``), so it is read again.
- A name the rules found that no entity can carry (no letter or digit, too long) is left
  out, never an error: the story's text is the player's, not a request to refuse.
- A reply to the player's ``do`` is also read for what it refuses of it (``refusal``):
  the ``do`` it answers is the active action a depth above it on its own path.
- In a shared adventure that several play, a member's action is their character's: what
  it says of "you" is said of that person (``played_by``), so each character has a place
  and belongings of their own; the host's actions, and those written before sharing, are
  the player's, and so is what the story says of the host's character by name.
- A sentence that takes the player toward a place the story already knows, or in which a
  person it knows handles an item it knows, in words no pattern reads, makes where the
  player stands, or whether they carry that item, unknown (``unsure``).
- ``derive_all`` reads a whole story without a database (an import of a file written
  before the world was kept): the same events ``record`` would have written as each
  action was, with the same entities (one per kind and key, named as first found), in the
  same order.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from talekeeper.core.errors import InvalidInput
from talekeeper.core.lineage import owner
from talekeeper.services.common.rendering import NARRATION
from talekeeper.services.story import sharing
from talekeeper.services.story.tree import Story
from talekeeper.services.world import rules
from talekeeper.services.world.events import ROLES, Node, match_names, role_names, write_event
from talekeeper.services.world.names import clean_name, key_of, trailing
from talekeeper.services.world.refusal import refusals
from talekeeper.services.world.unsure import Forms, unsure, unsure_items
from talekeeper.storage.models import Action
from talekeeper.storage.models.world import ALIASES_MAX
from talekeeper.storage.repositories.world import WorldRepository
from talekeeper.storage.vocabulary import ActionState, EntityKind, EventKind, EventOrigin


def followed(story: Story, row: Action) -> Action | None:
    """The action ``row`` answers: the active one a depth above it on its own path."""
    if row.depth == 0:
        return None
    held = owner(story.links(), row.branch_id, row.depth - 1)
    if held is None:
        return None
    slot = story.repo.slot(held, row.depth - 1)
    return next((a for a in slot if a.state == ActionState.ACTIVE), None)


# Every name and alias of the story's places, items and people, by kind, ready to read.
Known = dict[EntityKind, Forms]
_KNOWN_KINDS = (EntityKind.PLACE, EntityKind.ITEM, EntityKind.PERSON)


def _known(names: dict[EntityKind, list[str]]) -> Known:
    return {kind: Forms.of(names.get(kind, [])) for kind in _KNOWN_KINDS}


def _unsure(type_: str, text: str, known: Known, found: list[rules.Derived]) -> None:
    """Add to ``found`` the goings and holdings the rules are unsure of (``unsure``)."""
    read = rules.readable(type_, text)
    if read is not None:
        more = unsure(read, known[EntityKind.PLACE], found)
        more += unsure_items(read, known[EntityKind.ITEM], known[EntityKind.PERSON], found)
        found.extend(more)


def known_names(story: Story) -> Known:
    """Every name and alias of the story's places, items and people, by kind."""
    names: dict[EntityKind, list[str]] = {}
    for kind, name, aliases in WorldRepository(story.session).entity_names(story.adventure.id):
        names.setdefault(EntityKind(kind), []).extend([name, *json.loads(aliases or "[]")])
    return _known(names)


def said(story: Story, row: Action) -> list[rules.Derived]:
    """What ``row`` states: the rules' events, the goings they are unsure of, and for a
    reply to a ``do`` the attempts it refuses (``refusal``)."""
    found = rules.derive(row.type, row.text)
    _unsure(row.type, row.text, known_names(story), found)
    if row.type == NARRATION:
        tried = followed(story, row)
        if tried is not None and tried.type == "do":
            found.extend(played_by(story, tried, refusals(tried.text, row.text)))
    return played_by(story, row, found)


Subjects = Callable[[EventKind, str | None], str | None]  # an event's subject as read -> as meant


def subjects_for(story: Story, row: Action) -> Subjects | None:
    """How the events read from ``row`` name their subject in a shared adventure
    (docs/sharing.md): "the player" (None) is the character of a member who wrote ``row``
    (each plays a person of the world, with their own place and belongings), and the host's
    character named, as third-person narration does ("Mara takes the rope."), is the
    player's own (None). None: every subject as read (one player, no member's action)."""
    host = story.adventure.user_id
    name = row.author_name if row.author_id not in (None, host) else None
    playing = sharing.people_playing(story.session, story.adventure)
    lead = key_of(playing[host]) if len(playing) > 1 else ""
    if not name and not lead:
        return None

    def subject(kind: EventKind, said: str | None) -> str | None:
        if ROLES[kind].subject is not EntityKind.PERSON:
            return said
        if said is None:
            return name
        return None if lead and key_of(said) == lead else said

    return subject


def played_by(story: Story, row: Action, found: list[rules.Derived]) -> list[rules.Derived]:
    """``found`` with each subject as ``subjects_for`` reads it."""
    read = subjects_for(story, row)
    if read is None:
        return found
    return [replace(f, subject=read(f.kind, f.subject)) for f in found]


def record(story: Story, row: Action) -> int:
    """Write the rules' events of ``row``, on its own node; how many."""
    at = Node(row.id, row.branch_id, row.depth)
    written = 0
    for found in said(story, row):
        try:
            named, value = match_names(story, found.kind, found.subject, found.object, found.value)
        except InvalidInput:
            continue
        write_event(story, at, found.kind, named, value, EventOrigin.RULES, found.evidence)
        written += 1
    return written


def rederive(story: Story, row: Action) -> int:
    """After an edit: ``row``'s derived events replaced by what its text states now; a
    world model reads it (and the reply that answers it) again."""
    world = WorldRepository(story.session)
    world.delete_derived(row.id)
    world.forget_readings(row)
    return record(story, row)


@dataclass(frozen=True)
class Written:
    """An action as a story holds it: a key of the caller's, its type and its text, and
    for a reply the text of the ``do`` action it answers (None: it answers none)."""

    key: int
    type: str
    text: str
    answers: str | None = None


@dataclass
class Thing:
    """An entity ``derive_all`` found: its kind, name and aliases (its key is its place in
    the list, from 1)."""

    kind: EntityKind
    name: str
    aliases: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Found:
    """An event ``derive_all`` found, on the action of the caller's key ``action``; its
    entities by their keys among the things found."""

    action: int
    kind: EventKind
    subject: int | None
    object: int | None
    target: int | None
    value: str | None
    evidence: str


@dataclass
class Derivation:
    things: list[Thing] = field(default_factory=list)
    events: list[Found] = field(default_factory=list)
    keys: dict[tuple[EntityKind, str], int] = field(default_factory=dict)
    # Each thing under every key it is told shorter as (its last words): found in one step.
    shorter: dict[tuple[EntityKind, str], list[int]] = field(default_factory=dict)
    changes: int = 0  # things and aliases added: what the names known so far depend on

    def thing(self, kind: EntityKind, name: str, called: str) -> int:
        """As ``events.entity_for`` finds or makes an entity, in memory."""
        clean = clean_name(name, called)
        key = key_of(clean)
        if (kind, key) in self.keys:
            return self.keys[(kind, key)]
        near = sorted(
            {*self.shorter.get((kind, key), [])}
            | {self.keys[(kind, k)] for k in trailing(key) if (kind, k) in self.keys}
        )
        if len(near) > 1:
            raise InvalidInput(f"The {called} {clean!r} could be several things.")
        if near:
            thing = self.things[near[0] - 1]
            if clean not in thing.aliases and len(thing.aliases) < ALIASES_MAX:
                thing.aliases.append(clean)
                self.changes += 1
            return near[0]
        self.things.append(Thing(kind, clean))
        self.changes += 1
        number = len(self.things)
        self.keys[(kind, key)] = number
        for short in trailing(key):
            self.shorter.setdefault((kind, short), []).append(number)
        return number


def derive_all(actions: Iterable[Written]) -> Derivation:
    """The rules' events of every action, in the order given, and the entities they name."""
    found = Derivation()
    known: Known | None = None
    read_at = -1
    for action in actions:
        events = rules.derive(action.type, action.text)
        if known is None or read_at != found.changes:  # built again only after a change
            names: dict[EntityKind, list[str]] = {}
            for t in found.things:
                names.setdefault(t.kind, []).extend([t.name, *t.aliases])
            known, read_at = _known(names), found.changes
        _unsure(action.type, action.text, known, events)
        if action.type == NARRATION and action.answers is not None:
            events.extend(refusals(action.answers, action.text))
        for event in events:
            wanted, value = role_names(event.kind, event.subject, event.object, event.value)
            try:
                keys = {w.role: found.thing(w.kind, w.name, w.called) for w in wanted}
            except InvalidInput:
                continue
            found.events.append(
                Found(
                    action.key,
                    event.kind,
                    keys.get("subject"),
                    keys.get("object"),
                    keys.get("target"),
                    value,
                    event.evidence,
                )
            )
    return found
