"""Property: after every random story operation (turns whose text states changes, retries,
take switches, undo, redo, edits, deletes, forks, branch switches, the player's own events
and removals), the world's state at the head equals the fold of the path's events, the
path worked out here from the tree itself rather than by the repository's query; and
those present at each action of the path (its witnesses, ``witnessed``) are the people
the fold of the events down to that action shows present; and what each person was told
(their ``learned`` events, which make memories known to them) is the path's own.

Real parts: a migrated database (SQLite, or PostgreSQL with ``--db=postgresql``), ``Story``
as production uses it, the rules reading each written action (``services.world.derive``).
``WORLD_PROPERTY_EXAMPLES`` raises the number of random examples for a longer hunt (each
is up to ``MAX_OPS`` operations).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from tests.conftest import database_url
from tests.kit.tree_ops import TREE_OPS, tree_op

from talekeeper.core.errors import Conflict, InvalidInput
from talekeeper.core.lineage import on_lineage
from talekeeper.services.memory.base import NullMemory
from talekeeper.services.story import adventures
from talekeeper.services.story.tree import Story
from talekeeper.services.world import derive, events, marks, witnessed
from talekeeper.services.world.events import GivenEvent
from talekeeper.services.world.projection import Fact, Ref, WorldState, project
from talekeeper.services.world.witnesses import presence, told_to
from talekeeper.storage import migrate
from talekeeper.storage.db import make_engine, make_session_factory, session_scope
from talekeeper.storage.models import Action, WorldEntity, WorldEvent
from talekeeper.storage.repositories.users import UserRepository
from talekeeper.storage.vocabulary import ActionState, EntityKind, EventKind, EventOrigin

EXAMPLES = int(os.environ.get("WORLD_PROPERTY_EXAMPLES", "25"))
MAX_OPS = 40
ITEMS = ("the brass key", "a lantern", "the rope", "a silver coin")
PLACES = ("the Salt Market", "the tavern", "the Lighthouse")
PEOPLE = ("Maren", "Captain Rhys", "Tobin")
TEXTS = (
    *(f"pick up {i}" for i in ITEMS),
    *(f"You drop {i}." for i in ITEMS),
    *(f"You walk into {p}." for p in PLACES),
    *(f"walk into {p}" for p in PLACES),
    *(f"{who} arrives." for who in PEOPLE),
    *(f"{who} leaves." for who in PEOPLE),
    "Tobin dies.",
    "The next morning, the fog lifts.",
    "You give the rope to Maren.",
    "The gulls cry.",
    # A reply that refuses a do (the refusal is the reply's event), and a name told shorter.
    *(f"{i.capitalize()} is nailed down; it will not come free." for i in ITEMS),
    *(f"The door of {p} is locked, so you go no further." for p in PLACES),
    "You pick up the key.",
    # Goings and holdings the rules are unsure of (``unsure``), once the place or item is known.
    *(f"Your boots carry you toward {p}." for p in PLACES),
    *(f"Maren weighs {i} in her hand." for i in ITEMS),
    # Tellings: who learns what (``learned``), which makes a memory known (``knowing``).
    *(f"You tell {who} about {i}." for who in PEOPLE for i in ITEMS[:2]),
    "Maren learns of the wreck.",
)
OPS = ("do", "reply", "retry", "switch", "undo", "redo", "edit", "delete", "fork", "branch")
OPS += ("player", "remove")


RUN: list[int] = []  # the operations of each example run (a longer hunt reports the sum)


@pytest.fixture(scope="module", autouse=True)
def report() -> Iterator[None]:
    yield
    if "WORLD_PROPERTY_EXAMPLES" in os.environ:
        print(f"\nworld property: {len(RUN)} examples, {sum(RUN)} operations")


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sessionmaker[Session]]:
    path: Path = tmp_path_factory.mktemp("world") / "tk.db"
    engine = make_engine(database_url(path))
    migrate.upgrade(engine)
    yield make_session_factory(engine)
    engine.dispose()


def _ref(row: WorldEntity | None) -> Ref | None:
    return None if row is None else Ref(row.id, row.name, EntityKind(row.kind))


def path_steps(story: Story) -> list[tuple[int, Fact]]:
    """Every event of the adventure the tree's own rules keep on the path, as (depth, fact),
    oldest first: its action active, its node on the current lineage, not dismissed."""
    session, lineage = story.session, story.lineage()
    rows = session.scalars(
        select(WorldEvent).where(WorldEvent.adventure_id == story.adventure.id)
    ).all()
    kept = []
    for row in rows:
        action = session.get(Action, row.action_id)
        assert action is not None
        if row.dismissed or action.state != ActionState.ACTIVE:
            continue
        if on_lineage(lineage, row.branch_id, row.depth):
            kept.append(row)
    kept.sort(key=lambda r: (r.depth, r.id))

    def entity(entity_id: int | None) -> Ref | None:
        return _ref(session.get(WorldEntity, entity_id)) if entity_id is not None else None

    return [
        (
            r.depth,
            Fact(
                r.id,
                r.action_id,
                EventKind(r.kind),
                entity(r.subject_id),
                entity(r.object_id),
                entity(r.target_id),
                r.value,
                EventOrigin(r.origin),
                r.evidence,
            ),
        )
        for r in kept
    ]


def fold_of_the_path(steps: list[tuple[int, Fact]], depth: int | None = None) -> WorldState:
    """The state from the path's events (down to ``depth``; None: all of them)."""
    return project((f for d, f in steps if depth is None or d <= depth), None)


def check_witnesses(story: Story, steps: list[tuple[int, Fact]]) -> None:
    """Those present at each action of the path (``witnessed``, one fold) are the people the
    state at that action shows present."""
    seen = witnessed.path_presence(story)
    for action in story.repo.path(story.lineage()):
        expected = fold_of_the_path(steps, action.depth).present
        assert seen.at(action.depth) == expected, action.depth


def check_told(story: Story, steps: list[tuple[int, Fact]]) -> None:
    """What each person was told along the path, read from the events a turn reads
    (``events.for_turn``, ``witnesses.told_to``), is the path's ``learned`` events of
    theirs, in order; and those events give the same presence."""
    read = events.for_turn(story, -1, None).steps
    people = {f.subject.id for _, f in steps if f.subject and f.subject.kind == "person"}
    for who in people:
        expected = [
            (d, f.value or "")
            for d, f in steps
            if f.kind is EventKind.LEARNED and f.subject is not None and f.subject.id == who
        ]
        assert list(told_to(read, who)) == expected, who
    assert presence(read) == witnessed.path_presence(story)


def apply(story: Story, op: str, pick: int) -> None:
    text = TEXTS[pick % len(TEXTS)]
    if op in ("do", "reply", *TREE_OPS):
        written = tree_op(story, op, pick, text)
        if written is not None:
            (derive.rederive if op == "edit" else derive.record)(story, written)
    elif op == "player":
        kind = (EventKind.TOOK, EventKind.DROPPED, EventKind.MOVED, EventKind.ARRIVED)[pick % 4]
        thing = PLACES[pick % 3] if kind is EventKind.MOVED else ITEMS[pick % 4]
        given = GivenEvent(kind, subject=PEOPLE[pick % 3] if kind is EventKind.ARRIVED else None)
        if kind is not EventKind.ARRIVED:
            given = GivenEvent(kind, object=thing)
        events.add_player_event(story, given)
    elif op == "remove":
        listed = events.path_events(story)
        if listed:
            marks.remove_event(
                story.session, story.adventure.user_id, listed[pick % len(listed)].id
            )


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 60)), max_size=MAX_OPS))
def test_the_state_is_the_fold_of_the_paths_events_after_every_operation(
    sessions: sessionmaker[Session], ops: list[tuple[str, int]]
) -> None:
    with session_scope(sessions) as session:
        uid = UserRepository(session).local_user().id
        opening = {"title": "W", "opening": "You reach the Salt Market at dusk."}
        story = adventures.create(session, uid, opening, NullMemory())
        RUN.append(len(ops))
        for op, pick in ops:
            try:
                with session.begin_nested():
                    apply(story, op, pick)
            except (Conflict, InvalidInput):
                pass  # refused by the tree (another branch's past, nothing to redo): no change
            session.expire_all()
            story = Story.load(session, story.adventure.id, uid, NullMemory())
            steps = path_steps(story)
            assert events.state_through(story, None) == fold_of_the_path(steps), (op, pick)
            check_witnesses(story, steps)
            check_told(story, steps)
