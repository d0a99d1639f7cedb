"""The write of an import: a checked plan, inserted in one short transaction.

Each table is one bulk insert, in the order of its references (adventure, branches,
actions, cards, snapshots, memories and their uses, summary versions); on PostgreSQL a
batch of thousands of rows goes in a few statements (one holds at most 32,700 values). The ids the
database gives are read back in the order of the rows sent: with ``RETURNING`` where the
database returns a batch's ids in order (PostgreSQL), else (SQLite) by the rule that a new
row takes the largest id plus one, under the write lock this transaction holds.
References between rows of one table (a branch's parent, a summary version's base) are
set by one bulk update once the table is written. Nothing here checks the file: ``plan``
did, before the first write.

The file's library references are matched last, in the same transaction, against the
importing user's own sources: first by file name and size, then (for the rest) by title,
the newest such source first and no source for two references. A reference with no match
is handed back to be reported; it never fails the import.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, func, insert, select, update
from sqlalchemy.orm import Session

from talekeeper.services.exchange.fileformat import SourceRef
from talekeeper.services.exchange.plan import ImportPlan, Planned, Ref
from talekeeper.storage.dialect import returns_ids_in_order
from talekeeper.storage.models import (
    Action,
    Adventure,
    AdventureKnowledge,
    Base,
    Branch,
    InsightSnapshot,
    LibrarySource,
    Memory,
    MemoryUse,
    StoryCard,
    SummaryVersion,
)

TABLES: dict[str, type[Base]] = {  # in the order they are written
    "branches": Branch,
    "actions": Action,
    "cards": StoryCard,
    "insights": InsightSnapshot,
    "memories": Memory,
    "summaries": SummaryVersion,
}
KEYED = ("branches", "actions", "memories", "summaries")  # rows that others name by key

Ids = dict[str, dict[int, int]]  # per section: file key -> database id


@dataclass
class Written:
    adventure_id: int
    attached: list[int] = field(default_factory=list)  # library sources, by id
    unmatched: list[SourceRef] = field(default_factory=list)  # references with no source


def write(session: Session, plan: ImportPlan) -> Written:
    """The plan's rows inserted, and its library references matched and attached."""
    statement = insert(Adventure).values(plan.adventure).returning(Adventure.id)
    adventure_id = int(session.execute(statement).scalar_one())
    ids: Ids = {}
    for section in TABLES:
        ids[section] = _insert(session, section, plan.sections[section], adventure_id, ids)
    for section in ("branches", "summaries"):
        _link(session, section, plan.sections[section], ids)
    uses = [
        {"memory_id": ids["memories"][row.key], "action_id": ids["actions"][action]}
        for row in plan.sections["memories"]
        for action in row.uses
    ]
    if uses:
        table: Any = MemoryUse.__table__
        session.execute(insert(table), uses)  # Core, not the ORM: half the time per row
    session.execute(
        update(Adventure)
        .where(Adventure.id == adventure_id)
        .values(
            current_branch_id=ids["branches"][plan.current_branch],
            updated_at=plan.updated_at,  # as the file has it, not the time of this write
        )
    )
    attached, unmatched = _attach(session, adventure_id, plan.adventure["user_id"], plan.knowledge)
    return Written(adventure_id, attached, unmatched)


def _attach(
    session: Session, adventure_id: int, user_id: int, refs: list[SourceRef]
) -> tuple[list[int], list[SourceRef]]:
    """Attach the user's source each reference names (see the module docstring); the ids
    attached, and the references left unmatched, in the file's order."""
    if not refs:
        return [], []
    by_file: dict[tuple[str, int], list[int]] = {}
    by_title: dict[str, list[int]] = {}
    rows = session.execute(
        select(
            LibrarySource.id, LibrarySource.filename, LibrarySource.size_bytes, LibrarySource.title
        )
        .where(LibrarySource.user_id == user_id)
        .order_by(LibrarySource.id.desc())  # a file uploaded again: its newest copy first
    ).all()
    for source_id, filename, size, title in rows:
        by_file.setdefault((filename, size), []).append(source_id)
        by_title.setdefault(title, []).append(source_id)
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
        table: Any = AdventureKnowledge.__table__
        session.execute(
            insert(table), [{"adventure_id": adventure_id, "source_id": s} for s in attached]
        )
    return attached, [ref for i, ref in enumerate(refs) if i not in found]


def _resolved(refs: dict[str, Ref], ids: Ids) -> dict[str, int | None]:
    return {
        column: None if key is None else ids[section][key]
        for column, (section, key) in refs.items()
    }


def _insert(
    session: Session, section: str, rows: list[Planned], adventure_id: int, ids: Ids
) -> dict[int, int]:
    """One bulk insert; the database ids of the rows other rows name, by file key."""
    if not rows:  # an empty list would insert one row of defaults
        return {}
    model = TABLES[section]
    table: Any = model.__table__
    owner = {"adventure_id": adventure_id} if "adventure_id" in table.c else {}
    values = [row.values | owner | _resolved(row.refs, ids) for row in rows]
    if section not in KEYED:
        session.execute(insert(table), values)
        return {}
    return {row.key: new for row, new in zip(rows, _new_ids(session, table, values), strict=True)}


def _new_ids(session: Session, table: Any, values: list[dict[str, Any]]) -> list[int]:
    """Insert ``values``; the ids they were given, in the order sent."""
    if returns_ids_in_order(session.get_bind()):
        statement = insert(table).returning(table.c.id, sort_by_parameter_order=True)
        return [int(i) for i in session.execute(statement, values).scalars()]
    # SQLite cannot return a batch's ids in order, so it would insert row by row. But it
    # gives each new row the table's largest id plus one, and this transaction holds the
    # write lock: one executemany takes the ids after the largest, in the order sent.
    before = int(session.scalar(select(func.max(table.c.id))) or 0)
    session.execute(insert(table), values)
    ids = [int(i) for i in session.scalars(select(table.c.id).where(table.c.id > before))]
    if sorted(ids) != list(range(before + 1, before + 1 + len(values))):
        raise RuntimeError(f"{table.name}: new ids are not {before + 1} onwards; nothing kept")
    return sorted(ids)


def _link(session: Session, section: str, rows: list[Planned], ids: Ids) -> None:
    """The references between a table's own rows, set in one bulk update."""
    columns = sorted({column for row in rows for column in row.later})
    params: list[dict[str, int | None]] = []
    for row in rows:
        links = _resolved(row.later, ids)
        if any(value is not None for value in links.values()):
            values: dict[str, int | None] = {f"new_{c}": links.get(c) for c in columns}
            params.append({"row_id": ids[section][row.key], **values})
    if params:
        table: Any = TABLES[section].__table__
        statement = (
            update(table)
            .where(table.c.id == bindparam("row_id"))
            .values({c: bindparam(f"new_{c}") for c in columns})
        )
        session.execute(statement, params)
