"""An import read and checked whole, before the database is touched: the rows to write, in
the order to write them, with their references still as the file's keys.

Everything that costs time (every check, JSON, a memory's terms) happens here, so the write
that follows is only inserts. A file is refused here with the JSON path of its first
problem; a plan that comes out of ``plan_import`` holds rows the database accepts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from talekeeper.core.errors import InvalidInput
from talekeeper.services import limits
from talekeeper.services.adventures import COMPONENTS, SUMMARY, TOGGLES
from talekeeper.services.cards import card_columns, clean_card
from talekeeper.services.exchange.fileformat import (
    AUTHORITIES,
    FORMAT,
    KIND_MAX,
    ORIGINS,
    SCENARIO_MAX,
    SECTIONS,
    STATES,
    TRIGGERS,
    USES_MAX,
    WRITER_MAX,
    SourceRef,
)
from talekeeper.services.exchange.reader import (
    NOT_VALID,
    Reader,
    check_counts,
    check_values,
    keys_of,
    shown,
)
from talekeeper.services.library import store as library
from talekeeper.services.memory import scene as scenes
from talekeeper.services.memory import summary as summaries
from talekeeper.services.memory.bank import terms_of
from talekeeper.services.memory.manage import EVERY_STATUS, MEMORY_TEXT_MAX
from talekeeper.services.rendering import ACTION_TYPES
from talekeeper.storage.vocabulary import ActionState, SummaryTrigger

Ref = tuple[str, int | None]  # (the file's section, a key of it; None for no row)


@dataclass
class Planned:
    """One row: its columns, and the columns that name other rows by their file keys."""

    values: dict[str, Any]
    key: int = 0  # the row's own file key, where other rows name it
    refs: dict[str, Ref] = field(default_factory=dict)  # set as the row is inserted
    later: dict[str, Ref] = field(default_factory=dict)  # set once every row exists
    uses: list[int] = field(default_factory=list)  # a memory's replies, by action key


@dataclass
class ImportPlan:
    adventure: dict[str, Any]
    current_branch: int
    updated_at: datetime
    sections: dict[str, list[Planned]]  # in the order they are written
    knowledge: list[SourceRef] = field(default_factory=list)  # matched as it is written


def plan_import(data: Any, user_id: int) -> ImportPlan:
    root = Reader(data, "file")
    version = _version(root)
    check_counts(root)
    check_values(data)
    meta = Reader(root.data.get("adventure"), "file.adventure")
    adventure = _adventure(meta, user_id)
    legacy = meta.text(SUMMARY, limits.COMPONENT_MAX) if version == 1 else ""
    branches, actions = root.items("branches"), root.items("actions")
    branch_keys, action_keys = keys_of(branches), keys_of(actions)
    current = meta.integer("current_branch", minimum=1)
    if current not in branch_keys:
        raise InvalidInput(f"{NOT_VALID}: file.adventure.current_branch names no branch.")
    sections = {
        "branches": _branches(branches, action_keys),
        "actions": _actions(actions, branch_keys),
        "cards": [_card(card) for card in root.items("cards")],
        "insights": _insights(root.items("insights"), action_keys),
        "memories": _memories(root.items("memories"), branch_keys, action_keys),
        "summaries": _summaries(root.items("summaries"), branch_keys, action_keys),
    }
    if legacy.strip():
        sections["summaries"].append(_legacy_version(min(branch_keys), legacy, meta))
    adventure["memory_revision"] = len(sections["memories"])  # they take 1..n
    knowledge = [_source_ref(ref) for ref in root.items("knowledge")]
    return ImportPlan(adventure, current, meta.time("updated_at"), sections, knowledge)


def _either(values: list[int]) -> str:
    """``1, 2 or 3``."""
    words = [str(v) for v in values]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _version(root: Reader) -> int:
    version = root.data.get("version")
    if (
        root.data.get("format") != FORMAT
        or isinstance(version, bool)
        or not isinstance(version, int)
        or version not in SECTIONS
    ):
        raise InvalidInput(
            f"This is not a Talekeeper adventure export (expected format {FORMAT!r}, "
            f"version {_either(sorted(SECTIONS))})."
        )
    unknown = sorted(set(root.data) - SECTIONS[version])
    if unknown:
        raise InvalidInput(
            f"{NOT_VALID}: unknown section {limits.quoted(unknown[0])}; a "
            f"version {version} export has {', '.join(sorted(SECTIONS[version]))}."
        )
    return version


def _adventure(meta: Reader, user_id: int) -> dict[str, Any]:
    persona = Reader(meta.data.get("persona", {}), "file.adventure.persona")
    scene = Reader(meta.data.get("scene", {}), "file.adventure.scene")
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
    scenario = meta.data.get("scenario")
    if scenario is not None and (not isinstance(scenario, str) or len(scenario) > SCENARIO_MAX):
        raise meta.fail("scenario", f"must be null or a scenario id of at most {SCENARIO_MAX}")
    return {
        "user_id": user_id,
        "title": meta.text("title", limits.TITLE_MAX, required=True),
        "scenario_id": scenario,
        "persona_name": persona.text("name", limits.PERSONA_NAME_MAX),
        "persona_pronouns": persona.text("pronouns", limits.PERSONA_PRONOUNS_MAX),
        "persona_description": persona.text("description", limits.PERSONA_DESCRIPTION_MAX),
        **{key: meta.text(key, limits.COMPONENT_MAX) for key in COMPONENTS},
        **{key: meta.boolean(key) for key in TOGGLES},
        "scene_location": scene.text("location", scenes.LOCATION_MAX),
        "scene_present": json.dumps(present),
        "scene_summary": scene.text("summary", scenes.SUMMARY_MAX),
        "scene_by_player": scene.boolean("by_player", default=False),
        "current_branch_id": None,  # set once the branches exist
        "created_at": meta.time("created_at"),
        "updated_at": meta.time("updated_at"),
    }


def _branches(branches: list[Reader], action_keys: set[int]) -> list[Planned]:
    """Parents before children (the file may list them in any order), each generation in
    the file's order; a parent that is missing or part of a cycle is refused."""
    parents = {b.data["key"]: b.integer("parent", optional=True, minimum=1) for b in branches}
    generation: dict[int, int] = {}
    for reader in branches:
        chain: list[int] = []
        on_chain: set[int] = set()
        key: int | None = reader.data["key"]
        while key is not None and key not in generation:
            if key not in parents or key in on_chain:
                raise InvalidInput(
                    f"{NOT_VALID}: {reader.where}.parent names no branch (or a cycle)."
                )
            chain.append(key)
            on_chain.add(key)
            key = parents[key]
        below = -1 if key is None else generation[key]
        for depth, link in enumerate(reversed(chain), below + 1):
            generation[link] = depth
    ordered = sorted(enumerate(branches), key=lambda p: (generation[p[1].data["key"]], p[0]))
    return [
        Planned(
            {
                "parent_id": None,  # set once every branch exists
                "fork_depth": reader.integer("fork_depth"),
                "forked_from_action_id": None,
                "name": reader.text("name", limits.BRANCH_NAME_MAX),
                "created_at": reader.time("created_at"),
            },
            key=reader.data["key"],
            later={
                "parent_id": ("branches", reader.data.get("parent")),
                "forked_from_action_id": (
                    "actions",
                    reader.optional_ref("forked_from_action", action_keys, "action"),
                ),
            },
        )
        for _, reader in ordered
    ]


def _actions(actions: list[Reader], branch_keys: set[int]) -> list[Planned]:
    rows: list[Planned] = []
    active: set[tuple[int, int]] = set()
    takes: set[tuple[int, int, int]] = set()
    for reader in actions:
        branch = reader.ref("branch", branch_keys, "branch")
        depth = reader.number("depth")
        type_, state = reader.data.get("type"), reader.data.get("state")
        if type_ not in ACTION_TYPES or state not in STATES:
            raise InvalidInput(
                f"{NOT_VALID}: {reader.where} has type {shown(type_)} / state {shown(state)}; "
                f"types are {', '.join(ACTION_TYPES)}, states {', '.join(STATES)}."
            )
        if state == ActionState.ACTIVE:
            if (branch, depth) in active:
                raise InvalidInput(
                    f"{NOT_VALID}: {reader.where} is a second active action at depth {depth} "
                    f"of branch {branch}."
                )
            active.add((branch, depth))
        take = reader.number("take", minimum=1)
        if state != ActionState.REMOVED:
            if (branch, depth, take) in takes:
                raise InvalidInput(
                    f"{NOT_VALID}: {reader.where} repeats take {take} at depth {depth} of "
                    f"branch {branch}."
                )
            takes.add((branch, depth, take))
        values = {
            "depth": depth,
            "type": type_,
            "text": reader.text("text", limits.NARRATION_MAX),
            "state": state,
            "take": take,
            "created_at": reader.time("created_at"),
            "edited_at": reader.optional_time("edited_at"),
        }
        rows.append(
            Planned(values, key=reader.data["key"], refs={"branch_id": ("branches", branch)})
        )
    return rows


def _card(card: Reader) -> Planned:
    try:
        fields = clean_card(card.data)
    except InvalidInput as exc:
        raise InvalidInput(f"{NOT_VALID}: {card.where}: {exc.message}") from None
    times = {"created_at": card.time("created_at"), "updated_at": card.time("updated_at")}
    return Planned(card_columns(fields) | times)  # a file without the rules: the defaults


def _insights(snaps: list[Reader], action_keys: set[int]) -> list[Planned]:
    rows: list[Planned] = []
    seen: set[int] = set()
    for snap in snaps:
        key = snap.integer("action", minimum=1)
        if key not in action_keys or not isinstance(snap.data.get("data"), dict):
            raise InvalidInput(f"{NOT_VALID}: {snap.where} is malformed.")
        if key in seen:
            raise InvalidInput(f"{NOT_VALID}: {snap.where} is a second snapshot of action {key}.")
        seen.add(key)
        values = {
            "data": json.dumps(snap.data["data"], ensure_ascii=False, separators=(",", ":")),
            "created_at": snap.time("created_at"),
        }
        rows.append(Planned(values, refs={"action_id": ("actions", key)}))
    return rows


def _memories(readers: list[Reader], branch_keys: set[int], action_keys: set[int]) -> list[Planned]:
    keys_of(readers)
    rows: list[Planned] = []
    uses = 0
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
        values = {
            "depth": reader.number("depth", minimum=-1),  # a player's memory: fork depth - 1
            "source_start": start,
            "source_end": end,
            "text": text,
            "authority": reader.choice("authority", AUTHORITIES),
            "origin": reader.choice("origin", ORIGINS),
            "writer": reader.text("writer", WRITER_MAX),
            "status": reader.choice("status", EVERY_STATUS),
            "pinned": reader.boolean("pinned", default=False),
            "stale": reader.boolean("stale", default=False),
            "use_count": reader.number("use_count"),
            "last_used_at": reader.optional_time("last_used_at"),
            "vector": None,
            "vector_model": None,
            "terms": terms_of(text),
            "revision": revision,
            "created_at": reader.time("created_at"),
            "updated_at": reader.time("updated_at"),
        }
        refs: dict[str, Ref] = {
            "branch_id": ("branches", reader.ref("branch", branch_keys, "branch")),
            "action_id": ("actions", reader.optional_ref("action", action_keys, "action")),
        }
        used_by = reader.distinct("used_by", action_keys, "action")
        uses += len(used_by)
        if uses > USES_MAX:
            raise InvalidInput(
                f"This file records more than {USES_MAX:,} uses of memories by replies "
                f"(counted up to {reader.where}.used_by); an adventure holds at most "
                f"{USES_MAX:,}. Remove some entries of used_by before importing.",
                code="limit_reached",
            )
        rows.append(Planned(values, key=reader.data["key"], refs=refs, uses=used_by))
    return rows


def _summaries(
    readers: list[Reader], branch_keys: set[int], action_keys: set[int]
) -> list[Planned]:
    """Every version, its links to other versions (any of them) set once all exist."""
    keys = keys_of(readers)
    rows: list[Planned] = []
    for reader in readers:
        later: dict[str, Ref] = {}
        for link in ("base", "refreshes"):
            other = reader.integer(link, optional=True, minimum=1)
            if other is not None and (other not in keys or other == reader.data["key"]):
                raise reader.fail(link, "names no other summary version")
            later[f"{link}_id"] = ("summaries", other)
        values = {
            "depth": reader.number("depth", minimum=-1),
            "covers_to": reader.number("covers_to", minimum=-1),
            "text": reader.text("text", summaries.SUMMARY_MAX),
            "trigger": reader.choice("trigger", TRIGGERS),
            "writer": reader.text("writer", WRITER_MAX),
            "base_id": None,
            "refreshes_id": None,
            "stale": reader.boolean("stale", default=False),
            "created_at": reader.time("created_at"),
        }
        refs: dict[str, Ref] = {
            "branch_id": ("branches", reader.ref("branch", branch_keys, "branch")),
            "action_id": ("actions", reader.optional_ref("action", action_keys, "action")),
        }
        rows.append(Planned(values, key=reader.data["key"], refs=refs, later=later))
    return rows


def _source_ref(ref: Reader) -> SourceRef:
    return SourceRef(
        title=ref.text("title", library.TITLE_MAX, required=True),
        filename=ref.text("filename", library.FILENAME_MAX, required=True),
        kind=ref.text("kind", KIND_MAX),
        size_bytes=ref.number("size_bytes"),
        passage_count=ref.number("passage_count"),
    )


def _legacy_version(first_branch: int, text: str, meta: Reader) -> Planned:
    """A version 1 file's Story Summary: the player's version, before the first action of
    the first branch (so it is in force on every path until a newer version is)."""
    values = {
        "depth": -1,
        "covers_to": -1,
        "text": text,
        "trigger": SummaryTrigger.USER,
        "writer": "",
        "base_id": None,
        "refreshes_id": None,
        "stale": False,
        "created_at": meta.time("updated_at"),
    }
    refs: dict[str, Ref] = {"branch_id": ("branches", first_branch), "action_id": ("actions", None)}
    return Planned(values, refs=refs)
