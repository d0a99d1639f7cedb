"""Property: after every random story operation (turns naming people and places, retries,
take switches, undo, redo, edits, deletes, forks, branch switches) and the lore clerk's
own (its background pass after each of them, accepting, dismissing), the card proposals
keep to their path (docs/world.md, "The lore clerk"):

- every proposal listed rests only on actions of the current path, worked out here from
  the tree itself, and each of its lines is a sentence of the action it names;
- each listed new card's entity is named in at least three actions of that path;
- no two proposals of a new card, in any state, are of one entity, and no open one is
  of a card's name; no card has two open updates;
- no card changes but by an accept, which adds exactly the one card, or adds lines after
  one card's entry (an update), its text kept as it was.

Real parts: a migrated database (SQLite, or PostgreSQL with ``--db=postgresql``), ``Story``
as production uses it. ``PROPOSAL_PROPERTY_EXAMPLES`` raises the number of examples.
"""

from __future__ import annotations

import json
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
from talekeeper.services.memory.evidence import sentences
from talekeeper.services.story import adventures
from talekeeper.services.story.tree import Story
from talekeeper.services.world import proposals
from talekeeper.services.world.clerk import LEAST_ACTIONS, same_entity
from talekeeper.services.world.names import key_of
from talekeeper.storage import migrate
from talekeeper.storage.db import make_engine, make_session_factory, session_scope
from talekeeper.storage.models import Action, CardProposal, StoryCard
from talekeeper.storage.repositories.users import UserRepository
from talekeeper.storage.vocabulary import ActionState

EXAMPLES = int(os.environ.get("PROPOSAL_PROPERTY_EXAMPLES", "20"))
MAX_OPS = 40
# Most name someone, so that names reach three actions within a few turns (and lose them
# again to undo, edits and deletes); one card of the opening's place, "Gullreach", exists.
TEXTS = (
    "Captain Rhys rows across the bay toward the pier.",
    "Rhys counts the coins in his purse twice.",
    "Old Maren mends a net beside Rhys on the quay.",
    "Maren hums a song about the drowned bell of Gullreach.",
    "The bells of Saltmarsh Abbey ring at dusk for Rhys.",
    "Smoke rises over Saltmarsh Abbey and the hill.",
    "Tobin sells smoked eels in the market square.",
    "The gulls cry over the grey water.",
    '"Rhys!" shouts Tobin across the market.',
    "Maren and Tobin argue about the price of rope.",
)
# Turns weigh most, so that proposals exist for the tree's operations to act on. The clerk's
# pass runs after every operation, as it does after every turn.
OPS = ("do", "do", "reply", "reply", "reply", "reply", "retry", "switch", "undo", "redo")
OPS += ("edit", "delete", "fork", "branch", "accept", "dismiss")
SEEN: list[int] = []  # proposals listed at each check (the report of a longer hunt)


@pytest.fixture(scope="module", autouse=True)
def report() -> Iterator[None]:
    yield
    if "PROPOSAL_PROPERTY_EXAMPLES" in os.environ:
        listed = sum(1 for n in SEEN if n)
        print(f"\nproposal property: {len(SEEN)} checks, {listed} with proposals listed")


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sessionmaker[Session]]:
    path: Path = tmp_path_factory.mktemp("proposals") / "tk.db"
    engine = make_engine(database_url(path))
    migrate.upgrade(engine)
    yield make_session_factory(engine)
    engine.dispose()


def path_texts(story: Story) -> dict[int, str]:
    """The current path's actions by id, found from every row of the adventure with the
    tree's own rules (active, on the lineage), not the repository's path query."""
    rows = story.session.scalars(
        select(Action).where(Action.adventure_id == story.adventure.id)
    ).all()
    lineage = story.lineage()
    return {
        r.id: r.text
        for r in rows
        if r.state == ActionState.ACTIVE and on_lineage(lineage, r.branch_id, r.depth)
    }


def cards(story: Story) -> list[tuple[int, str, str, str]]:
    rows = story.session.scalars(
        select(StoryCard).where(StoryCard.adventure_id == story.adventure.id)
    ).all()
    return sorted((r.id, r.name, r.keywords, r.entry) for r in rows)


def apply(story: Story, op: str, pick: int) -> None:
    if op in ("do", "reply", *TREE_OPS):
        tree_op(story, op, pick, TEXTS[pick % len(TEXTS)], kind="story")
    elif op in ("accept", "dismiss"):
        listed = proposals.listed(story)
        if listed:
            chosen = listed[pick % len(listed)].id
            if op == "accept":
                adventures.accept_proposal(story, chosen, {})
            else:
                proposals.dismiss(story, chosen)


def check(story: Story) -> None:
    on_path = path_texts(story)
    SEEN.append(len(proposals.listed(story)))
    for proposal in proposals.listed(story):
        for line in proposal.evidence:
            assert line.action_id in on_path, (proposal.name, line)
            assert line.text in sentences(on_path[line.action_id]), line
        if proposal.kind != "new":
            continue  # an update's lines are about its card: one line each, two or more
        keys = {key_of(k) for k in proposal.keys}
        naming = [t for t in on_path.values() if any(f" {k} " in f" {key_of(t)} " for k in keys)]
        assert len(naming) >= LEAST_ACTIONS, proposal.name
    rows = story.session.scalars(
        select(CardProposal).where(CardProposal.adventure_id == story.adventure.id)
    ).all()
    news = [r for r in rows if r.kind == "new"]
    names = [[r.name, *json.loads(r.keys)] for r in news]
    for i, a in enumerate(names):
        assert not any(same_entity(a, b) for b in names[i + 1 :]), a
    card_names = [[name, *json.loads(keywords)] for _, name, keywords, _ in cards(story)]
    open_rows = [n for r, n in zip(news, names, strict=True) if r.state == "open"]
    for a in open_rows:
        assert not any(same_entity(a, c) for c in card_names), a
    open_updates = [r.card_id for r in rows if r.kind == "update" and r.state == "open"]
    assert len(open_updates) == len(set(open_updates))  # one open update a card


def accepted_one(
    before: list[tuple[int, str, str, str]], after: list[tuple[int, str, str, str]]
) -> None:
    """One new card, or one card's entry with lines after it (its text kept as it was)."""
    if len(after) == len(before) + 1:
        assert after[: len(before)] == before
        return
    changed = [(b, a) for b, a in zip(before, after, strict=True) if b != a]
    assert len(changed) == 1, changed
    (old, new) = changed[0]
    assert old[:3] == new[:3] and new[3].startswith(old[3]) and len(new[3]) > len(old[3])


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    ops=st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 60)), min_size=12, max_size=MAX_OPS)
)
def test_proposals_keep_to_their_path_after_every_operation(
    sessions: sessionmaker[Session], ops: list[tuple[str, int]]
) -> None:
    with session_scope(sessions) as session:
        uid = UserRepository(session).local_user().id
        opening = {"title": "P", "opening": "Fog lies on the harbour of Gullreach."}
        story = adventures.create(session, uid, opening, NullMemory())
        adventures.add_card(session, story.adventure, {"name": "Gullreach", "type": "location"})
        for op, pick in ops:
            before = cards(story)
            try:
                with session.begin_nested():
                    apply(story, op, pick)
                    proposals.record(story, proposals.matched(story))
            except (Conflict, InvalidInput):
                pass  # refused by the tree (another branch's past, nothing to redo): no change
            session.expire_all()
            story = Story.load(session, story.adventure.id, uid, NullMemory())
            after = cards(story)
            if op == "accept" and after != before:
                accepted_one(before, after)
            else:
                assert after == before, op
            check(story)
