"""Export and import of a whole adventure in Talekeeper's own JSON format.

Invariants:

- Full fidelity: the tree (every branch, every action in every state, takes,
  the redo stack, deleted rows), plot components, persona, toggles, the Scene,
  story cards, Insights snapshots, memories (every status, with the replies that
  used them) and every Story Summary version, with their timestamps.
- Rows are named by keys local to the file (1..n in creation order), never by
  database ids, so ``export(import(f)) == f`` for any file we wrote.
- An import is validated whole before it is kept; a bad file is refused with
  the JSON path of the first problem and nothing is kept.
- Insights snapshots are copied verbatim: they record what the model was shown
  when the reply was generated, ids included.
- Memory vectors are not exported: they belong to one embedding model, and the
  bank re-embeds imported memories over the following runs. Their terms are
  recomputed from their text; revisions start again at 1.
- A version 1 file still imports: its ``story_summary`` becomes the player's
  Story Summary version before the first action of the first branch.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.orm import Session

from talekeeper.core.errors import InvalidInput
from talekeeper.services import limits
from talekeeper.services.adventures import COMPONENTS, SUMMARY, TOGGLES
from talekeeper.services.cards import clean_card
from talekeeper.services.memory import scene as scenes
from talekeeper.services.memory import summary as summaries
from talekeeper.services.memory.authority import ACCEPTED, HEURISTIC
from talekeeper.services.memory.bank import terms_of
from talekeeper.services.memory.manage import EVERY_STATUS, MEMORY_TEXT_MAX
from talekeeper.services.rendering import ACTION_TYPES
from talekeeper.services.tree import load_adventure
from talekeeper.storage.models import (
    Action,
    Adventure,
    Branch,
    InsightSnapshot,
    Memory,
    MemoryUse,
    StoryCard,
    SummaryVersion,
)
from talekeeper.storage.repositories import memory as memories
from talekeeper.storage.repositories.memory import MemoryRepository
from talekeeper.storage.repositories.story import ACTIVE, REMOVED, TAKE, UNDONE, StoryRepository

FORMAT = "talekeeper-adventure"
VERSION = 2
STATES = (ACTIVE, TAKE, UNDONE, REMOVED)
_V1 = frozenset({"format", "version", "adventure", "branches", "actions", "cards", "insights"})
SECTIONS = {1: _V1, 2: _V1 | {"memories", "summaries"}}  # what each version's file holds
AUTHORITIES = (ACCEPTED, HEURISTIC)
ORIGINS = (memories.AUTO, memories.USER)
TRIGGERS = (summaries.INTERVAL, summaries.USER)
WRITER_MAX = 255  # a model name, as the column holds it
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
            "scene": {
                "location": adventure.scene_location,
                "present": json.loads(adventure.scene_present or "[]"),
                "summary": adventure.scene_summary,
                "by_player": adventure.scene_by_player,
            },
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
        "memories": _export_memories(session, adventure.id, branch_key, action_key),
        "summaries": _export_summaries(session, adventure.id, branch_key, action_key),
    }


def _export_memories(
    session: Session, adventure_id: int, branch_key: dict[int, int], action_key: dict[int, int]
) -> list[dict[str, Any]]:
    repo = memories.MemoryRepository(session)
    rows = sorted(repo.memories(adventure_id, None, EVERY_STATUS), key=lambda m: m.id)
    uses = repo.uses([m.id for m in rows])
    return [
        {
            "key": key,
            "branch": branch_key[m.branch_id],
            "depth": m.depth,
            "action": action_key.get(m.action_id) if m.action_id else None,
            "source_start": m.source_start,
            "source_end": m.source_end,
            "text": m.text,
            "authority": m.authority,
            "origin": m.origin,
            "writer": m.writer,
            "status": m.status,
            "pinned": m.pinned,
            "stale": m.stale,
            "use_count": m.use_count,
            "last_used_at": _time(m.last_used_at),
            "created_at": _time(m.created_at),
            "updated_at": _time(m.updated_at),
            "used_by": sorted(action_key[a] for a in uses.get(m.id, [])),
        }
        for key, m in enumerate(rows, 1)
    ]


def _export_summaries(
    session: Session, adventure_id: int, branch_key: dict[int, int], action_key: dict[int, int]
) -> list[dict[str, Any]]:
    rows = memories.MemoryRepository(session).summary_versions(adventure_id)
    summary_key = {v.id: i for i, v in enumerate(rows, 1)}
    return [
        {
            "key": summary_key[v.id],
            "branch": branch_key[v.branch_id],
            "depth": v.depth,
            "action": action_key.get(v.action_id) if v.action_id else None,
            "covers_to": v.covers_to,
            "text": v.text,
            "trigger": v.trigger,
            "writer": v.writer,
            "base": summary_key.get(v.base_id) if v.base_id else None,
            "refreshes": summary_key.get(v.refreshes_id) if v.refreshes_id else None,
            "stale": v.stale,
            "created_at": _time(v.created_at),
        }
        for v in rows
    ]


# -- import ---------------------------------------------------------------------------------


class _Reader:
    """Typed access to the file with the JSON path of every problem in the message."""

    def __init__(self, data: Any, where: str) -> None:
        if not isinstance(data, dict):
            raise InvalidInput(f"{where}: expected an object.")
        self.data, self.where = data, where

    def fail(self, key: str, what: str) -> InvalidInput:
        return InvalidInput(f"Not a valid Talekeeper export: {self.where}.{key} {what}.")

    def text(self, key: str, limit: int, *, required: bool = False) -> str:
        value = self.data.get(key, "")
        if not isinstance(value, str) or len(value) > limit or (required and not value.strip()):
            raise self.fail(
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
            raise self.fail(key, f"must be a whole number from {minimum} to {MAX_INTEGER}")
        return value

    def number(self, key: str, *, minimum: int = 0) -> int:
        value = self.integer(key, minimum=minimum)
        assert value is not None
        return value

    def boolean(self, key: str, *, default: bool = True) -> bool:
        value = self.data.get(key, default)
        if not isinstance(value, bool):
            raise self.fail(key, "must be true or false")
        return value

    def choice(self, key: str, allowed: tuple[str, ...]) -> str:
        value = self.data.get(key)
        if value not in allowed:
            raise self.fail(key, f"is {value!r}; it must be one of {', '.join(allowed)}")
        return str(value)

    def ref(
        self, key: str, ids: dict[int, int], what: str, *, optional: bool = False
    ) -> int | None:
        """The database id of the row that ``key`` names by its file key."""
        value = self.integer(key, optional=optional, minimum=1)
        if value is None:
            return None
        if value not in ids:
            raise self.fail(key, f"names no {what}")
        return ids[value]

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
            raise self.fail(key, "must be an ISO 8601 time with a zone") from None
        return parsed

    def items(self, key: str) -> list[_Reader]:
        value = self.data.get(key, [])
        if not isinstance(value, list):
            raise self.fail(key, "must be a list")
        return [_Reader(item, f"{self.where}.{key}[{i}]") for i, item in enumerate(value)]


def import_adventure(session: Session, user_id: int, data: Any) -> Adventure:
    root = _Reader(data, "file")
    version = _version(root)
    meta = _Reader(root.data.get("adventure"), "file.adventure")
    adventure = _adventure(meta, user_id)
    legacy_summary = meta.text(SUMMARY, limits.COMPONENT_MAX) if version == 1 else ""
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
    _import_cards(repo, adventure, root.items("cards"))
    _import_insights(session, root.items("insights"), action_ids)
    _import_memories(session, adventure, root.items("memories"), branch_ids, action_ids)
    _import_summaries(session, adventure, root.items("summaries"), branch_ids, action_ids)
    if legacy_summary.strip():
        first_branch = branch_ids[min(branch_ids)]
        session.add(_legacy_version(adventure, first_branch, legacy_summary, meta))
    adventure.updated_at = meta.time("updated_at") or adventure.updated_at
    # Imported memories carry no vectors, and a long story may be due memories: the
    # background run takes it from here (the worker's poll finds the job).
    MemoryRepository(session).request_work(adventure.id)
    session.flush()
    return adventure


def _version(root: _Reader) -> int:
    version = root.data.get("version")
    if (
        root.data.get("format") != FORMAT
        or isinstance(version, bool)
        or not isinstance(version, int)
        or version not in SECTIONS
    ):
        raise InvalidInput(
            f"This is not a Talekeeper adventure export (expected format {FORMAT!r}, "
            f"version {' or '.join(map(str, SECTIONS))})."
        )
    unknown = sorted(set(root.data) - SECTIONS[version])
    if unknown:
        raise InvalidInput(
            f"Not a valid Talekeeper export: unknown section {limits.quoted(unknown[0])}; a "
            f"version {version} export has {', '.join(sorted(SECTIONS[version]))}."
        )
    return version


def _adventure(meta: _Reader, user_id: int) -> Adventure:
    persona = _Reader(meta.data.get("persona", {}), "file.adventure.persona")
    scene = _Reader(meta.data.get("scene", {}), "file.adventure.scene")
    present = scene.data.get("present", [])
    if (
        not isinstance(present, list)
        or len(present) > scenes.SCENE_NAMES
        or not all(isinstance(n, str) and n.strip() and len(n) <= scenes.NAME_MAX for n in present)
    ):
        raise scene.fail(
            "present",
            f"must be a list of at most {scenes.SCENE_NAMES} names of at most "
            f"{scenes.NAME_MAX} characters",
        )
    return Adventure(
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
        scene_location=scene.text("location", scenes.LOCATION_MAX),
        scene_present=json.dumps(present),
        scene_summary=scene.text("summary", scenes.SUMMARY_MAX),
        scene_by_player=scene.boolean("by_player", default=False),
        created_at=meta.time("created_at"),
        updated_at=meta.time("updated_at"),
    )


def _check_keys(readers: list[_Reader], name: str) -> None:
    seen: set[int] = set()
    for reader in readers:
        key = reader.number("key", minimum=1)
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
                raise reader.fail("forked_from_action", "names no action")
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
        branch = reader.number("branch", minimum=1)
        depth = reader.number("depth")
        type_ = reader.data.get("type")
        state = reader.data.get("state")
        if branch not in branch_ids:
            raise reader.fail("branch", "names no branch")
        if type_ not in ACTION_TYPES or state not in STATES:
            raise InvalidInput(
                f"Not a valid Talekeeper export: {reader.where} has type {type_!r} / state "
                f"{state!r}; types are {', '.join(ACTION_TYPES)}, states {', '.join(STATES)}."
            )
        if state == ACTIVE:
            if (branch, depth) in active:
                raise InvalidInput(
                    f"Not a valid Talekeeper export: {reader.where} is a second active action at "
                    f"depth {depth} of branch {branch}."
                )
            active.add((branch, depth))
        take = reader.number("take", minimum=1)
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


def _import_cards(repo: StoryRepository, adventure: Adventure, cards: list[_Reader]) -> None:
    for card in cards:
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


def _import_insights(session: Session, snaps: list[_Reader], action_ids: dict[int, int]) -> None:
    snapshot_keys: set[int] = set()
    for snap in snaps:
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


def _import_memories(
    session: Session,
    adventure: Adventure,
    readers: list[_Reader],
    branch_ids: dict[int, int],
    action_ids: dict[int, int],
) -> None:
    _check_keys(readers, "memories")
    for revision, reader in enumerate(readers, 1):
        start = reader.integer("source_start", optional=True)
        end = reader.integer("source_end", optional=True)
        if (start is None) != (end is None) or (
            start is not None and end is not None and start > end
        ):
            raise reader.fail(
                "source_start", "and source_end must be both null or two depths, start <= end"
            )
        text = reader.text("text", MEMORY_TEXT_MAX)
        row = Memory(
            adventure_id=adventure.id,
            branch_id=reader.ref("branch", branch_ids, "branch"),
            depth=reader.number("depth", minimum=-1),  # a player's memory: fork depth - 1
            action_id=reader.ref("action", action_ids, "action", optional=True),
            source_start=start,
            source_end=end,
            text=text,
            authority=reader.choice("authority", AUTHORITIES),
            origin=reader.choice("origin", ORIGINS),
            writer=reader.text("writer", WRITER_MAX),
            status=reader.choice("status", EVERY_STATUS),
            pinned=reader.boolean("pinned", default=False),
            stale=reader.boolean("stale", default=False),
            use_count=reader.number("use_count"),
            last_used_at=reader.time("last_used_at", optional=True),
            vector=None,
            vector_model=None,
            terms=terms_of(text),
            revision=revision,
            created_at=reader.time("created_at"),
            updated_at=reader.time("updated_at"),
        )
        used_by = _action_list(reader, "used_by", action_ids)
        session.add(row)
        session.flush()
        session.add_all(MemoryUse(memory_id=row.id, action_id=a) for a in used_by)


def _action_list(reader: _Reader, key: str, action_ids: dict[int, int]) -> list[int]:
    """The database ids of a list of distinct action keys."""
    value = reader.data.get(key, [])
    if not isinstance(value, list):
        raise reader.fail(key, "must be a list of action keys")
    for i, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, int) or item not in action_ids:
            raise reader.fail(f"{key}[{i}]", "names no action")
        if item in value[:i]:
            raise reader.fail(f"{key}[{i}]", "names the same action twice")
    return [action_ids[item] for item in value]


def _import_summaries(
    session: Session,
    adventure: Adventure,
    readers: list[_Reader],
    branch_ids: dict[int, int],
    action_ids: dict[int, int],
) -> None:
    """Every version first, then the links between them (a link may name any version)."""
    _check_keys(readers, "summaries")
    keys = {reader.data["key"] for reader in readers}
    ids: dict[int, int] = {}
    links: list[tuple[SummaryVersion, str, int]] = []
    for reader in readers:
        row = SummaryVersion(
            adventure_id=adventure.id,
            branch_id=reader.ref("branch", branch_ids, "branch"),
            depth=reader.number("depth", minimum=-1),
            action_id=reader.ref("action", action_ids, "action", optional=True),
            covers_to=reader.number("covers_to", minimum=-1),
            text=reader.text("text", summaries.SUMMARY_MAX),
            trigger=reader.choice("trigger", TRIGGERS),
            writer=reader.text("writer", WRITER_MAX),
            stale=reader.boolean("stale", default=False),
            created_at=reader.time("created_at"),
        )
        for field in ("base", "refreshes"):
            link = reader.integer(field, optional=True, minimum=1)
            if link is None:
                continue
            if link not in keys or link == reader.data["key"]:
                raise reader.fail(field, "names no other summary version")
            links.append((row, f"{field}_id", link))
        session.add(row)
        session.flush()
        ids[reader.data["key"]] = row.id
    for row, column, link in links:
        setattr(row, column, ids[link])


def _legacy_version(
    adventure: Adventure, branch_id: int, text: str, meta: _Reader
) -> SummaryVersion:
    """A version 1 file's Story Summary: the player's version, before the first action of
    the first branch (so it is in force on every path until a newer version is)."""
    return SummaryVersion(
        adventure_id=adventure.id,
        branch_id=branch_id,
        depth=-1,
        action_id=None,
        covers_to=-1,
        text=text,
        trigger=summaries.USER,
        writer="",
        created_at=meta.time("updated_at"),
    )
