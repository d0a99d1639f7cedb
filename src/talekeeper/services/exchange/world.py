"""The world of an import: a version 4 file's entities and events checked against each
other and the story, or, for a file from before the world, the events the rules read from
its actions (as play would have written them as each action was).

Invariants:

- An entity's name is stored cleaned, with its key (``world.names``); two entities of one
  kind whose names share a key are refused, as the database would refuse the second.
- An event names its file's action (at that action's depth), a branch, and entities of the
  kinds its kind names (``world.events.ROLES``; ``gave``'s target a person); a quest's value
  is one of its states.
- Reading an older file's world happens here, before the write: CPU only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from talekeeper.core.errors import InvalidInput
from talekeeper.core.lineage import BranchLink, owner
from talekeeper.services.common import limits
from talekeeper.services.common.rendering import NARRATION
from talekeeper.services.exchange.fileformat import (
    ActionEntry,
    BranchEntry,
    EntityEntry,
    EventEntry,
)
from talekeeper.services.exchange.reader import NOT_VALID
from talekeeper.services.exchange.rows import Planned, Ref, Row, fail, keys_of, ref
from talekeeper.services.world import secrets
from talekeeper.services.world.derive import Written, derive_all
from talekeeper.services.world.events import ROLES
from talekeeper.services.world.names import clean_name, key_of
from talekeeper.storage.vocabulary import (
    ActionState,
    EntityKind,
    EventKind,
    EventOrigin,
    QuestState,
)


def entities(entries: Sequence[EntityEntry]) -> list[Planned]:
    """Each entity as the world stores it: its name cleaned, one per kind and name key."""
    keys_of(entries, "world_entities")
    seen: set[tuple[str, str]] = set()
    rows: list[Planned] = []
    for i, e in enumerate(entries):
        where = f"file.world_entities[{i}]"
        try:
            name = clean_name(e.name)
            aliases = [clean_name(alias, "alias") for alias in e.aliases]
        except InvalidInput as exc:
            raise InvalidInput(f"{NOT_VALID}: {where}: {exc.message}") from None
        key = key_of(name)
        if (e.kind, key) in seen:
            raise fail(where, f"is a second {e.kind} named {limits.quoted(name)} (names match)")
        seen.add((e.kind, key))
        values: Row = {
            "kind": e.kind,
            "name": name,
            "key": key,
            "aliases": json.dumps(aliases, ensure_ascii=False),
            "created_at": e.created_at,
        }
        rows.append(Planned(values, key=e.key))
    return rows


def _wanted(kind: EventKind) -> dict[str, EntityKind | None]:
    """The kind of entity each role of an event of ``kind`` names (None: no entity)."""
    roles = ROLES[kind]
    target = EntityKind.PERSON if kind is EventKind.GAVE else None
    return {"subject": roles.subject, "object": roles.object, "target": target}


def events(
    entries: Sequence[EventEntry],
    kinds: dict[int, EntityKind],
    branch_keys: set[int],
    actions: Sequence[ActionEntry],
) -> list[Planned]:
    """Each event on its action and node, checked as the module says."""
    depth_of = {a.key: a.depth for a in actions}
    rows: list[Planned] = []
    for i, e in enumerate(entries):
        where = f"file.world_events[{i}]"
        if e.action not in depth_of:
            raise fail(f"{where}.action", "names no action")
        ref(e.branch, branch_keys, f"{where}.branch", "branch")
        if e.depth != depth_of[e.action]:
            raise fail(f"{where}.depth", f"is not its action's depth ({depth_of[e.action]})")
        kind = EventKind(e.kind)
        wanted = _wanted(kind)
        refs: dict[str, Ref] = {
            "action_id": ("actions", e.action),
            "branch_id": ("branches", e.branch),
        }
        for role, key in (("subject", e.subject), ("object", e.object), ("target", e.target)):
            if key is not None and key not in kinds:
                raise fail(f"{where}.{role}", "names no world entity")
            if key is not None and kinds[key] is not wanted[role]:
                what = f"a {wanted[role]}" if wanted[role] else "nothing"
                raise fail(f"{where}.{role}", f"names a {kinds[key]}; a {kind} event names {what}")
            refs[f"{role}_id"] = ("world_entities", key)
        if kind is EventKind.QUEST and e.value not in set(QuestState):
            raise fail(f"{where}.value", f"must be a quest's state: {', '.join(QuestState)}")
        values: Row = {
            "depth": e.depth,
            "kind": e.kind,
            "value": e.value,
            "origin": e.origin,
            "evidence": e.evidence,
            "dismissed": e.dismissed,
            "known_by": secrets.dumps(secrets.clean_known_by(e.known_by)),
            "created_at": e.created_at,
        }
        rows.append(Planned(values, refs=refs))
    return rows


def _answered(branches: Sequence[BranchEntry], actions: Sequence[ActionEntry]) -> dict[int, str]:
    """Each reply's ``do``, by the reply's key: the active action a depth above it on its
    branch's path, where that is a ``do`` (as ``derive`` finds it in play)."""
    links = {b.key: BranchLink(b.key, b.parent, b.fork_depth) for b in branches}
    active = {(a.branch, a.depth): a for a in actions if a.state == ActionState.ACTIVE}
    answers: dict[int, str] = {}
    for a in actions:
        if a.type != NARRATION or a.depth == 0 or a.branch not in links:
            continue
        held = owner(links, a.branch, a.depth - 1)
        tried = active.get((held, a.depth - 1)) if held is not None else None
        if tried is not None and tried.type == "do":
            answers[a.key] = tried.text
    return answers


def derived(
    branches: Sequence[BranchEntry], actions: Sequence[ActionEntry], since: datetime
) -> tuple[list[Planned], list[Planned]]:
    """The world the rules read from every action of a file that predates it: what play
    writes as each action is written (``derive.record``), on the action's own node. An
    entity is as old as the first action naming it (else the adventure)."""
    answers = _answered(branches, actions)
    found = derive_all(Written(a.key, a.type, a.text, answers.get(a.key)) for a in actions)
    by_key = {a.key: a for a in actions}
    first: dict[int, datetime] = {}
    for event in found.events:
        for named in (event.subject, event.object, event.target):
            if named is not None:
                first.setdefault(named, by_key[event.action].created_at)
    entity_rows = [
        Planned(
            {
                "kind": thing.kind,
                "name": thing.name,
                "key": key_of(thing.name),
                "aliases": json.dumps(thing.aliases, ensure_ascii=False),
                "created_at": first.get(key, since),
            },
            key=key,
        )
        for key, thing in enumerate(found.things, 1)
    ]
    event_rows: list[Planned] = []
    for event in found.events:
        action = by_key[event.action]
        refs: dict[str, Ref] = {
            "action_id": ("actions", action.key),
            "branch_id": ("branches", action.branch),
            "subject_id": ("world_entities", event.subject),
            "object_id": ("world_entities", event.object),
            "target_id": ("world_entities", event.target),
        }
        values: Row = {
            "depth": action.depth,
            "kind": event.kind,
            "value": event.value,
            "origin": EventOrigin.RULES,
            "evidence": event.evidence,
            "dismissed": False,
            "created_at": action.created_at,
        }
        event_rows.append(Planned(values, refs=refs))
    return entity_rows, event_rows
