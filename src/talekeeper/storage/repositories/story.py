"""Adventures, branches, actions, story cards, Insights snapshots and what a reply leaves for
the next turn (``ContextPlacement``). Never commits.

Invariants:

- ``on_path`` is the one SQL clause for "on this path", for actions, memories
  and summary versions alike. It joins the statement to the lineage as a table
  of (branch, deepest depth) rows, so its expression does not grow with the
  number of lineage entries (a deeply nested fork has one entry per level) and
  each entry is an index range over (branch_id, ..., depth).
- Reads of the newest part of the path (``newest``) take the branch's own rows
  as one index range over (branch_id, state, depth), then the inherited entries
  in depth windows, each window one statement over only the entries it crosses:
  the cost of reading the head or the newest N actions grows neither with the
  length of the story nor with the number of lineage entries.
- ``branch_tips`` reads what the tree needs of every branch in one statement
  (per branch: its own newest active row and the newest active row of its parent
  below its fork), so the tree costs a constant number of queries.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any, NamedTuple, TypeVar

from sqlalchemy import (
    ColumnElement,
    Integer,
    and_,
    bindparam,
    column,
    delete,
    exists,
    false,
    func,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.orm import Session, aliased

from talekeeper.core.lineage import BranchLink, Lineage
from talekeeper.storage.models import (
    ID,
    Action,
    Adventure,
    Branch,
    ContextPlacement,
    InsightSnapshot,
    StoryCard,
)
from talekeeper.storage.vocabulary import ActionState

Row = TypeVar("Row", Action, "ActionText")


class ActionText(NamedTuple):
    """The columns of an action a context needs (``author``: the persona a player's action
    was written as, when it records one)."""

    id: int
    type: str
    text: str
    depth: int
    author: str | None = None


OPEN = 2**31 - 1  # the bound of a lineage entry that has none: deeper than any depth
_INT = Integer()


class CardKeyRow(NamedTuple):
    """What deciding whether a story card fires reads of it (its entry is not read):
    keywords and secondary keywords as the row holds them (JSON lists)."""

    id: int
    keywords: str
    secondary_keywords: str
    secondary_rule: str
    always_on: bool


class BranchTip(NamedTuple):
    """What the tree needs of one branch: its own newest active row (``own_*``) and the
    newest active row of its parent's part of its path (``base_*``), each ``None`` if none."""

    branch_id: int
    own_count: int
    own_id: int | None
    own_depth: int | None
    base_id: int | None
    base_depth: int | None

    @property
    def own(self) -> tuple[int, int] | None:
        if self.own_id is None or self.own_depth is None:
            return None
        return (self.own_id, self.own_depth)

    @property
    def base(self) -> tuple[int, int] | None:
        if self.base_id is None or self.base_depth is None:
            return None
        return (self.base_id, self.base_depth)


def on_path(branch: Any, depth: Any, lineage: Lineage) -> ColumnElement[bool]:
    """Rows whose node (``branch``, ``depth``) lies on the path ``lineage`` describes.

    AND it into a statement's WHERE. A one-entry lineage (a story without forks) is a
    plain clause, an index range read in depth order. A longer one is a join condition
    against the lineage as a table (``WITH lineage AS (VALUES ...)``), one index range
    per entry, where each row matches at most one entry (a lineage names each branch
    once); its text depends only on the number of entries, so it is compiled once per
    length and cached, and its expression stays flat however deep the nesting.
    For NOT, or to test rows read in another index's order, use ``is_on_path``.
    """
    if len(lineage) == 1:
        branch_id, max_depth = lineage[0]
        if max_depth is None:
            return and_(branch == branch_id)
        return and_(branch == branch_id, depth <= max_depth)
    if not lineage:
        return false()
    table = _lineage_table(lineage)
    return and_(branch == table.c.column1, depth <= table.c.column2)


def is_on_path(branch: Any, depth: Any, lineage: Lineage) -> ColumnElement[bool]:
    """``on_path`` as a test of each row (an EXISTS over the lineage's rows)."""
    if len(lineage) <= 1:
        return on_path(branch, depth, lineage)
    return exists().where(on_path(branch, depth, lineage))


def _entry_ranges(lineage: Lineage) -> list[tuple[tuple[int, int | None], int, int]]:
    """Each entry with the depths it can hold, (floor, upper]: a branch's own rows lie
    above the next entry's bound (its fork depth - 1), and up to its own bound."""
    out = []
    for index, entry in enumerate(lineage):
        floor = lineage[index + 1][1] if index + 1 < len(lineage) else None
        upper = entry[1]
        out.append((entry, -1 if floor is None else floor, OPEN if upper is None else upper))
    return out


def _lineage_table(lineage: Lineage) -> Any:
    rows = ", ".join(f"(:lineage_b{i}, :lineage_m{i})" for i in range(len(lineage)))
    params = [bindparam(f"lineage_b{i}", b, type_=ID) for i, (b, _) in enumerate(lineage)]
    params += [
        bindparam(f"lineage_m{i}", OPEN if m is None else m, type_=_INT)
        for i, (_, m) in enumerate(lineage)
    ]
    # VALUES names its columns column1, column2 in SQLite and PostgreSQL alike.
    return (
        text(f"VALUES {rows}")
        .bindparams(*params)
        .columns(column("column1", ID), column("column2", _INT))
        .cte("lineage")
    )


class StoryRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    # -- adventures and branches ------------------------------------------------------

    def adventure(self, adventure_id: int, user_id: int | None) -> Adventure | None:
        """The adventure, when ``user_id`` owns it (``None``: whoever does)."""
        row = self.session.get(Adventure, adventure_id)
        return row if row is not None and user_id in (None, row.user_id) else None

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
        return self._newest(
            lineage, limit, below_depth, select(Action), lambda q: self.session.scalars(q).all()
        )

    def newest_texts(
        self, lineage: Lineage, limit: int, *, below_depth: int | None = None
    ) -> list[ActionText]:
        """Like ``newest`` but only (id, type, text, depth, author): the context needs no more, and
        building full objects for a page of history costs more than reading it."""
        columns = select(Action.id, Action.type, Action.text, Action.depth, Action.author_name)
        return self._newest(
            lineage,
            limit,
            below_depth,
            columns,
            lambda q: [ActionText(*row) for row in self.session.execute(q).all()],
        )

    def _newest(
        self,
        lineage: Lineage,
        limit: int,
        below_depth: int | None,
        base: Any,
        fetch: Callable[[Any], Sequence[Row]],
    ) -> list[Row]:
        """The first entry (the branch's own rows, where the head usually is) is one index
        range read newest first. The entries below it have known depth ranges, so the rest
        is read in depth windows (``window`` deep, doubling when deleted depths leave one
        short): each window one statement over only the entries it crosses, reading at most
        the rows it returns, however many entries the lineage has."""
        if not lineage or limit <= 0:
            return []
        top = OPEN if below_depth is None else below_depth - 1
        ranges = _entry_ranges(lineage)
        (branch_id, _), floor, upper = ranges[0]
        out: list[Row] = []
        if min(top, upper) > floor:
            query = base.where(Action.branch_id == branch_id, Action.state == ActionState.ACTIVE)
            query = query.where(Action.depth <= min(top, upper))
            out.extend(fetch(query.order_by(Action.depth.desc()).limit(limit)))
        top = min(top, floor)
        window = limit - len(out)
        while len(out) < limit and top >= 0:
            crossed = tuple(e for e, low, high in ranges[1:] if low < top and high > top - window)
            if crossed:
                query = base.where(
                    Action.state == ActionState.ACTIVE,
                    on_path(Action.branch_id, Action.depth, crossed),
                    Action.depth > top - window,
                    Action.depth <= top,
                )
                out.extend(fetch(query.order_by(Action.depth.desc()))[: limit - len(out)])
            top -= window
            window *= 2
        return out

    def path(self, lineage: Lineage) -> list[Action]:
        """Every active row of the path, oldest first (export and tests; never a turn)."""
        query = select(Action).where(
            Action.state == ActionState.ACTIVE, on_path(Action.branch_id, Action.depth, lineage)
        )
        return list(self.session.scalars(query.order_by(Action.depth)).all())

    def path_length(self, lineage: Lineage) -> int:
        query = select(func.count()).where(
            Action.state == ActionState.ACTIVE, on_path(Action.branch_id, Action.depth, lineage)
        )
        return int(self.session.scalar(query) or 0)

    # -- slots, takes and the redo stack ------------------------------------------------

    def slot(self, branch_id: int, depth: int) -> list[Action]:
        """The takes of a slot: its active (or undone) row and its inactive takes, by take."""
        query = select(Action).where(
            Action.branch_id == branch_id,
            Action.depth == depth,
            Action.state.in_((ActionState.ACTIVE, ActionState.TAKE, ActionState.UNDONE)),
        )
        return list(self.session.scalars(query.order_by(Action.take, Action.id)).all())

    def slot_is_active(self, branch_id: int, depth: int) -> bool:
        """Whether the slot has an active row (one id read, at most)."""
        query = select(Action.id).where(
            Action.branch_id == branch_id, Action.depth == depth, Action.state == ActionState.ACTIVE
        )
        return self.session.scalar(query.limit(1)) is not None

    def newest_live(self, branch_id: int) -> Action | None:
        """The deepest active or undone row of the branch's own rows."""
        query = select(Action).where(
            Action.branch_id == branch_id,
            Action.state.in_((ActionState.ACTIVE, ActionState.UNDONE)),
        )
        return self.session.scalar(query.order_by(Action.depth.desc()).limit(1))

    def next_undone(self, branch_id: int) -> Action | None:
        query = select(Action).where(
            Action.branch_id == branch_id, Action.state == ActionState.UNDONE
        )
        return self.session.scalar(query.order_by(Action.depth).limit(1))

    def discard_beyond(self, branch_id: int, depth: int) -> None:
        """Forget the redo stack (and its takes) past ``depth``: a new action replaced it."""
        self.session.execute(
            update(Action)
            .where(
                Action.branch_id == branch_id,
                Action.depth > depth,
                Action.state.in_((ActionState.UNDONE, ActionState.TAKE)),
            )
            .values(state=ActionState.REMOVED)
        )

    def all_actions(self, adventure_id: int) -> Sequence[Action]:
        query = select(Action).where(Action.adventure_id == adventure_id).order_by(Action.id)
        return self.session.scalars(query).all()

    def count_actions(self, adventure_id: int) -> int:
        """The adventure's action rows, every state (what ``MAX_ACTIONS`` caps)."""
        query = select(func.count()).where(Action.adventure_id == adventure_id)
        return int(self.session.scalar(query) or 0)

    def branch_tips(self, adventure_id: int) -> list[BranchTip]:
        """Per branch, in one statement: how many active rows are its own, its own newest
        active row, and its parent's newest active row below its fork depth (none when the
        lineage holds no part of the parent: a fork depth not above the parent's). Each is
        one index seek per branch."""
        child = aliased(Branch)
        parent = aliased(Branch)

        def newest(column_: Any, *where: Any) -> Any:
            found = select(column_).where(Action.state == ActionState.ACTIVE, *where)
            return found.order_by(Action.depth.desc()).limit(1).scalar_subquery()

        own = (Action.branch_id == child.id,)
        base = (
            Action.branch_id == child.parent_id,
            Action.depth < child.fork_depth,
            child.fork_depth > parent.fork_depth,
        )
        count = (
            select(func.count()).where(Action.state == ActionState.ACTIVE, *own).scalar_subquery()
        )
        query = (
            select(
                child.id,
                count,
                newest(Action.id, *own),
                newest(Action.depth, *own),
                newest(Action.id, *base),
                newest(Action.depth, *base),
            )
            .outerjoin(parent, parent.id == child.parent_id)
            .where(child.adventure_id == adventure_id)
        )
        return [BranchTip._make(row) for row in self.session.execute(query).all()]

    # -- story cards ------------------------------------------------------------------

    def cards(self, adventure_id: int) -> Sequence[StoryCard]:
        query = select(StoryCard).where(StoryCard.adventure_id == adventure_id)
        return self.session.scalars(query.order_by(StoryCard.id)).all()

    def count_cards(self, adventure_id: int) -> int:
        query = select(func.count()).select_from(StoryCard)
        return int(self.session.scalar(query.where(StoryCard.adventure_id == adventure_id)) or 0)

    def add_cards(self, cards: Sequence[StoryCard]) -> None:
        """Add the rows with one flush for all: each has its id afterwards."""
        self.session.add_all(cards)
        self.session.flush()

    def card_keys(self, adventure_id: int) -> list[CardKeyRow]:
        """The keys of every card of the adventure, in card order (oldest first)."""
        query = select(
            StoryCard.id,
            StoryCard.keywords,
            StoryCard.secondary_keywords,
            StoryCard.secondary_rule,
            StoryCard.always_on,
        ).where(StoryCard.adventure_id == adventure_id)
        rows = self.session.execute(query.order_by(StoryCard.id)).all()
        return [CardKeyRow._make(row) for row in rows]

    def fired_or_always_on(
        self, adventure_id: int, card_ids: Collection[int], *, always_on: bool
    ) -> Sequence[StoryCard]:
        """The adventure's cards among ``card_ids``, and (with ``always_on``) its always-on
        cards, in card order; no statement when neither is asked for."""
        wanted: list[ColumnElement[bool]] = [StoryCard.id.in_(card_ids)] if card_ids else []
        if always_on:
            wanted.append(StoryCard.always_on.is_(True))
        if not wanted:
            return []
        query = select(StoryCard).where(StoryCard.adventure_id == adventure_id, or_(*wanted))
        return self.session.scalars(query.order_by(StoryCard.id)).all()

    def cards_among(self, adventure_id: int, card_ids: Collection[int]) -> Sequence[StoryCard]:
        """The adventure's cards among ``card_ids`` (another adventure's are not), in no
        particular order."""
        query = select(StoryCard).where(
            StoryCard.adventure_id == adventure_id, StoryCard.id.in_(card_ids)
        )
        return self.session.scalars(query).all()

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

    # -- what a reply's prompt leaves for the next turn --------------------------------------

    def placement(self, action_id: int) -> ContextPlacement | None:
        return self.session.get(ContextPlacement, action_id)

    def add_placement(self, row: ContextPlacement) -> None:
        self.session.add(row)
