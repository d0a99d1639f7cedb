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
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, func, insert, select, update
from sqlalchemy.orm import Session

from talekeeper.services.exchange.plan import ImportPlan, Planned, Ref
from talekeeper.storage.dialect import returns_ids_in_order
from talekeeper.storage.models import (
    Action,
    Adventure,
    Base,
    Branch,
    InsightSnapshot,
    Memory,
    MemoryUse,
    StoryCard,
    SummaryVersion,
)
from talekeeper.storage.repositories.memory import MemoryRepository

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


def write(session: Session, plan: ImportPlan) -> int:
    """The plan's rows inserted; returns the new adventure's id."""
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
    # Imported memories carry no vectors, and a long story may be due memories: the
    # background run takes it from here (the worker's poll finds the job).
    MemoryRepository(session).request_work(adventure_id)
    return adventure_id


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
