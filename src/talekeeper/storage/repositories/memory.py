"""Memories and Story Summary versions (the background work's rows: ``jobs``). Never commits.

Invariants:

- "On the path" for a memory or a summary version is ``story.on_path`` over its
  node (branch, depth), the one clause actions use too; a summary version with an
  anchor action also needs that action to be active (an undone or replaced node takes
  its versions out of force without deleting them).
- The bank's hot read (``bank_rows``) never loads memory text: ids, node,
  flags, vector and terms only, and only rows whose revision moved, in revision order
  on every database.
- ``next_revision`` is the only source of revisions: the adventure's counter, bumped
  by one ``UPDATE … RETURNING`` that holds the adventure row's lock until the
  transaction ends. So a revision is never given twice, and of two writers the second
  gets its revision only after the first committed: a reader that holds every row up to
  revision R has seen every change that will ever carry a revision <= R (no ``max + 1``,
  which two writers that cannot see each other's rows both take).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import Select, func, insert, or_, select, update
from sqlalchemy.orm import Session

from talekeeper.core.errors import NotFound
from talekeeper.core.lineage import Lineage
from talekeeper.storage.models import (
    Action,
    Adventure,
    Memory,
    MemoryUse,
    SummaryVersion,
)
from talekeeper.storage.repositories.story import is_on_path, on_path
from talekeeper.storage.vocabulary import (
    ActionState,
    MemoryOrigin,
    MemoryStatus,
    SummaryTrigger,
)

# Statuses whose source stays covered: the memory pass never writes their block again.
COVERING = (MemoryStatus.ACTIVE, MemoryStatus.FORGOTTEN, MemoryStatus.DELETED)
LISTED = (MemoryStatus.ACTIVE, MemoryStatus.FORGOTTEN)  # what the Memory Bank shows


class PathRow(NamedTuple):
    id: int
    branch_id: int
    depth: int
    type: str
    text: str
    author: str | None = None  # the persona a member wrote it as (a shared adventure)


def _path_rows(lineage: Lineage) -> Select[int, int, int, str, str, str | None]:
    """The columns of a ``PathRow`` of the path's active actions."""
    columns = (Action.id, Action.branch_id, Action.depth, Action.type, Action.text)
    return select(*columns, Action.author_name).where(
        Action.state == ActionState.ACTIVE, on_path(Action.branch_id, Action.depth, lineage)
    )


class BankRow(NamedTuple):
    id: int
    branch_id: int
    depth: int
    status: str
    pinned: bool
    authority: str
    vector: bytes | None
    vector_model: str | None
    terms: str
    revision: int


class MemoryRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    # -- the path ---------------------------------------------------------------------

    def path_rows(self, lineage: Lineage, *, after_depth: int = -1) -> list[PathRow]:
        """Active actions of the path deeper than ``after_depth``, oldest first."""
        query = _path_rows(lineage).where(Action.depth > after_depth).order_by(Action.depth)
        return [PathRow(*row) for row in self.session.execute(query).all()]

    def row_before(self, lineage: Lineage, depth: int) -> PathRow | None:
        """The path's deepest active action above ``depth``, if any."""
        query = (
            _path_rows(lineage).where(Action.depth < depth).order_by(Action.depth.desc()).limit(1)
        )
        row = self.session.execute(query).first()
        return PathRow(*row) if row is not None else None

    def path_depths(self, lineage: Lineage) -> list[int]:
        """The depths of the path's active actions, oldest first."""
        query = (
            select(Action.depth)
            .where(
                Action.state == ActionState.ACTIVE, on_path(Action.branch_id, Action.depth, lineage)
            )
            .order_by(Action.depth)
        )
        return [int(d) for d in self.session.scalars(query).all()]

    def count_memories(self, adventure_id: int, lineage: Lineage, status: MemoryStatus) -> int:
        query = select(func.count()).where(
            Memory.adventure_id == adventure_id,
            Memory.status == status,
            on_path(Memory.branch_id, Memory.depth, lineage),
        )
        return int(self.session.scalar(query) or 0)

    def count_path(self, lineage: Lineage, *, after_depth: int = -1) -> int:
        query = select(func.count()).where(
            Action.state == ActionState.ACTIVE,
            on_path(Action.branch_id, Action.depth, lineage),
            Action.depth > after_depth,
        )
        return int(self.session.scalar(query) or 0)

    def rows_by_id(self, ids: Sequence[int]) -> dict[int, Action]:
        rows = self.session.scalars(select(Action).where(Action.id.in_(ids))).all()
        return {row.id: row for row in rows}

    # -- memories ---------------------------------------------------------------------

    def memory(self, memory_id: int) -> Memory | None:
        return self.session.get(Memory, memory_id)

    def memories(
        self,
        adventure_id: int,
        lineage: Lineage | None,
        statuses: Sequence[MemoryStatus] = LISTED,
        *,
        origin: MemoryOrigin | None = None,
        within: tuple[int, int] | None = None,
    ) -> list[Memory]:
        """``within`` (first, last): only memories whose source range lies inside it."""
        query = select(Memory).where(Memory.adventure_id == adventure_id)
        if within is not None:
            query = query.where(Memory.source_start >= within[0], Memory.source_end <= within[1])
        query = query.where(Memory.status.in_(statuses))
        if lineage is not None:
            query = query.where(on_path(Memory.branch_id, Memory.depth, lineage))
        if origin is not None:
            query = query.where(Memory.origin == origin)
        order = (func.coalesce(Memory.source_start, Memory.depth), Memory.id)
        return list(self.session.scalars(query.order_by(*order)).all())

    def coverage(self, adventure_id: int, lineage: Lineage) -> list[tuple[int, int]]:
        """Source ranges of the path's automatic memories that keep their block covered."""
        query = select(Memory.source_start, Memory.source_end).where(
            Memory.adventure_id == adventure_id,
            Memory.origin == MemoryOrigin.AUTO,
            Memory.status.in_(COVERING),
            Memory.source_start.is_not(None),
            on_path(Memory.branch_id, Memory.depth, lineage),
        )
        return sorted((int(s or 0), int(e or 0)) for s, e in self.session.execute(query).all())

    def off_path(self, adventure_id: int, lineage: Lineage) -> list[Memory]:
        """Automatic memories that keep their block covered but are not on this path."""
        query = select(Memory).where(
            Memory.adventure_id == adventure_id,
            Memory.origin == MemoryOrigin.AUTO,
            Memory.status.in_(COVERING),
            Memory.source_start.is_not(None),
            ~is_on_path(Memory.branch_id, Memory.depth, lineage),
        )
        return list(self.session.scalars(query).all())

    def covering_at(
        self, adventure_id: int, branch_id: int, depth: int, *, deeper: bool
    ) -> list[Memory]:
        """The automatic memories that keep their block covered attached to the branch at
        ``depth`` (or deeper, with ``deeper``): what leaving that node withdraws."""
        query = select(Memory).where(
            Memory.adventure_id == adventure_id,
            Memory.branch_id == branch_id,
            Memory.origin == MemoryOrigin.AUTO,
            Memory.status.in_(COVERING),
            Memory.depth >= depth if deeper else Memory.depth == depth,
        )
        return list(self.session.scalars(query).all())

    def covering_spanning(self, adventure_id: int, depth: int) -> list[Memory]:
        """The automatic memories that keep their block covered whose source range spans
        ``depth``, on any branch (the caller tests each one's path)."""
        query = select(Memory).where(
            Memory.adventure_id == adventure_id,
            Memory.origin == MemoryOrigin.AUTO,
            Memory.status.in_(COVERING),
            Memory.source_start <= depth,
            Memory.source_end >= depth,
        )
        return list(self.session.scalars(query).all())

    def next_revision(self, adventure_id: int) -> int:
        return self.next_revisions(adventure_id, 1)[0]

    def next_revisions(self, adventure_id: int, n: int) -> range:
        """``n`` new revisions of the adventure's memories, in order."""
        bump = (
            update(Adventure)
            .where(Adventure.id == adventure_id)
            # The adventure's own updated_at stays: a memory is not an edit of the story.
            .values(memory_revision=Adventure.memory_revision + n, updated_at=Adventure.updated_at)
            .returning(Adventure.memory_revision)
            .execution_options(synchronize_session=False)
        )
        top = self.session.scalar(bump)
        if top is None:
            raise NotFound(f"Adventure {adventure_id} does not exist (it was deleted).")
        return range(int(top) - n + 1, int(top) + 1)

    def clear_vectors(self, memory_ids: Sequence[int]) -> None:
        """Forget these memories' vectors (the loaded rows are refreshed to match)."""
        self.session.execute(
            update(Memory)
            .where(Memory.id.in_(memory_ids))
            .values(vector=None, vector_model=None)
            .execution_options(synchronize_session="fetch")
        )

    def set_revisions(self, revisions: dict[int, int]) -> None:
        """Give each memory (by id) its revision, in one bulk update by key (loaded rows are
        left as they were read: the caller expires them)."""
        self.session.execute(
            update(Memory), [{"id": i, "revision": r} for i, r in revisions.items()]
        )

    def bank_state(self, adventure_id: int) -> tuple[int, int]:
        """(highest revision, number of rows) of an adventure's memories: one index read."""
        query = select(func.max(Memory.revision), func.count()).where(
            Memory.adventure_id == adventure_id
        )
        top, count = self.session.execute(query).one()
        return int(top or 0), int(count or 0)

    def adventure_created(self, adventure_id: int) -> str:
        """When the adventure was created, as text ("" when there is none): what tells it
        from another adventure later given the same id."""
        created = self.session.scalar(
            select(Adventure.created_at).where(Adventure.id == adventure_id)
        )
        return created.isoformat() if created is not None else ""

    def bank_rows(
        self, adventure_id: int, *, after_revision: int = 0, ids: Sequence[int] = ()
    ) -> list[BankRow]:
        query = select(
            Memory.id,
            Memory.branch_id,
            Memory.depth,
            Memory.status,
            Memory.pinned,
            Memory.authority,
            Memory.vector,
            Memory.vector_model,
            Memory.terms,
            Memory.revision,
        ).where(Memory.adventure_id == adventure_id)
        if ids:
            query = query.where(Memory.id.in_(ids))
        else:
            query = query.where(Memory.revision > after_revision)
        # In revision order on every database (the bank keeps the order it read them in;
        # without an order PostgreSQL returns rows as they lie in the table, where an update
        # moves a row to the end). Through the connection: plain rows, without the ORM.
        query = query.order_by(Memory.revision, Memory.id)
        return [BankRow._make(row) for row in self.session.connection().execute(query).all()]

    def texts(self, ids: Sequence[int]) -> dict[int, Memory]:
        if not ids:
            return {}
        rows = self.session.scalars(select(Memory).where(Memory.id.in_(ids))).all()
        return {row.id: row for row in rows}

    def record_use(self, ids: Sequence[int], reply_id: int, when: datetime) -> None:
        if not ids:
            return
        # Core statements on the session's connection: this runs in every turn's commit.
        connection = self.session.connection()
        connection.execute(
            update(Memory)
            .where(Memory.id.in_(ids))
            .values(use_count=Memory.use_count + 1, last_used_at=when)
        )
        connection.execute(
            insert(MemoryUse), [{"memory_id": i, "action_id": reply_id} for i in ids]
        )

    def uses(self, memory_ids: Sequence[int]) -> dict[int, list[int]]:
        """The replies that used each memory, oldest first."""
        if not memory_ids:
            return {}
        query = (
            select(MemoryUse.memory_id, MemoryUse.action_id)
            .where(MemoryUse.memory_id.in_(memory_ids))
            .order_by(MemoryUse.action_id)
        )
        out: dict[int, list[int]] = {}
        for memory_id, action_id in self.session.execute(query).all():
            out.setdefault(memory_id, []).append(action_id)
        return out

    def use_actions(self, memory_id: int) -> list[Action]:
        """The replies that used a memory, whatever their state now, in story order."""
        query = (
            select(Action)
            .join(MemoryUse, MemoryUse.action_id == Action.id)
            .where(MemoryUse.memory_id == memory_id)
            .order_by(Action.depth, Action.id)
        )
        return list(self.session.scalars(query).all())

    def unembedded(self, adventure_id: int, limit: int) -> list[Memory]:
        query = select(Memory).where(
            Memory.adventure_id == adventure_id,
            Memory.status.in_(LISTED),
            Memory.vector.is_(None),
        )
        return list(self.session.scalars(query.order_by(Memory.id).limit(limit)).all())

    def other_model_vectors(self, adventure_id: int, model: str) -> list[Memory]:
        query = select(Memory).where(
            Memory.adventure_id == adventure_id,
            Memory.vector.is_not(None),
            or_(Memory.vector_model.is_(None), Memory.vector_model != model),
        )
        return list(self.session.scalars(query).all())

    def stale_memories(self, adventure_id: int, limit: int) -> list[Memory]:
        query = select(Memory).where(
            Memory.adventure_id == adventure_id,
            Memory.stale.is_(True),
            Memory.status.in_(LISTED),
        )
        return list(self.session.scalars(query.order_by(Memory.id).limit(limit)).all())

    # -- summary versions -------------------------------------------------------------

    def summary_in_force(
        self, adventure_id: int, lineage: Lineage, *, before: int | None = None
    ) -> SummaryVersion | None:
        """The newest version on the path (``before``: of those older than that version)."""
        # Newest first along the adventure's index, each version tested against the path:
        # the first match ends the read, with no sort of the versions.
        query = (
            select(SummaryVersion)
            .outerjoin(Action, Action.id == SummaryVersion.action_id)
            .where(
                SummaryVersion.adventure_id == adventure_id,
                is_on_path(SummaryVersion.branch_id, SummaryVersion.depth, lineage),
                or_(SummaryVersion.action_id.is_(None), Action.state == ActionState.ACTIVE),
            )
            .order_by(SummaryVersion.id.desc())
            .limit(1)
        )
        if before is not None:
            query = query.where(SummaryVersion.id < before)
        return self.session.scalar(query)

    def secrets(self, adventure_id: int) -> dict[int, list[str]]:
        """The adventure's memories marked as secrets, by id: the names of who knows each."""
        query = select(Memory.id, Memory.known_by).where(
            Memory.adventure_id == adventure_id, Memory.known_by.is_not(None)
        )
        return {id_: json.loads(known or "[]") for id_, known in self.session.execute(query)}

    def summary_versions(self, adventure_id: int) -> list[SummaryVersion]:
        query = select(SummaryVersion).where(SummaryVersion.adventure_id == adventure_id)
        return list(self.session.scalars(query.order_by(SummaryVersion.id)).all())

    def summary_version(self, version_id: int) -> SummaryVersion | None:
        return self.session.get(SummaryVersion, version_id)

    def interval_versions_covering(self, adventure_id: int, depth: int) -> list[SummaryVersion]:
        """The automatic (interval) summary versions that cover ``depth``, on any branch (the
        caller tests each one's path)."""
        query = select(SummaryVersion).where(
            SummaryVersion.adventure_id == adventure_id,
            SummaryVersion.trigger == SummaryTrigger.INTERVAL,
            SummaryVersion.covers_to >= depth,
        )
        return list(self.session.scalars(query).all())

    def mark_versions_stale(self, version_ids: Sequence[int]) -> None:
        """Mark these summary versions stale, in one UPDATE (none: nothing)."""
        if version_ids:
            self.session.execute(
                update(SummaryVersion).where(SummaryVersion.id.in_(version_ids)).values(stale=True)
            )
