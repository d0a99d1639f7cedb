"""Export and import of a whole adventure in Talekeeper's own JSON format.

Invariants:

- Full fidelity: the tree (every branch, every action in every state, takes,
  the redo stack, deleted rows), plot components, persona, toggles, story
  cards and Insights snapshots, with their timestamps.
- Rows are named by keys local to the file (1..n in creation order), never by
  database ids, so ``export(import(f)) == f`` for any file we wrote.
- An import is validated whole before anything is written; a bad file is
  refused with the JSON path of the first problem and nothing is kept.
- Insights snapshots are copied verbatim: they record what the model was shown
  when the reply was generated, ids included.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.orm import Session

from talekeeper.core.errors import InvalidInput
from talekeeper.services import limits
from talekeeper.services.adventures import COMPONENTS, TOGGLES
from talekeeper.services.cards import clean_card
from talekeeper.services.rendering import ACTION_TYPES
from talekeeper.services.tree import load_adventure
from talekeeper.storage.models import Action, Adventure, Branch, InsightSnapshot, StoryCard
from talekeeper.storage.repositories.story import ACTIVE, REMOVED, TAKE, UNDONE, StoryRepository

FORMAT = "talekeeper-adventure"
VERSION = 1
STATES = (ACTIVE, TAKE, UNDONE, REMOVED)
TOP_LEVEL = frozenset(
    {"format", "version", "adventure", "branches", "actions", "cards", "insights"}
)
MAX_INTEGER = 2**31 - 1  # depths, takes and keys fit a 32-bit column on every database


def _time(value: datetime | None) -> str | None:
    return value.isoformat() if value else None


def export(session: Session, adventure_id: int, user_id: int) -> dict[str, Any]:
    adventure = load_adventure(session, adventure_id, user_id)
    repo = StoryRepository(session)
    branches = list(repo.branches(adventure.id))
    actions = list(repo.all_actions(adventure.id))
    branch_key = {b.id: i for i, b in enumerate(branches, 1)}
    action_key = {a.id: i for i, a in enumerate(actions, 1)}
    snapshots = repo.insights_for([a.id for a in actions])
    snapshots = sorted(snapshots, key=lambda s: action_key[s.action_id])
    return {
        "format": FORMAT,
        "version": VERSION,
        "adventure": {
            "title": adventure.title,
            "scenario": adventure.scenario_id,
            "persona": {
                "name": adventure.persona_name,
                "pronouns": adventure.persona_pronouns,
                "description": adventure.persona_description,
            },
            **{key: getattr(adventure, key) for key in (*COMPONENTS, *TOGGLES)},
            "current_branch": branch_key.get(adventure.current_branch_id or -1),
            "created_at": _time(adventure.created_at),
            "updated_at": _time(adventure.updated_at),
        },
        "branches": [
            {
                "key": branch_key[b.id],
                "parent": branch_key.get(b.parent_id) if b.parent_id else None,
                "fork_depth": b.fork_depth,
                "forked_from_action": action_key.get(b.forked_from_action_id or -1),
                "name": b.name,
                "created_at": _time(b.created_at),
            }
            for b in branches
        ],
        "actions": [
            {
                "key": action_key[a.id],
                "branch": branch_key[a.branch_id],
                "depth": a.depth,
                "type": a.type,
                "text": a.text,
                "state": a.state,
                "take": a.take,
                "created_at": _time(a.created_at),
                "edited_at": _time(a.edited_at),
            }
            for a in actions
        ],
        "cards": [
            {
                "name": c.name,
                "type": c.type,
                "keywords": json.loads(c.keywords),
                "entry": c.entry,
                "notes": c.notes,
                "created_at": _time(c.created_at),
                "updated_at": _time(c.updated_at),
            }
            for c in repo.cards(adventure.id)
        ],
        "insights": [
            {
                "action": action_key[s.action_id],
                "data": json.loads(s.data),
                "created_at": _time(s.created_at),
            }
            for s in snapshots
        ],
    }


# -- import ---------------------------------------------------------------------------------


class _Reader:
    """Typed access to the file with the JSON path of every problem in the message."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, dict):
            raise InvalidInput(f"{where}: expected an object.")
        self.data, self.where = data, where

    def _fail(self, key: str, what: str) -> InvalidInput:
        return InvalidInput(f"Not a valid Talekeeper export: {self.where}.{key} {what}.")

    def text(self, key: str, limit: int, *, required: bool = False) -> str:
        value = self.data.get(key, "")
        if not isinstance(value, str) or len(value) > limit or (required and not value.strip()):
            raise self._fail(
                key,
                f"must be {'non-empty ' if required else ''}text of at most {limit:,} characters",
            )
        return value

    def integer(self, key: str, *, optional: bool = False, minimum: int = 0) -> int | None:
        value = self.data.get(key)
        if value is None and optional:
            return None
        if (
            not isinstance(value, int)
            or isinstance(value, bool)
            or not minimum <= value <= MAX_INTEGER
        ):
            raise self._fail(key, f"must be a whole number from {minimum} to {MAX_INTEGER}")
        return value

    def boolean(self, key: str) -> bool:
        value = self.data.get(key, True)
        if not isinstance(value, bool):
            raise self._fail(key, "must be true or false")
        return value

    def time(self, key: str, *, optional: bool = False) -> datetime | None:
        value = self.data.get(key)
        if value is None and optional:
            return None
        try:
            parsed = datetime.fromisoformat(str(value))
            if parsed.tzinfo is None:
                raise ValueError("no zone")
            parsed.astimezone(UTC)  # stored as UTC: a time that cannot be is refused here
        except (ValueError, OverflowError):
            raise self._fail(key, "must be an ISO 8601 time with a zone") from None
        return parsed

    def items(self, key: str) -> list[_Reader]:
        value = self.data.get(key, [])
        if not isinstance(value, list):
            raise self._fail(key, "must be a list")
        return [_Reader(item, f"{self.where}.{key}[{i}]") for i, item in enumerate(value)]


def import_adventure(session: Session, user_id: int, data: Any) -> Adventure:
    root = _Reader(data, "file")
    if root.data.get("format") != FORMAT or root.data.get("version") != VERSION:
        raise InvalidInput(
            f"This is not a Talekeeper adventure export (expected format {FORMAT!r}, "
            f"version {VERSION})."
        )
    unknown = sorted(set(root.data) - TOP_LEVEL)
    if unknown:
        raise InvalidInput(
            f"Not a valid Talekeeper export: unknown section {limits.quoted(unknown[0])}; a "
            f"version {VERSION} export has {', '.join(sorted(TOP_LEVEL))}."
        )
    meta = _Reader(root.data.get("adventure"), "file.adventure")
    persona = _Reader(meta.data.get("persona", {}), "file.adventure.persona")
    adventure = Adventure(
        user_id=user_id,
        title=meta.text("title", limits.TITLE_MAX, required=True),
        scenario_id=meta.data.get("scenario")
        if isinstance(meta.data.get("scenario"), str)
        else None,
        persona_name=persona.text("name", limits.PERSONA_NAME_MAX),
        persona_pronouns=persona.text("pronouns", limits.PERSONA_PRONOUNS_MAX),
        persona_description=persona.text("description", limits.PERSONA_DESCRIPTION_MAX),
        **{key: meta.text(key, limits.COMPONENT_MAX) for key in COMPONENTS},
        **{key: meta.boolean(key) for key in TOGGLES},
        created_at=meta.time("created_at"),
        updated_at=meta.time("updated_at"),
    )
    branches = root.items("branches")
    actions = root.items("actions")
    _check_keys(branches, "branches")
    _check_keys(actions, "actions")
    branch_keys = {b.data["key"] for b in branches}
    action_keys = {a.data["key"] for a in actions}
    current = meta.integer("current_branch", minimum=1)
    if current is None or current not in branch_keys:
        raise InvalidInput(
            "Not a valid Talekeeper export: file.adventure.current_branch names no branch."
        )
    repo = StoryRepository(session)
    repo.add(adventure)
    branch_ids = _import_branches(repo, adventure, branches, branch_keys, action_keys)
    action_ids = _import_actions(repo, adventure, actions, branch_ids)
    for branch_reader in branches:
        source = branch_reader.data.get("forked_from_action")
        if source is not None:
            row = session.get(Branch, branch_ids[branch_reader.data["key"]])
            assert row is not None
            row.forked_from_action_id = action_ids[source]
    adventure.current_branch_id = branch_ids[current]
    for card in root.items("cards"):
        fields = clean_card(card.data)
        fields["keywords"] = json.dumps(fields["keywords"])
        repo.add(
            StoryCard(
                adventure_id=adventure.id,
                created_at=card.time("created_at"),
                updated_at=card.time("updated_at"),
                **fields,
            )
        )
    snapshot_keys: set[int] = set()
    for snap in root.items("insights"):
        key = snap.integer("action", minimum=1)
        if key not in action_ids or not isinstance(snap.data.get("data"), dict):
            raise InvalidInput(f"Not a valid Talekeeper export: {snap.where} is malformed.")
        if key in snapshot_keys:
            raise InvalidInput(
                f"Not a valid Talekeeper export: {snap.where} is a second snapshot of action {key}."
            )
        snapshot_keys.add(key)
        session.add(
            InsightSnapshot(
                action_id=action_ids[key],
                data=json.dumps(snap.data["data"], ensure_ascii=False, separators=(",", ":")),
                created_at=snap.time("created_at"),
            )
        )
    adventure.updated_at = meta.time("updated_at") or adventure.updated_at
    session.flush()
    return adventure


def _check_keys(readers: list[_Reader], name: str) -> None:
    seen: set[int] = set()
    for reader in readers:
        key = reader.integer("key", minimum=1)
        assert key is not None
        if key in seen:
            raise InvalidInput(
                f"Not a valid Talekeeper export: {reader.where}.key {key} is used twice."
            )
        seen.add(key)


def _import_branches(
    repo: StoryRepository,
    adventure: Adventure,
    branches: list[_Reader],
    branch_keys: set[int],
    action_keys: set[int],
) -> dict[int, int]:
    ids: dict[int, int] = {}
    pending = list(branches)
    while pending:  # parents first, whatever the file's order
        for reader in pending:
            reader.integer("parent", optional=True, minimum=1)  # a number, before it is a key
        ready = [b for b in pending if b.data.get("parent") is None or b.data.get("parent") in ids]
        if not ready:
            bad = pending[0]
            raise InvalidInput(
                f"Not a valid Talekeeper export: {bad.where}.parent names no branch (or a cycle)."
            )
        for reader in ready:
            parent = reader.integer("parent", optional=True, minimum=1)
            source = reader.integer("forked_from_action", optional=True, minimum=1)
            if source is not None and source not in action_keys:
                raise InvalidInput(
                    f"Not a valid Talekeeper export: {reader.where}.forked_from_action "
                    "names no action."
                )
            row = Branch(
                adventure_id=adventure.id,
                parent_id=ids[parent] if parent else None,
                fork_depth=reader.integer("fork_depth"),
                name=reader.text("name", limits.BRANCH_NAME_MAX),
                created_at=reader.time("created_at"),
            )
            repo.add(row)
            ids[reader.data["key"]] = row.id
            pending.remove(reader)
    return ids


def _import_actions(
    repo: StoryRepository, adventure: Adventure, actions: list[_Reader], branch_ids: dict[int, int]
) -> dict[int, int]:
    ids: dict[int, int] = {}
    active: set[tuple[int, int]] = set()
    takes: set[tuple[int, int, int]] = set()
    for reader in actions:
        branch = reader.integer("branch", minimum=1)
        depth = reader.integer("depth")
        type_ = reader.data.get("type")
        state = reader.data.get("state")
        if branch not in branch_ids:
            raise InvalidInput(
                f"Not a valid Talekeeper export: {reader.where}.branch names no branch."
            )
        if type_ not in ACTION_TYPES or state not in STATES:
            raise InvalidInput(
                f"Not a valid Talekeeper export: {reader.where} has type {type_!r} / state "
                f"{state!r}; types are {', '.join(ACTION_TYPES)}, states {', '.join(STATES)}."
            )
        assert depth is not None and branch is not None
        if state == ACTIVE:
            if (branch, depth) in active:
                raise InvalidInput(
                    f"Not a valid Talekeeper export: {reader.where} is a second active action at "
                    f"depth {depth} of branch {branch}."
                )
            active.add((branch, depth))
        take = reader.integer("take", minimum=1)
        assert take is not None
        if state != REMOVED:
            if (branch, depth, take) in takes:
                raise InvalidInput(
                    f"Not a valid Talekeeper export: {reader.where} repeats take {take} at "
                    f"depth {depth} of branch {branch}."
                )
            takes.add((branch, depth, take))
        row = Action(
            adventure_id=adventure.id,
            branch_id=branch_ids[branch],
            depth=depth,
            type=type_,
            text=reader.text("text", limits.NARRATION_MAX),
            state=state,
            take=take,
            created_at=reader.time("created_at"),
            edited_at=reader.time("edited_at", optional=True),
        )
        repo.add(row)
        ids[reader.data["key"]] = row.id
    return ids
