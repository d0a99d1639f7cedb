"""Adventures, branches, actions, story cards and Insights snapshots. Never commits.

Invariants:

- Reads of the path go lineage entry by lineage entry (a handful of branches),
  each an index range over (branch_id, state, depth): the cost of reading the
  head or the newest N actions does not grow with the length of the story.
- ``path_clause`` is the one SQL clause for "on this path" when a query needs
  every row of it (export, counts).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, and_, delete, func, or_, select, update
from sqlalchemy.orm import Session

from talekeeper.core.lineage import BranchLink, Lineage
from talekeeper.storage.models import Action, Adventure, Branch, InsightSnapshot, StoryCard

ACTIVE = "active"
TAKE = "take"
UNDONE = "undone"
REMOVED = "removed"


class ActionText(NamedTuple):
    """The columns of an action a context needs."""

    id: int
    type: str
    text: str
    depth: int


def path_clause(lineage: Lineage) -> ColumnElement[bool]:
    """``Action`` rows on the path ``lineage`` describes (active rows only)."""
    entries = [
        Action.branch_id == b if m is None else and_(Action.branch_id == b, Action.depth <= m)
        for b, m in lineage
    ]
    return and_(Action.state == ACTIVE, or_(*entries))


class StoryRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    # -- adventures and branches ------------------------------------------------------

    def adventure(self, adventure_id: int, user_id: int) -> Adventure | None:
        row = self.session.get(Adventure, adventure_id)
        return row if row is not None and row.user_id == user_id else None

    def adventures(self, user_id: int) -> Sequence[Adventure]:
        query = select(Adventure).where(Adventure.user_id == user_id)
        return self.session.scalars(query.order_by(Adventure.updated_at.desc())).all()

    def branches(self, adventure_id: int) -> Sequence[Branch]:
        query = select(Branch).where(Branch.adventure_id == adventure_id).order_by(Branch.id)
        return self.session.scalars(query).all()

    def links(self, adventure_id: int) -> dict[int, BranchLink]:
        """The adventure's branches as lineage needs them: id, parent, fork depth."""
        query = select(Branch.id, Branch.parent_id, Branch.fork_depth).where(
            Branch.adventure_id == adventure_id
        )
        return {b: BranchLink(b, p, f) for b, p, f in self.session.execute(query).all()}

    def add(self, row: object) -> None:
        self.session.add(row)
        self.session.flush()

    def delete_adventure(self, adventure: Adventure) -> None:
        self.session.delete(adventure)
        self.session.flush()

    # -- actions on a path ------------------------------------------------------------

    def action(self, action_id: int) -> Action | None:
        return self.session.get(Action, action_id)

    def head(self, lineage: Lineage) -> Action | None:
        newest = self.newest(lineage, 1)
        return newest[0] if newest else None

    def newest(
        self, lineage: Lineage, limit: int, *, below_depth: int | None = None
    ) -> list[Action]:
        """Up to ``limit`` active rows of the path, newest first (above ``below_depth`` only
        if given)."""
        out: list[Action] = []
        for query in self._newest_first(lineage, below_depth, select(Action)):
            if len(out) >= limit:
                break
            out.extend(self.session.scalars(query.limit(limit - len(out))).all())
        return out

    def newest_texts(
        self, lineage: Lineage, limit: int, *, below_depth: int | None = None
    ) -> list[ActionText]:
        """Like ``newest`` but only (id, type, text, depth): the context needs no more, and
        building full objects for a page of history costs more than reading it."""
        columns = select(Action.id, Action.type, Action.text, Action.depth)
        out: list[ActionText] = []
        for query in self._newest_first(lineage, below_depth, columns):
            if len(out) >= limit:
                break
            rows = self.session.execute(query.limit(limit - len(out))).all()
            out.extend(ActionText(*row) for row in rows)
        return out

    def _newest_first(self, lineage: Lineage, below_depth: int | None, base: Any) -> Iterator[Any]:
        """Per lineage entry, deepest first: its active rows (above ``below_depth``), newest
        first. A generator, so the caller stops reading entries once it has enough."""
        for branch_id, max_depth in lineage:
            bound = max_depth
            if below_depth is not None:
                bound = below_depth - 1 if bound is None else min(bound, below_depth - 1)
            query = base.where(Action.branch_id == branch_id, Action.state == ACTIVE)
            if bound is not None:
                query = query.where(Action.depth <= bound)
            yield query.order_by(Action.depth.desc())

    def path(self, lineage: Lineage) -> list[Action]:
        """Every active row of the path, oldest first (export and tests; never a turn)."""
        query = select(Action).where(path_clause(lineage)).order_by(Action.depth)
        return list(self.session.scalars(query).all())

    def path_length(self, lineage: Lineage) -> int:
        count = self.session.scalar(select(func.count()).where(path_clause(lineage)))
        return int(count or 0)

    # -- slots, takes and the redo stack ------------------------------------------------

    def slot(self, branch_id: int, depth: int) -> list[Action]:
        """The takes of a slot: its active (or undone) row and its inactive takes, by take."""
        query = select(Action).where(
            Action.branch_id == branch_id,
            Action.depth == depth,
            Action.state.in_((ACTIVE, TAKE, UNDONE)),
        )
        return list(self.session.scalars(query.order_by(Action.take, Action.id)).all())

    def newest_live(self, branch_id: int) -> Action | None:
        """The deepest active or undone row of the branch's own rows."""
        query = select(Action).where(
            Action.branch_id == branch_id, Action.state.in_((ACTIVE, UNDONE))
        )
        return self.session.scalar(query.order_by(Action.depth.desc()).limit(1))

    def next_undone(self, branch_id: int) -> Action | None:
        query = select(Action).where(Action.branch_id == branch_id, Action.state == UNDONE)
        return self.session.scalar(query.order_by(Action.depth).limit(1))

    def discard_beyond(self, branch_id: int, depth: int) -> None:
        """Forget the redo stack (and its takes) past ``depth``: a new action replaced it."""
        self.session.execute(
            update(Action)
            .where(
                Action.branch_id == branch_id,
                Action.depth > depth,
                Action.state.in_((UNDONE, TAKE)),
            )
            .values(state=REMOVED)
        )

    def all_actions(self, adventure_id: int) -> Sequence[Action]:
        query = select(Action).where(Action.adventure_id == adventure_id).order_by(Action.id)
        return self.session.scalars(query).all()

    def own_action_counts(self, adventure_id: int) -> dict[int, int]:
        """Per branch: how many active rows are its own (not inherited)."""
        query = (
            select(Action.branch_id, func.count())
            .where(Action.adventure_id == adventure_id, Action.state == ACTIVE)
            .group_by(Action.branch_id)
        )
        return {b: int(n) for b, n in self.session.execute(query).all()}

    # -- story cards ------------------------------------------------------------------

    def cards(self, adventure_id: int) -> Sequence[StoryCard]:
        query = select(StoryCard).where(StoryCard.adventure_id == adventure_id)
        return self.session.scalars(query.order_by(StoryCard.id)).all()

    def card(self, card_id: int) -> StoryCard | None:
        return self.session.get(StoryCard, card_id)

    def delete_card(self, card: StoryCard) -> None:
        self.session.execute(delete(StoryCard).where(StoryCard.id == card.id))

    # -- insights -----------------------------------------------------------------------

    def insights(self, action_id: int) -> InsightSnapshot | None:
        return self.session.get(InsightSnapshot, action_id)

    def insights_for(self, action_ids: Sequence[int]) -> Sequence[InsightSnapshot]:
        query = select(InsightSnapshot).where(InsightSnapshot.action_id.in_(action_ids))
        return self.session.scalars(query).all()
