"""The write of an import: a checked plan, inserted in one short transaction.

Each table is one bulk insert, in the order of its references (adventure, branches,
actions, cards, snapshots, memories, summary versions, the world's entities and events,
the replies' placement records, the memories' uses); on PostgreSQL a batch of thousands
of rows goes in a few statements (one holds at most 32,700 values). The ids the database
gives are read back in the order of the rows sent: with ``RETURNING`` where the database
returns a batch's ids in order (PostgreSQL), else (SQLite) by the rule that a new row
takes the largest id plus one, under the write lock this transaction holds. References
between rows of one table (a branch's parent, a summary version's base) are set by one
bulk update once the table is written. Nothing here checks the file: ``plan`` did,
before the first write, and built every value but those that name new rows, such as a
placement record's held cards (a short list of the cards' new ids).

The file's library references are matched last, in the same transaction, against the
importing user's own sources: first by file name and size, then (for the rest) by title,
the newest such source first and no source for two references. A reference with no match
is handed back to be reported; it never fails the import.

``write_world`` inserts the world alone, the same way, for a story already in the
database whose world the rules read as an older file's (``backlog``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from talekeeper.services.exchange.fileformat import SourceRef
from talekeeper.services.exchange.placements import PlannedPlacement
from talekeeper.services.exchange.plan import ImportPlan
from talekeeper.services.exchange.rows import Planned, Ref
from talekeeper.storage.models import (
    Action,
    Base,
    Branch,
    CardProposal,
    ContextPlacement,
    InsightSnapshot,
    Memory,
    StoryCard,
    SummaryVersion,
    WorldEntity,
    WorldEvent,
)
from talekeeper.storage.repositories.exchange import ExchangeRepository
from talekeeper.storage.repositories.library import LibraryRepository

TABLES: dict[str, type[Base]] = {  # in the order they are written
    "branches": Branch,
    "actions": Action,
    "cards": StoryCard,
    "insights": InsightSnapshot,
    "memories": Memory,
    "summaries": SummaryVersion,
    "world_entities": WorldEntity,
    "world_events": WorldEvent,
}
KEYED = ("branches", "actions", "cards", "memories", "summaries", "world_entities")

Ids = dict[str, dict[int, int]]  # per section: file key -> database id


@dataclass
class Written:
    adventure_id: int
    attached: list[int] = field(default_factory=list)  # library sources, by id
    unmatched: list[SourceRef] = field(default_factory=list)  # references with no source


def write(session: Session, plan: ImportPlan) -> Written:
    """The plan's rows inserted, and its library references matched and attached."""
    repo = ExchangeRepository(session)
    adventure_id = repo.insert_adventure(plan.adventure)
    ids: Ids = {}
    for section in TABLES:
        ids[section] = _insert(repo, section, plan.sections[section], adventure_id, ids)
    records = [_placement(row, ids) for row in plan.placements]
    repo.insert_rows(ContextPlacement, records, adventure_id=adventure_id)
    offered = [p.row(ids["actions"], ids["cards"]) for p in plan.proposals]
    repo.insert_rows(CardProposal, offered, adventure_id=adventure_id)
    for section in ("branches", "summaries"):
        _link(repo, section, plan.sections[section], ids)
    repo.insert_memory_uses(
        [
            (ids["memories"][row.key], ids["actions"][action])
            for row in plan.sections["memories"]
            for action in row.uses
        ]
    )
    repo.set_current_branch(
        adventure_id,
        ids["branches"][plan.current_branch],
        updated_at=plan.updated_at,  # as the file has it, not the time of this write
    )
    library = LibraryRepository(session)
    attached, unmatched = _attach(library, adventure_id, plan.user_id, plan.knowledge)
    return Written(adventure_id, attached, unmatched)


def write_world(
    session: Session,
    adventure_id: int,
    world: tuple[list[Planned], list[Planned]],
    ids: Ids,
) -> None:
    """The world's rows (entities, then the events naming them: what ``world.derived``
    plans) for a story already in the database, whose branches' and actions' ids ``ids``
    gives by their keys: inserted as an import inserts them."""
    repo = ExchangeRepository(session)
    entities, events = world
    ids["world_entities"] = _insert(repo, "world_entities", entities, adventure_id, ids)
    _insert(repo, "world_events", events, adventure_id, ids)


def _attach(
    library: LibraryRepository, adventure_id: int, user_id: int, refs: list[SourceRef]
) -> tuple[list[int], list[SourceRef]]:
    """Attach the user's source each reference names (see the module docstring); the ids
    attached, and the references left unmatched, in the file's order."""
    if not refs:
        return [], []
    by_file: dict[tuple[str, int], list[int]] = {}
    by_title: dict[str, list[int]] = {}
    for source in reversed(library.sources(user_id)):  # newest first
        by_file.setdefault((source.filename, source.size_bytes), []).append(source.id)
        by_title.setdefault(source.title, []).append(source.id)
    found: dict[int, int] = {}  # a reference's index -> the source it names
    taken: set[int] = set()
    passes: list[tuple[dict[Any, list[int]], Callable[[SourceRef], Any]]] = [
        (by_file, lambda ref: (ref.filename, ref.size_bytes)),
        (by_title, lambda ref: ref.title),
    ]
    for index, key in passes:  # every reference by file first: a title never takes its source
        for number, ref in enumerate(refs):
            if number not in found:
                match = next((s for s in index.get(key(ref), []) if s not in taken), None)
                if match is not None:
                    found[number] = match
                    taken.add(match)
    attached = [found[i] for i in range(len(refs)) if i in found]
    if attached:
        library.attach(adventure_id, attached)
    return attached, [ref for i, ref in enumerate(refs) if i not in found]


def _resolved(refs: dict[str, Ref], ids: Ids) -> dict[str, int | None]:
    return {
        column: None if key is None else ids[section][key]
        for column, (section, key) in refs.items()
    }


def _insert(
    repo: ExchangeRepository, section: str, rows: list[Planned], adventure_id: int, ids: Ids
) -> dict[int, int]:
    """One bulk insert; the database ids of the rows other rows name, by file key."""
    values = [row.values | _resolved(row.refs, ids) for row in rows]
    if section not in KEYED:
        repo.insert_rows(TABLES[section], values, adventure_id=adventure_id)
        return {}
    new = repo.insert_returning_ids(TABLES[section], values, adventure_id=adventure_id)
    return {row.key: row_id for row, row_id in zip(rows, new, strict=True)}


def _placement(row: PlannedPlacement, ids: Ids) -> dict[str, object]:
    """A reply's placement record, with its reply's and held cards' new ids (the cards in
    ``placement.record``'s form: a compact JSON list)."""
    cards = None
    if row.cards is not None:
        held = [ids["cards"][key] for key in row.cards]
        cards = json.dumps(held, separators=(",", ":"))
    return row.values | {"action_id": ids["actions"][row.action], "cards_held": cards}


def _link(repo: ExchangeRepository, section: str, rows: list[Planned], ids: Ids) -> None:
    """The references between a table's own rows, set in one bulk update."""
    columns = sorted({column for row in rows for column in row.later})
    links: list[tuple[int, dict[str, int | None]]] = []
    for row in rows:
        resolved = _resolved(row.later, ids)
        if any(value is not None for value in resolved.values()):
            links.append((ids[section][row.key], {c: resolved.get(c) for c in columns}))
    repo.set_references(TABLES[section], columns, links)
