"""An import read and checked whole, before the database is touched: the rows to write, in
the order to write them, with their references still as the file's keys.

``reader`` checks every value of the file against the model of its version; here the
entries are checked against each other (keys used once, references that name an entry,
branches without a cycle, one active action per place of the tree). Everything that costs
time (every check, JSON, a memory's terms) happens before the write, so the write that
follows is only inserts. A file is refused with the JSON path of its first problem; a plan
that comes out of ``plan_import`` holds rows the database accepts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

import talekeeper.services.exchange.world as world
from talekeeper.core.errors import InvalidInput
from talekeeper.services.cards.rules import card_columns
from talekeeper.services.exchange import proposals
from talekeeper.services.exchange.fileformat import (
    USES_MAX,
    ActionEntry,
    AdventureFileV1,
    AdventureFileV3,
    AdventureFileV4,
    AdventureFileV5,
    AdventureMeta,
    BranchEntry,
    CardEntry,
    InsightEntry,
    LegacyAdventureMeta,
    MemoryEntry,
    SourceRef,
    SummaryEntry,
)
from talekeeper.services.exchange.placements import PlannedPlacement, card_keys, planned
from talekeeper.services.exchange.proposals import PlannedProposal
from talekeeper.services.exchange.reader import NOT_VALID, read
from talekeeper.services.exchange.rows import Planned, Ref, Row, fail, keys_of, ref
from talekeeper.services.memory.bank import terms_of
from talekeeper.services.prompt import budgets
from talekeeper.services.world import secrets
from talekeeper.storage.vocabulary import ActionState, EntityKind, SummaryTrigger


@dataclass(frozen=True)
class ImportPlan:
    user_id: int
    adventure: Row
    current_branch: int
    updated_at: datetime
    sections: dict[str, list[Planned]]  # in the order they are written
    knowledge: list[SourceRef] = field(default_factory=list)  # matched as it is written
    # What the replies leave for the next turn, from their snapshots (``placements``).
    placements: list[PlannedPlacement] = field(default_factory=list)
    proposals: list[PlannedProposal] = field(default_factory=list)  # the lore clerk's


def plan_import(data: object, user_id: int) -> ImportPlan:
    file = read(data)
    meta = file.adventure
    branch_keys = keys_of(file.branches, "branches")
    action_keys = keys_of(file.actions, "actions")
    current = meta.current_branch
    if current is None or current not in branch_keys:
        raise InvalidInput(f"{NOT_VALID}: file.adventure.current_branch names no branch.")
    memories: Sequence[MemoryEntry] = []
    versions: Sequence[SummaryEntry] = []
    if not isinstance(file, AdventureFileV1):
        memories, versions = file.memories, file.summaries
    sections = {
        "branches": _branches(file.branches, action_keys),
        "actions": _actions(file.actions, branch_keys),
        "cards": [_card(key, card) for key, card in enumerate(file.cards, 1)],
        "insights": _insights(file.insights, action_keys),
        "memories": _memories(memories, branch_keys, action_keys),
        "summaries": _summaries(versions, branch_keys, action_keys),
    }
    if isinstance(file, AdventureFileV4):
        kinds = {e.key: EntityKind(e.kind) for e in file.world_entities}
        sections["world_entities"] = world.entities(file.world_entities)
        sections["world_events"] = world.events(file.world_events, kinds, branch_keys, file.actions)
    else:  # written before the world was kept: read from the story, as play would have
        sections["world_entities"], sections["world_events"] = world.derived(
            file.branches, file.actions, meta.created_at
        )
    legacy = meta.story_summary if isinstance(meta, LegacyAdventureMeta) else ""
    if legacy.strip():
        sections["summaries"].append(_legacy_version(min(branch_keys), legacy, meta.updated_at))
    knowledge = list(file.knowledge) if isinstance(file, AdventureFileV3 | AdventureFileV4) else []
    adventure = _adventure(meta, user_id) | {"memory_revision": len(memories)}  # they take 1..n
    carried = planned(file.insights, card_keys(file.cards))
    offered = (
        proposals.planned(file.card_proposals, action_keys, len(file.cards))
        if isinstance(file, AdventureFileV5)
        else []
    )
    return ImportPlan(
        user_id, adventure, current, meta.updated_at, sections, knowledge, carried, offered
    )


def _adventure(meta: AdventureMeta, user_id: int) -> Row:
    return {
        "user_id": user_id,
        "title": meta.title,
        "scenario_id": meta.scenario,
        "persona_name": meta.persona.name,
        "persona_pronouns": meta.persona.pronouns,
        "persona_description": meta.persona.description,
        "ai_instructions": meta.ai_instructions,
        "plot_essentials": meta.plot_essentials,
        "authors_note": meta.authors_note,
        "auto_summarize": meta.auto_summarize,
        "memory_bank": meta.memory_bank,
        "witness_mode": meta.witness_mode,
        "auto_accept_cards": meta.auto_accept_cards,
        "section_budgets": budgets.stored_text(meta.section_budgets),
        "scene_location": meta.scene.location,
        "scene_present": json.dumps(meta.scene.present),
        "scene_summary": meta.scene.summary,
        "scene_by_player": meta.scene.by_player,
        "current_branch_id": None,  # set once the branches exist
        "created_at": meta.created_at,
        "updated_at": meta.updated_at,
    }


def _branches(branches: Sequence[BranchEntry], action_keys: set[int]) -> list[Planned]:
    """Parents before children (the file may list them in any order), each generation in
    the file's order; a parent that is missing or part of a cycle is refused."""
    parents = {b.key: b.parent for b in branches}
    generation: dict[int, int] = {}
    for i, branch in enumerate(branches):
        chain: list[int] = []
        on_chain: set[int] = set()
        key: int | None = branch.key
        while key is not None and key not in generation:
            if key not in parents or key in on_chain:
                raise fail(f"file.branches[{i}].parent", "names no branch (or a cycle)")
            chain.append(key)
            on_chain.add(key)
            key = parents[key]
        below = -1 if key is None else generation[key]
        for depth, link in enumerate(reversed(chain), below + 1):
            generation[link] = depth
    ordered = sorted(enumerate(branches), key=lambda p: (generation[p[1].key], p[0]))
    rows: list[Planned] = []
    for i, b in ordered:
        forked = ref(
            b.forked_from_action, action_keys, f"file.branches[{i}].forked_from_action", "action"
        )
        values: Row = {
            "parent_id": None,  # set once every branch exists
            "fork_depth": b.fork_depth,
            "forked_from_action_id": None,
            "name": b.name,
            "created_at": b.created_at,
        }
        later: dict[str, Ref] = {
            "parent_id": ("branches", b.parent),
            "forked_from_action_id": ("actions", forked),
        }
        rows.append(Planned(values, key=b.key, later=later))
    return rows


def _actions(actions: Sequence[ActionEntry], branch_keys: set[int]) -> list[Planned]:
    rows: list[Planned] = []
    active: set[tuple[int, int]] = set()
    takes: set[tuple[int, int, int]] = set()
    for i, a in enumerate(actions):
        where = f"file.actions[{i}]"
        ref(a.branch, branch_keys, f"{where}.branch", "branch")
        place = (a.branch, a.depth)
        if a.state == ActionState.ACTIVE:
            if place in active:
                raise fail(
                    where, f"is a second active action at depth {a.depth} of branch {a.branch}"
                )
            active.add(place)
        if a.state != ActionState.REMOVED:
            if (*place, a.take) in takes:
                raise fail(where, f"repeats take {a.take} at depth {a.depth} of branch {a.branch}")
            takes.add((*place, a.take))
        values: Row = {
            "depth": a.depth,
            "type": a.type,
            "text": a.text,
            "state": a.state,
            "take": a.take,
            "created_at": a.created_at,
            "edited_at": a.edited_at,
            "author_name": a.author,  # the account does not travel: only who they played
        }
        rows.append(Planned(values, key=a.key, refs={"branch_id": ("branches", a.branch)}))
    return rows


def _card(key: int, card: CardEntry) -> Planned:
    """A card, keyed by its place in the file (``card_keys``): the file's fields
    as the card routes store them; a file without the rules: the defaults."""
    fields = card.model_dump(exclude={"created_at", "updated_at"})
    times = {"created_at": card.created_at, "updated_at": card.updated_at}
    secret = {"known_by": secrets.dumps(secrets.clean_known_by(card.known_by))}
    return Planned(card_columns(fields) | secret | times, key=key)


def _insights(snaps: Sequence[InsightEntry], action_keys: set[int]) -> list[Planned]:
    rows: list[Planned] = []
    seen: set[int] = set()
    for i, snap in enumerate(snaps):
        where = f"file.insights[{i}]"
        if snap.action not in action_keys:
            raise fail(where, "is malformed")
        if snap.action in seen:
            raise fail(where, f"is a second snapshot of action {snap.action}")
        seen.add(snap.action)
        values: Row = {
            "data": json.dumps(snap.data, ensure_ascii=False, separators=(",", ":")),
            "created_at": snap.created_at,
        }
        rows.append(Planned(values, refs={"action_id": ("actions", snap.action)}))
    return rows


def _memories(
    memories: Sequence[MemoryEntry], branch_keys: set[int], action_keys: set[int]
) -> list[Planned]:
    keys_of(memories, "memories")
    rows: list[Planned] = []
    count = 0
    for revision, m in enumerate(memories, 1):
        where = f"file.memories[{revision - 1}]"
        start, end = m.source_start, m.source_end
        if (start is None) != (end is None) or (
            start is not None and end is not None and start > end
        ):
            raise fail(
                f"{where}.source_start",
                "and source_end must be both null or two depths, start <= end",
            )
        refs: dict[str, Ref] = {
            "branch_id": ("branches", ref(m.branch, branch_keys, f"{where}.branch", "branch")),
            "action_id": ("actions", ref(m.action, action_keys, f"{where}.action", "action")),
        }
        values: Row = {
            "depth": m.depth,  # a player's memory: fork depth - 1
            "source_start": start,
            "source_end": end,
            "text": m.text,
            "authority": m.authority,
            "origin": m.origin,
            "writer": m.writer,
            "status": m.status,
            "pinned": m.pinned,
            "known_by": secrets.dumps(secrets.clean_known_by(m.known_by)),
            "stale": m.stale,
            "use_count": m.use_count,
            "last_used_at": m.last_used_at,
            "vector": None,
            "vector_model": None,
            "terms": terms_of(m.text),
            "revision": revision,
            "created_at": m.created_at,
            "updated_at": m.updated_at,
        }
        uses = _distinct(m.used_by, action_keys, f"{where}.used_by", "action")
        count += len(uses)
        if count > USES_MAX:
            raise InvalidInput(
                f"This file records more than {USES_MAX:,} uses of memories by replies "
                f"(counted up to {where}.used_by); an adventure holds at most "
                f"{USES_MAX:,}. Remove some entries of used_by before importing.",
                code="limit_reached",
            )
        rows.append(Planned(values, key=m.key, refs=refs, uses=uses))
    return rows


def _distinct(keys: list[int], known: set[int], where: str, what: str) -> list[int]:
    """A list of distinct file keys, each naming one of ``known``."""
    seen: set[int] = set()
    for i, key in enumerate(keys):
        if key not in known:
            raise fail(f"{where}[{i}]", f"names no {what}")
        if key in seen:
            raise fail(f"{where}[{i}]", f"names the same {what} twice")
        seen.add(key)
    return keys


def _summaries(
    versions: Sequence[SummaryEntry], branch_keys: set[int], action_keys: set[int]
) -> list[Planned]:
    """Every version, its links to other versions (any of them) set once all exist."""
    keys = keys_of(versions, "summaries")
    rows: list[Planned] = []
    for i, v in enumerate(versions):
        where = f"file.summaries[{i}]"
        later: dict[str, Ref] = {}
        for link, other in (("base", v.base), ("refreshes", v.refreshes)):
            if other is not None and (other not in keys or other == v.key):
                raise fail(f"{where}.{link}", "names no other summary version")
            later[f"{link}_id"] = ("summaries", other)
        refs: dict[str, Ref] = {
            "branch_id": ("branches", ref(v.branch, branch_keys, f"{where}.branch", "branch")),
            "action_id": ("actions", ref(v.action, action_keys, f"{where}.action", "action")),
        }
        values: Row = {
            "depth": v.depth,
            "covers_to": v.covers_to,
            "text": v.text,
            "trigger": v.trigger,
            "writer": v.writer,
            "base_id": None,
            "refreshes_id": None,
            "stale": v.stale,
            "created_at": v.created_at,
        }
        rows.append(Planned(values, key=v.key, refs=refs, later=later))
    return rows


def _legacy_version(first_branch: int, text: str, updated_at: datetime) -> Planned:
    """A version 1 file's Story Summary: the player's version, before the first action of
    the first branch (so it is in force on every path until a newer version is)."""
    values: Row = {
        "depth": -1,
        "covers_to": -1,
        "text": text,
        "trigger": SummaryTrigger.USER,
        "writer": "",
        "base_id": None,
        "refreshes_id": None,
        "stale": False,
        "created_at": updated_at,
    }
    refs: dict[str, Ref] = {"branch_id": ("branches", first_branch), "action_id": ("actions", None)}
    return Planned(values, refs=refs)
