"""An import's writes: a whole adventure in a few bulk statements. Never commits.

Invariants:

- Every insert is one Core statement over the table (an executemany), never ORM
  objects: half the time per row, and a batch of thousands of rows is a few statements.
  An empty list is never sent (it would insert one row of defaults).
- ``insert_returning_ids`` gives the ids in the order the rows were sent: with
  ``RETURNING`` where the database returns a batch's ids in order (PostgreSQL), else
  (SQLite) by the rule that a new row takes the largest id plus one, which holds only
  while this transaction holds the write lock; ids that break it fail the transaction.
- Nothing here checks a row: the caller's plan did, before the first write.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, func, insert, select, update
from sqlalchemy.orm import Session

from talekeeper.storage.dialect import returns_ids_in_order
from talekeeper.storage.models import (
    Adventure,
    Base,
    MemoryUse,
)


class ExchangeRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    # -- the adventure ------------------------------------------------------------------

    def insert_adventure(self, values: dict[str, Any]) -> int:
        """A new adventure row; its id."""
        statement = insert(Adventure).values(values).returning(Adventure.id)
        return int(self.session.execute(statement).scalar_one())

    def set_current_branch(
        self, adventure_id: int, branch_id: int, *, updated_at: datetime
    ) -> None:
        """Set the adventure's current branch, and its ``updated_at`` as given."""
        self.session.execute(
            update(Adventure)
            .where(Adventure.id == adventure_id)
            .values(current_branch_id=branch_id, updated_at=updated_at)
        )

    # -- rows of the adventure ----------------------------------------------------------

    def insert_rows(
        self, model: type[Base], rows: list[dict[str, Any]], *, adventure_id: int
    ) -> None:
        """Insert ``rows`` (none: nothing), each owned by ``adventure_id`` where the table
        has that column (a snapshot belongs to its action alone)."""
        if rows:
            table: Any = model.__table__
            self.session.execute(insert(table), _owned(table, rows, adventure_id))

    def insert_returning_ids(
        self, model: type[Base], rows: list[dict[str, Any]], *, adventure_id: int
    ) -> list[int]:
        """``insert_rows``; the ids the rows were given, in the order sent."""
        if not rows:
            return []
        table: Any = model.__table__
        values = _owned(table, rows, adventure_id)
        if returns_ids_in_order(self.session.get_bind()):
            statement = insert(table).returning(table.c.id, sort_by_parameter_order=True)
            return [int(i) for i in self.session.execute(statement, values).scalars()]
        # SQLite cannot return a batch's ids in order, so it would insert row by row. But it
        # gives each new row the table's largest id plus one, and this transaction holds the
        # write lock: one executemany takes the ids after the largest, in the order sent.
        before = int(self.session.scalar(select(func.max(table.c.id))) or 0)
        self.session.execute(insert(table), values)
        query = select(table.c.id).where(table.c.id > before)
        ids = [int(i) for i in self.session.scalars(query)]
        if sorted(ids) != list(range(before + 1, before + 1 + len(values))):
            raise RuntimeError(f"{table.name}: new ids are not {before + 1} onwards; nothing kept")
        return sorted(ids)

    def set_references(
        self, model: type[Base], columns: Sequence[str], rows: list[tuple[int, dict[str, Any]]]
    ) -> None:
        """Set ``columns`` of rows already written, in one bulk update: each (row id, its
        value of every column). References between rows of one table (a branch's parent)
        can only be set once every row of it has its id."""
        if not rows:
            return
        table: Any = model.__table__
        params = [
            {"row_id": row_id, **{f"new_{c}": values[c] for c in columns}}
            for row_id, values in rows
        ]
        statement = (
            update(table)
            .where(table.c.id == bindparam("row_id"))
            .values({c: bindparam(f"new_{c}") for c in columns})
        )
        self.session.execute(statement, params)

    def insert_memory_uses(self, uses: list[tuple[int, int]]) -> None:
        """Record (memory id, reply's action id) pairs (none: nothing)."""
        if uses:
            table: Any = MemoryUse.__table__
            self.session.execute(insert(table), [{"memory_id": m, "action_id": a} for m, a in uses])

    # -- library references -------------------------------------------------------------


def _owned(table: Any, rows: list[dict[str, Any]], adventure_id: int) -> list[dict[str, Any]]:
    if "adventure_id" not in table.c:
        return rows
    owner = {"adventure_id": adventure_id}
    return [row | owner for row in rows]
