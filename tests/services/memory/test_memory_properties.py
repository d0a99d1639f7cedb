"""Properties of the memory system under random story changes (docs/memory.md §2, §3, §5, §6).

A hypothesis state machine plays an adventure through ``Story`` exactly as production
does (each change in its own ``session_scope``, the ``MemorySystem`` as the memory
service, so ``story_changed`` runs in the change's transaction) and runs the background
passes synchronously after each turn, against the loopback double for embeddings and the
extractive writer for memories and summaries. A small reference model of the tree (as in
``test_tree_properties``) predicts which changes are refused, and a record of what every
memory was written from checks that derived work stays true:

1. a covering automatic memory is attached to an active node of its own branch, its
   source block (read along that branch) ends on that node, and unless it is marked
   stale it was written from exactly the actions still there, with their current text;
2. retrieval on the current branch sees exactly the active, embedded memories of its
   lineage (never a sibling branch's, never a forgotten or withdrawn one);
3. the Story Summary in force is anchored on an active node of the current path and
   covers no further than its head;
4. the path's memories never overlap, and once the runs settle every action of a path of
   ``FIRST_AT`` actions or more is covered except a tail shorter than a block plus slack
   (or longer while no block can end in it: where a block could end, the node also lies
   on another branch's path whose memory covers it, and the block waits for a node of
   this path alone).

Plain example tests pin the exact cadence and the undo / fork / edit rules, and the
Story Summary's re-derivation after edits, a fork's memory that would have doubled its
parent's coverage, and a gap no memory could end in without being on a fork's path too,
which joins the memory after it (five bugs the machine led to, now fixed). A memory's
range changes only in a run, and only back: a gap joining it.

``MEMORY_PROPERTY_EXAMPLES`` raises the number of random examples for a longer local hunt.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)
from sqlalchemy import select
from sqlalchemy.orm import Session
from tests.background import take_job
from tests.conftest import make_settings

from talekeeper.bootstrap import Runtime
from talekeeper.core.errors import Conflict
from talekeeper.core.lineage import lineage_of, on_lineage
from talekeeper.services.background.port import Subject
from talekeeper.services.common.rendering import NARRATION, is_player, render
from talekeeper.services.memory import extractive, manage
from talekeeper.services.memory.base import MatchedKey, RetrievalQuery
from talekeeper.services.memory.evidence import passages
from talekeeper.services.memory.passes.blocks import NewBlocks
from talekeeper.services.memory.passes.refresh import RefreshStale
from talekeeper.services.memory.passes.runner import Runner
from talekeeper.services.memory.passes.seam import run_pass
from talekeeper.services.memory.passes.work import Work
from talekeeper.services.memory.service import MemorySystem
from talekeeper.services.memory.source import material, source_rows
from talekeeper.services.memory.summary import SUMMARY_EVERY
from talekeeper.services.memory.writer import (
    BLOCK_ACTIONS,
    FIRST_AT,
    SETTLE_SLACK,
    block_text,
    plan_blocks,
    upto,
)
from talekeeper.services.story import adventures
from talekeeper.services.story.tree import Story
from talekeeper.storage.db import session_scope
from talekeeper.storage.models import Action, Adventure, Memory
from talekeeper.storage.repositories.memory import COVERING, LISTED, MemoryRepository
from talekeeper.storage.repositories.memory_keys import KeyRepository
from talekeeper.storage.vocabulary import ActionState, MemoryOrigin, MemoryStatus
from talekeeper_testkit.double import ModelDouble, summarize

PROTAGONIST = "Mara"
CAPACITY = 4  # small, so eviction runs and forgotten memories exist
EMBED_MODEL = "double-embed"
TAIL_MAX = BLOCK_ACTIONS + SETTLE_SLACK - 1  # the most uncovered actions a settled path ends on
SETTLE_RUNS = 12  # more than enough runs for any state the machine can reach to settle

VERBS = ("find", "lose", "promise", "open", "hide", "mend", "sell", "steal")
THINGS = ("brass key", "red lantern", "old map", "silver ring", "sealed letter", "rope")
PLACES = ("the lighthouse", "the quay", "Gull Rock", "the chapel", "the smithy", "the inn")
WHO = ("Captain Ilse", "Brother Tam", "Old Wen", "the harbourmaster")


def action_text(n: int, kind: str) -> str:
    """A distinct, plausible action or narration: names, items, numbers, a promise."""
    verb, thing = VERBS[n % len(VERBS)], THINGS[(n // 2) % len(THINGS)]
    place, who = PLACES[(n // 3) % len(PLACES)], WHO[n % len(WHO)]
    if kind == NARRATION:
        return (
            f"{who} watches you {verb} the {thing} at {place}. "
            f"The tide turns {n} times before anyone speaks. It is cold."
        )
    return f"{verb} the {thing} at {place} and tell {who} about bell {n}"


# -- the harness ----------------------------------------------------------------------------


@dataclass
class Env:
    runtime: Runtime
    loop: asyncio.AbstractEventLoop
    user_id: int

    @property
    def system(self) -> MemorySystem:
        assert isinstance(self.runtime.memory, MemorySystem)
        return self.runtime.memory

    @property
    def runner(self) -> Runner:
        """The runner the worker runs, over the same bank cache."""
        return Runner(self.runtime.sessions, self.runtime.models_for_user, self.system.cache)

    def run(self, adventure_id: int) -> None:
        """One background run, as the worker would do it for a pending job."""
        self.loop.run_until_complete(self.runner.run(adventure_id))
        with session_scope(self.runtime.sessions) as session:
            take_job(session, adventure_id)


def build_env(tmp_path: Path, **env: str) -> Iterator[Env]:
    values = {"summary_model": "extractive", "bank_capacity": str(CAPACITY)} | env
    runtime = Runtime.build(make_settings(tmp_path, **values))
    loop = asyncio.new_event_loop()
    try:
        yield Env(runtime, loop, runtime.local_user_id())
    finally:
        loop.run_until_complete(runtime.aclose())
        loop.close()


@pytest.fixture
def embedded_env(tmp_path: Path, double: ModelDouble) -> Iterator[Env]:
    yield from build_env(
        tmp_path, endpoint_url=double.url, model="double-narrator", embedding_model=EMBED_MODEL
    )


@pytest.fixture
def plain_env(tmp_path: Path) -> Iterator[Env]:
    """No model server at all: extractive memories, no embeddings."""
    yield from build_env(tmp_path, model="embedded", embedding_model="none")


def new_adventure(env: Env) -> tuple[int, int, int]:
    """(adventure id, root branch id, opening action id)."""
    with session_scope(env.runtime.sessions) as session:
        story = adventures.create(
            session,
            env.user_id,
            {
                "title": "Properties",
                "opening": "You wake on the quay at Gull Rock. The lighthouse is dark.",
                "persona": {"name": PROTAGONIST, "pronouns": "she/her"},
            },
            env.system,
        )
        head = story.head()
        assert head is not None
        return story.adventure.id, story.branch.id, head.id


class Tree:
    """The reference: each branch's path as action ids, and its redo stack (as in
    ``test_tree_properties``)."""

    def __init__(self, root: int, first: int) -> None:
        self.paths: dict[int, list[int]] = {root: [first]}
        self.redo: dict[int, list[int]] = {root: []}
        self.current = root

    @property
    def path(self) -> list[int]:
        return self.paths[self.current]

    def shared(self, action_id: int, owner: int | None = None) -> bool:
        """Whether a branch other than ``owner`` (the current one) has the action."""
        owner = self.current if owner is None else owner
        return any(action_id in p for b, p in self.paths.items() if b != owner)

    def owner(self, action_id: int) -> int:
        """A branch whose path holds the action and is not a fork inheriting it."""
        holders = [b for b, p in self.paths.items() if action_id in p]
        return min(holders)  # branches are created in order: the oldest holder owns it

    def live(self) -> list[int]:
        return sorted({a for p in self.paths.values() for a in p})


# -- the state machine ----------------------------------------------------------------------


class MemoryMachine(RuleBasedStateMachine):
    env: Env  # set by a subclass in the test: hypothesis builds the machine without arguments

    def __init__(self) -> None:
        super().__init__()
        self.adventure_id, root, first = new_adventure(self.env)
        self.tree = Tree(root, first)
        self.n = 0
        # memory id -> (its text, the (action id, text) rows it was written from, its start)
        self.written: dict[int, tuple[str, list[tuple[int, str]], int]] = {}
        self.was_stale: set[int] = set()
        self.withdrawn: set[int] = set()
        self.versions = 0

    # -- plumbing -------------------------------------------------------------------------

    def story(self, session: Session) -> Story:
        return Story.load(session, self.adventure_id, self.env.user_id, self.env.system)

    def change(self, allowed: bool, do: Any) -> Any:
        """Run one change in its own unit of work; a refused one must raise ``Conflict``."""
        sessions = self.env.runtime.sessions
        if allowed:
            with session_scope(sessions) as session:
                return do(self.story(session))
        with pytest.raises(Conflict), session_scope(sessions) as session:
            do(self.story(session))
        return None

    def text(self, kind: str) -> str:
        self.n += 1
        return action_text(self.n, kind)

    def settle(self, *, new_head: bool = True) -> None:
        """Run the background passes until the path is settled (a run stopped at
        ``MAX_PER_RUN`` leaves work for the next), checking memories as they are written;
        then the full coverage and cadence properties hold. ``new_head``: the newest action
        was just written (a turn or a retry), so no memory may cover it."""
        for _ in range(SETTLE_RUNS):
            self.env.run(self.adventure_id)
            with session_scope(self.env.runtime.sessions) as session:
                self.check_memories(session, self.story(session), after_run=True)
                settled = not self.unsettled(session, self.story(session))
            if settled:
                self.check_settled(new_head=new_head)
                return
        with session_scope(self.env.runtime.sessions) as session:
            problems = self.unsettled(session, self.story(session))
        pytest.fail(f"{SETTLE_RUNS} background runs left work undone: {problems}")

    # -- rules ----------------------------------------------------------------------------

    @initialize(actions=st.integers(6, 40))
    def opening(self, actions: int) -> None:
        """A story already under way (an import: saved first, summarized after, over as
        many runs as ``MAX_PER_RUN`` needs), so most sequences play around the cadence."""
        with session_scope(self.env.runtime.sessions) as session:
            story = self.story(session)
            for i in range(actions):
                kind = "do" if i % 2 == 0 else NARRATION
                self.tree.path.append(story.append(kind, self.text(kind)).id)
            story.memory.schedule(session, self.adventure_id, self.env.user_id)
        self.settle()

    @rule(turns=st.lists(st.booleans(), min_size=1, max_size=4))
    def turn(self, turns: list[bool]) -> None:
        """Turns in a row; ``True`` is a continue (a narration with no player action), which
        moves block ends onto narrations, the only actions a retry replaces."""
        for is_continue in turns:
            self.turn_once(is_continue)

    def turn_once(self, is_continue: bool = False) -> None:
        """The player's action (none for a continue), in its own unit of work; then the
        narration, saved with the schedule; then the post-turn background run."""
        sessions = self.env.runtime.sessions
        if not is_continue:
            with session_scope(sessions) as session:
                row = self.story(session).append("do", self.text("do"))
                self.tree.path.append(row.id)
        with session_scope(sessions) as session:
            row = self.story(session).append(NARRATION, self.text(NARRATION))
            self.env.system.schedule(session, self.adventure_id, self.env.user_id)
            self.tree.path.append(row.id)
        self.tree.redo[self.tree.current] = []
        self.settle()

    @rule()
    def retry(self) -> None:
        path = self.tree.path
        with session_scope(self.env.runtime.sessions) as session:
            head = self.story(session).head()
            if head is None or head.type != NARRATION:
                return
        allowed = head.id == path[-1] and not self.tree.shared(head.id)
        text = self.text(NARRATION)

        def do(story: Story) -> int:
            replaced = story.check_retry()
            assert replaced is not None
            row = story.add_take(replaced, text)
            story.memory.schedule(story.session, story.adventure.id, self.env.user_id)
            return row.id

        new = self.change(allowed, do)
        if new is not None:
            path[-1] = new
            self.tree.redo[self.tree.current] = []
            self.settle()

    @rule(pick=st.integers(0, 5))
    def switch_take(self, pick: int) -> None:
        with session_scope(self.env.runtime.sessions) as session:
            story = self.story(session)
            head = story.head()
            if head is None or head.type != NARRATION:
                return
            takes = [(t.id, t.take) for t in story.repo.slot(head.branch_id, head.depth)]
        chosen_id, chosen_take = takes[pick % len(takes)]
        allowed = head.branch_id == self.tree.current and not self.tree.shared(head.id)
        if self.change(allowed, lambda s: s.switch_take(chosen_take)) is not None:
            if chosen_id != self.tree.path[-1]:
                self.tree.redo[self.tree.current] = []
            self.tree.path[-1] = chosen_id

    @rule(times=st.integers(1, 8))
    def undo(self, times: int) -> None:
        """Undo, one change at a time: several in a row reach back past the uncovered
        tail to the node a memory is attached to."""
        for _ in range(times):
            path = self.tree.path
            if not path:
                return
            with session_scope(self.env.runtime.sessions) as session:
                head = self.story(session).head()
            assert head is not None and head.id == path[-1]
            allowed = head.branch_id == self.tree.current and not self.tree.shared(head.id)
            if self.change(allowed, lambda s: s.undo()) is None:
                return
            self.tree.redo[self.tree.current].append(path.pop())

    @rule(then=st.sampled_from(("stop", "retry", "retry and switch back")))
    def undo_to_a_memory(self, then: str) -> None:
        """Undo back to the node the path's newest memory is attached to, then maybe retry
        there: where undo must keep the memory and a retry must withdraw it."""
        with session_scope(self.env.runtime.sessions) as session:
            story = self.story(session)
            ends = MemoryRepository(session).coverage(self.adventure_id, story.lineage())
            path = story.repo.path(story.lineage())
            deeper = sum(1 for a in path if ends and a.depth > ends[-1][1])
        if not ends:
            return
        self.undo(deeper)
        if then != "stop":
            self.retry()
        if then == "retry and switch back":
            self.switch_take(0)

    @rule(times=st.integers(1, 8))
    def redo(self, times: int) -> None:
        for _ in range(times):
            stack = self.tree.redo[self.tree.current]
            if self.change(bool(stack), lambda s: s.redo()) is None:
                return
            self.tree.path.append(stack.pop())

    @rule(pick=st.integers(0, 200), anywhere=st.booleans())
    def edit(self, pick: int, anywhere: bool) -> None:
        """Rewrite an action of the path (or of any branch); the run it schedules is left
        to ``background`` so the stale state is seen in between."""
        pool = self.tree.live() if anywhere else self.tree.path
        if not pool:
            return
        target = pool[pick % len(pool)]
        text = f"Edited {self.n}: you swear to {PLACES[pick % len(PLACES)]} to keep bell {pick}."
        self.n += 1
        self.change(True, lambda s: s.edit(target, text))

    @rule(pick=st.integers(0, 200), anywhere=st.booleans())
    def delete(self, pick: int, anywhere: bool) -> None:
        pool = self.tree.live() if anywhere else self.tree.path
        if not pool:
            return
        self.delete_action(pool[pick % len(pool)])

    def delete_action(self, target: int) -> None:
        owner = self.tree.owner(target)
        allowed = not self.tree.shared(target, owner)
        if self.change(allowed, lambda s: s.delete(target)) is not None:
            path = self.tree.paths[owner]
            if target == path[-1]:
                self.tree.redo[owner] = []
            path.remove(target)

    @rule(pick=st.integers(0, 200))
    def fork(self, pick: int) -> None:
        path = self.tree.path
        if not path:
            return
        self.fork_at(pick % len(path))

    def fork_at(self, index: int) -> None:
        path = self.tree.path
        branch = self.change(True, lambda s: s.fork(path[index]).id)
        self.tree.paths[branch] = path[: index + 1]
        self.tree.redo[branch] = []
        self.tree.current = branch

    def ranges_and_path(self) -> tuple[list[tuple[int, int]], list[Action]]:
        """The current path's covered ranges and its actions."""
        with session_scope(self.env.runtime.sessions) as session:
            story = self.story(session)
            ranges = MemoryRepository(session).coverage(self.adventure_id, story.lineage())
            return ranges, story.repo.path(story.lineage())

    @rule(pick=st.integers(0, 50), turns=st.integers(1, 6))
    def gap_under_a_fork(self, pick: int, turns: int) -> None:
        """Fork from inside one of the path's memories, play on the fork until its own
        memory crosses the fork point, go back and delete the node the parent's memory ends
        on: the parent is left with a gap the fork's memory covers on the fork's path, so
        no memory of the parent may end in it (it joins the memory after it)."""
        ranges, path = self.ranges_and_path()
        inside = [i for i, a in enumerate(path) for s, e in ranges if s <= a.depth < e]
        if not inside:
            return
        parent, index = self.tree.current, inside[pick % len(inside)]
        self.fork_at(index)
        for _ in range(turns):
            self.turn_once()
        self.change(True, lambda s: s.switch_branch(parent))
        self.tree.current = parent
        ranges, path = self.ranges_and_path()
        crossing = [e for s, e in ranges if s <= path[index].depth <= e]
        ends = [a.id for a in path if a.depth in crossing]
        if ends:
            self.delete_action(ends[0])
            self.background()

    @rule(pick=st.integers(0, 20))
    def switch_branch(self, pick: int) -> None:
        target = sorted(self.tree.paths)[pick % len(self.tree.paths)]
        self.change(True, lambda s: s.switch_branch(target))
        self.tree.current = target

    @rule()
    def background(self) -> None:
        """The worker picks up a job an edit or a delete scheduled."""
        with session_scope(self.env.runtime.sessions) as session:
            pending = self.env.system.background.pending(
                session, Subject.adventure(self.adventure_id)
            )
        if pending:
            self.settle(new_head=False)

    # -- invariants -----------------------------------------------------------------------

    @invariant()
    def derived_work_is_true(self) -> None:
        with session_scope(self.env.runtime.sessions) as session:
            story = self.story(session)
            self.check_paths(story)
            self.check_memories(session, story, after_run=False)
            self.check_coverage(session, story)
            self.check_summary(session, story)
        self.check_retrieval()

    def check_paths(self, story: Story) -> None:
        assert story.branch.id == self.tree.current
        for branch_id, expected in self.tree.paths.items():
            assert [a.id for a in story.repo.path(story.lineage(branch_id))] == expected

    def check_memories(self, session: Session, story: Story, *, after_run: bool) -> None:
        """Invariant 1: each covering automatic memory ends on an active node of its own
        branch, and is stale or was written from exactly the actions still in its range."""
        actions = {
            a.id: a
            for a in session.execute(
                select(
                    Action.id,
                    Action.branch_id,
                    Action.depth,
                    Action.state,
                    Action.text,
                    Action.type,
                )
                .where(Action.adventure_id == self.adventure_id)
                .order_by(Action.depth)
            ).all()
        }
        active = [a for a in actions.values() if a.state == ActionState.ACTIVE]
        links = story.links()
        salient: tuple[str, ...] | None = None
        memories = session.scalars(
            select(Memory).where(
                Memory.adventure_id == self.adventure_id, Memory.origin == MemoryOrigin.AUTO
            )
        ).all()
        for memory in memories:
            if memory.id in self.withdrawn:
                assert memory.status == MemoryStatus.WITHDRAWN, (
                    f"withdrawn memory {memory.id} came back"
                )
            if memory.status == MemoryStatus.WITHDRAWN:
                self.withdrawn.add(memory.id)
                continue
            assert memory.status in COVERING
            end = actions.get(memory.action_id or -1)
            assert end is not None and end.state == ActionState.ACTIVE, (
                f"memory {memory.id} is still {memory.status} but its node "
                f"{memory.action_id} is {end.state if end else 'missing'}"
            )
            assert (end.branch_id, end.depth) == (memory.branch_id, memory.depth)
            assert memory.source_start is not None and memory.source_end == memory.depth
            # the reference reading of its source block: along its own branch, in its range
            lineage = upto(lineage_of(links, memory.branch_id), memory.depth)
            source = [
                (a.id, a.text)
                for a in active
                if on_lineage(lineage, a.branch_id, a.depth)
                and memory.source_start <= a.depth <= memory.source_end
            ]
            assert source and source[-1][0] == end.id
            if memory.status not in LISTED:
                continue
            self.check_keys(session, memory, [a for a in active if a.id in dict(source)])
            if memory.stale:
                self.was_stale.add(memory.id)
                continue
            joined = memory.id in self.written and memory.source_start != self.written[memory.id][2]
            if joined:
                # a gap joined the memory after it: its range only ever grows back
                assert memory.source_start < self.written[memory.id][2], memory.id
            if memory.id not in self.written or memory.id in self.was_stale or joined:
                # only a background run writes or rewrites a memory
                assert after_run, f"memory {memory.id} was rewritten outside a run"
                rows = source_rows(session, memory)
                assert [(r.id, r.text) for r in rows] == source
                if salient is None:
                    salient = tuple(material(session, story.adventure).salient())
                lead = reference_lead(active, lineage, memory.source_start, actions[source[0][0]])
                assert memory.text == extract(block_text(rows), salient, lead), memory.id
                self.written[memory.id] = (memory.text, source, memory.source_start)
                self.was_stale.discard(memory.id)
            text, written_from, _ = self.written[memory.id]
            assert memory.text == text, f"memory {memory.id} changed outside a run"
            assert source == written_from, (
                f"memory {memory.id} is not stale, but the actions it was written from "
                f"changed: {written_from} -> {source}"
            )

    def check_keys(self, session: Session, memory: Memory, source: list[Any]) -> None:
        """Invariant 1b: a memory's evidence keys are the passages of its source block as it
        stands now, or there are none yet; a stale memory has none (they quoted the text
        before the edit)."""
        keys = KeyRepository(session).of(memory.id)
        if memory.stale or not memory.keyed:
            assert not keys and not memory.keyed, f"memory {memory.id} kept keys it lost"
            return
        rendered = [(a.depth, render(a.type, a.text)) for a in source]
        expected = [(p.depth, p.text) for p in passages(rendered)]
        assert [(k.depth, k.text) for k in keys] == expected, memory.id

    def check_coverage(self, session: Session, story: Story) -> None:
        """Invariant 4, part one: no action is covered twice on any branch's path."""
        repo = MemoryRepository(session)
        for branch_id in self.tree.paths:
            lineage = story.lineage(branch_id)
            rows = repo.memories(self.adventure_id, lineage, COVERING, origin=MemoryOrigin.AUTO)
            ranges = [(m.source_start or 0, m.source_end or 0) for m in rows]
            assert sorted(ranges) == repo.coverage(self.adventure_id, lineage)
            kept = sorted(ranges)
            for (_, end), (start, _) in zip(kept, kept[1:], strict=False):
                assert end < start, f"overlapping memories on branch {branch_id}: {ranges}"

    def check_summary(self, session: Session, story: Story) -> None:
        """Invariant 3: the summary in force is anchored on the current path."""
        repo = MemoryRepository(session)
        lineage = story.lineage()
        count = len(repo.summary_versions(self.adventure_id))
        assert count >= self.versions, "a summary version was deleted"
        self.versions = count
        version = repo.summary_in_force(self.adventure_id, lineage)
        if version is None:
            return
        head = story.head()
        assert head is not None
        assert version.covers_to <= head.depth
        assert on_lineage(lineage, version.branch_id, version.depth)
        if version.action_id is not None:
            anchor = session.get(Action, version.action_id)
            assert anchor is not None and anchor.state == ActionState.ACTIVE
            assert (anchor.branch_id, anchor.depth) == (version.branch_id, version.depth)

    def check_retrieval(self) -> None:
        """Invariant 2: retrieval sees exactly the active, embedded memories of the
        current lineage. No query text, so every candidate is either used or suppressed
        as a duplicate (and no embedding call is made for the query)."""
        env = self.env
        with session_scope(env.runtime.sessions) as session:
            story = self.story(session)
            lineage = story.lineage()
            branch_id = story.branch.id
            rows = session.execute(
                select(Memory.id, Memory.branch_id, Memory.depth).where(
                    Memory.adventure_id == self.adventure_id,
                    Memory.status == MemoryStatus.ACTIVE,
                    Memory.vector.is_not(None),
                    Memory.vector_model == EMBED_MODEL,
                )
            ).all()
            expected = {m.id for m in rows if on_lineage(lineage, m.branch_id, m.depth)}
        query = RetrievalQuery(
            adventure_id=self.adventure_id,
            user_id=env.user_id,
            branch_id=branch_id,
            lineage=lineage,
            input_text="",
            context_text="",
            top_k=1000,
            bank=True,
        )
        models = env.runtime.models_for_user(env.user_id)
        result = env.loop.run_until_complete(env.system.retrieve(query, models))
        for used in result.used:
            node = (used.source["branch_id"], used.source["depth"])
            assert on_lineage(lineage, *node), f"memory {used.id} of another branch: {node}"
        used_ids = {m.id for m in result.used}
        suppressed = {s["id"] for s in result.suppressed}
        assert result.considered == len(expected)
        assert used_ids | suppressed == expected, (used_ids, suppressed, expected)
        self.check_evidence(lineage, query)

    def check_evidence(self, lineage: Any, query: RetrievalQuery) -> None:
        """Invariant 2b: asked with the words of an action of the story, every passage
        retrieval carries is text of an active action of the current path, inside the
        source range of the memory it came with."""
        env = self.env
        with session_scope(env.runtime.sessions) as session:
            rows = session.execute(
                select(Action.branch_id, Action.depth, Action.type, Action.text).where(
                    Action.adventure_id == self.adventure_id, Action.state == ActionState.ACTIVE
                )
            ).all()
        path = {a.depth: render(a.type, a.text) for a in rows if on_lineage(lineage, *a[:2])}
        if not path:
            return  # every action deleted: nothing to ask with
        probe = path[min(path, key=lambda d: (d % 7, d))]  # any action; the same one each time
        asked = replace(query, input_text=probe, top_k=5)
        models = env.runtime.models_for_user(env.user_id)
        result = env.loop.run_until_complete(env.system.retrieve(asked, models))
        for used in result.used:
            if used.matched is not MatchedKey.SOURCE:
                continue
            depth = used.evidence_depth
            assert depth is not None and depth in path, f"evidence off the path: {used}"
            assert used.source["source_start"] <= depth <= used.source["source_end"]
            assert " ".join(used.evidence.split()) in " ".join(path[depth].split()), used

    def unsettled(self, session: Session, story: Story) -> list[str]:
        """What a further background run would still do on the current path."""
        repo = MemoryRepository(session)
        lineage = story.lineage()
        problems = []
        depths = [r.depth for r in repo.path_rows(lineage)]
        no_end = shared_ends(session, story, self.adventure_id)
        blocks = plan_blocks(depths, repo.coverage(self.adventure_id, lineage), no_end=no_end)
        if blocks:
            problems.append(f"memory blocks due: {blocks}")
        if repo.stale_memories(self.adventure_id, 1):
            problems.append("a stale memory")
        if repo.unembedded(self.adventure_id, 1):
            problems.append("a memory without a vector")
        if len(repo.memories(self.adventure_id, lineage, (MemoryStatus.ACTIVE,))) > CAPACITY:
            problems.append("the bank is over capacity")
        version = repo.summary_in_force(self.adventure_id, lineage)
        if version is not None and version.stale:
            problems.append(f"summary version {version.id} is stale")
        cursor = version.covers_to if version else -1
        if repo.count_path(lineage, after_depth=cursor) >= SUMMARY_EVERY:
            problems.append(f"a summary is due past {cursor}")
        return problems

    def check_settled(self, *, new_head: bool) -> None:
        """Invariant 4, part two: once settled, every action is covered but the tail, and
        never the newest action a retry could still replace. The tail is longer than a block
        plus slack only while no block can end in it (``shared_ends``)."""
        with session_scope(self.env.runtime.sessions) as session:
            story = self.story(session)
            repo = MemoryRepository(session)
            depths = [r.depth for r in repo.path_rows(story.lineage())]
            ranges = repo.coverage(self.adventure_id, story.lineage())
            no_end = shared_ends(session, story, self.adventure_id)
        uncovered = [d for d in depths if not any(s <= d <= e for s, e in ranges)]
        if new_head and depths:
            assert depths[-1] in uncovered, f"the newest action is covered: {ranges}"
        if len(depths) < FIRST_AT:
            return
        assert uncovered == depths[len(depths) - len(uncovered) :], (
            f"an action was skipped: uncovered {uncovered} of {depths} (memories {ranges})"
        )
        usable = uncovered[: len(uncovered) - SETTLE_SLACK]
        ends = [d for d in usable[BLOCK_ACTIONS - 1 :] if d not in no_end]
        assert len(uncovered) <= TAIL_MAX or not ends, (uncovered, sorted(no_end))


def shared_ends(session: Session, story: Story, adventure_id: int) -> set[int]:
    """Depths of the current path no memory of it may end on, read the slow way: those
    whose node lies on the path of an automatic memory written off this path that covers
    from there or before. A memory ending there would be on that path too, beside it."""
    lineage = story.lineage()
    links = story.links()
    path = story.repo.path(lineage)
    memories = session.scalars(
        select(Memory).where(
            Memory.adventure_id == adventure_id,
            Memory.origin == MemoryOrigin.AUTO,
            Memory.status.in_(COVERING),
        )
    ).all()
    out: set[int] = set()
    for memory in memories:
        if memory.source_start is None or on_lineage(lineage, memory.branch_id, memory.depth):
            continue
        theirs = upto(lineage_of(links, memory.branch_id), memory.depth)
        out.update(
            a.depth
            for a in path
            if memory.source_start <= a.depth and on_lineage(theirs, a.branch_id, a.depth)
        )
    return out


@functools.lru_cache(maxsize=4096)
def extract(block: str, salient: tuple[str, ...], lead: str) -> str:
    return extractive.write_memory(block, PROTAGONIST, list(salient), lead)


def reference_lead(active: list[Any], lineage: Any, start: int, first: Any) -> str:
    """The player's action just before a block that opens on a reply, read the slow way."""
    before = [a for a in active if on_lineage(lineage, a.branch_id, a.depth) and a.depth < start]
    if not before or is_player(first.type):
        return ""
    previous = max(before, key=lambda a: a.depth)
    return render(previous.type, previous.text) if is_player(previous.type) else ""


def test_memories_stay_true_through_random_story_changes(embedded_env: Env) -> None:
    class OnTheDouble(MemoryMachine):
        env = embedded_env

    run_state_machine_as_test(
        OnTheDouble,
        settings=settings(
            max_examples=int(os.environ.get("MEMORY_PROPERTY_EXAMPLES", "30")),
            stateful_step_count=25,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        ),
    )


# -- the exact rules, by example ------------------------------------------------------------


class Play:
    """One adventure driven action by action through ``Story``, with its runs."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.adventure_id, self.root, _ = new_adventure(env)
        self.n = 0

    def story(self, session: Session) -> Story:
        return Story.load(session, self.adventure_id, self.env.user_id, self.env.system)

    def act(self, count: int = 1) -> None:
        """``count`` actions (a narration after a player action, else a player action),
        each saved with its schedule and followed by its background run."""
        for _ in range(count):
            with session_scope(self.env.runtime.sessions) as session:
                story = self.story(session)
                head = story.head()
                kind = "do" if head is not None and head.type == NARRATION else NARRATION
                self.n += 1
                story.append(kind, action_text(self.n, kind))
                story.memory.schedule(session, self.adventure_id, self.env.user_id)
            self.env.run(self.adventure_id)

    def do(self, change: Any) -> Any:
        with session_scope(self.env.runtime.sessions) as session:
            return change(self.story(session))

    def memories(self, statuses: tuple[MemoryStatus, ...] = LISTED) -> list[Memory]:
        with session_scope(self.env.runtime.sessions) as session:
            story = self.story(session)
            return MemoryRepository(session).memories(
                self.adventure_id, story.lineage(), statuses, origin=MemoryOrigin.AUTO
            )

    def ranges(
        self, statuses: tuple[MemoryStatus, ...] = LISTED
    ) -> list[tuple[int | None, int | None]]:
        return [(m.source_start, m.source_end) for m in self.memories(statuses)]

    def path(self) -> list[Action]:
        with session_scope(self.env.runtime.sessions) as session:
            story = self.story(session)
            return story.repo.path(story.lineage())


def expected_memories(actions: int) -> int:
    """Full blocks of the path minus its settle slack, once the path has ``FIRST_AT``."""
    return (actions - SETTLE_SLACK) // BLOCK_ACTIONS if actions >= FIRST_AT else 0


def test_memories_appear_at_twelve_actions_then_every_six(plain_env: Env) -> None:
    play = Play(plain_env)  # the opening is the first action
    counts = []
    for actions in range(2, 41):
        play.act()
        counts.append(len(play.memories()))
        assert counts[-1] == expected_memories(actions), (actions, counts)
    assert counts[:10] == [0] * 10  # 2..11 actions
    assert counts[10] == 1  # 12 actions: the first block, with its slack
    # then one more each time a block of 6 has an action past it: 13, 19, 25, 31, 37
    grew = [a for a in range(3, 41) if counts[a - 2] > counts[a - 3]]  # counts[i]: i+2 actions
    assert grew == [12, 13, 19, 25, 31, 37]
    assert play.ranges() == [(6 * i, 6 * i + 5) for i in range(6)]


def test_undo_of_a_memorys_node_withdraws_it_and_the_block_is_written_again(
    plain_env: Env,
) -> None:
    play = Play(plain_env)
    play.act(12)  # 13 actions: blocks 0-5 and 6-11
    before = play.memories()
    assert [(m.source_start, m.source_end) for m in before] == [(0, 5), (6, 11)]
    play.do(lambda s: s.undo())  # depth 12: no memory there
    assert len(play.memories()) == 2
    play.do(lambda s: s.undo())  # depth 11: the second memory's node
    assert play.ranges() == [(0, 5)]
    withdrawn = play.memories((MemoryStatus.WITHDRAWN,))
    assert [m.id for m in withdrawn] == [before[1].id]
    play.do(lambda s: s.redo())
    play.do(lambda s: s.redo())
    play.act(1)  # the next turn's run writes the block again
    again = play.memories()
    assert [(m.source_start, m.source_end) for m in again] == [(0, 5), (6, 11)]
    assert again[1].id != before[1].id and again[1].text == before[1].text
    assert again[0].id == before[0].id


def test_a_fork_inherits_exactly_the_memories_of_its_path(plain_env: Env) -> None:
    play = Play(plain_env)
    play.act(24)  # 25 actions: blocks ending 5, 11, 17, 23
    assert play.ranges() == [(0, 5), (6, 11), (12, 17), (18, 23)]
    parent = {m.id for m in play.memories()}
    at = play.path()[14]
    play.do(lambda s: s.fork(at.id))
    inherited = play.memories()
    assert [(m.source_start, m.source_end) for m in inherited] == [(0, 5), (6, 11)]
    assert {m.id for m in inherited} < parent
    play.act(8)  # the fork's own actions: 15..22, so 12-17 is due on this branch
    own = play.memories()
    assert [(m.source_start, m.source_end) for m in own] == [(0, 5), (6, 11), (12, 17)]
    assert own[2].id not in parent and own[2].branch_id != play.root
    play.do(lambda s: s.switch_branch(play.root))
    assert {m.id for m in play.memories()} == parent


def test_editing_a_covered_action_marks_the_memory_stale_and_the_run_rewrites_it(
    plain_env: Env,
) -> None:
    play = Play(plain_env)
    play.act(12)
    first = play.memories()[0]
    target = play.path()[2]
    new_text = "Captain Ilse gives Mara the brass key and you promise to return it by 3 bells."
    play.do(lambda s: s.edit(target.id, new_text))
    [stale] = [m for m in play.memories() if m.id == first.id]
    assert stale.stale and stale.text == first.text
    play.env.run(play.adventure_id)
    [fresh] = [m for m in play.memories() if m.id == first.id]
    assert not fresh.stale and fresh.text != first.text
    with session_scope(play.env.runtime.sessions) as session:
        rows = source_rows(session, fresh)
        adventure = session.get(Adventure, play.adventure_id)
        assert adventure is not None
        salient = material(session, adventure).salient()
    assert new_text in block_text(rows)
    assert fresh.text == extractive.write_memory(block_text(rows), PROTAGONIST, salient)
    assert "brass key" in fresh.text


# -- the Story Summary after edits (bugs these properties found, fixed since) --------------


def summary_in_force(play: Play) -> str:
    with session_scope(play.env.runtime.sessions) as session:
        story = play.story(session)
        version = MemoryRepository(session).summary_in_force(play.adventure_id, story.lineage())
        assert version is not None
        return version.text


def settle(play: Play, runs: int = 4) -> None:
    for _ in range(runs):
        play.env.run(play.adventure_id)


def test_an_edit_under_two_summary_versions_leaves_no_old_text_in_force(plain_env: Env) -> None:
    """A stale version is rewritten from a base that is not stale itself (a stale base
    still holds the edited-away text)."""
    play = Play(plain_env)
    play.act(30)  # 31 actions: versions covering up to depth 14 and up to 29
    old = play.memories()[0]
    assert (old.source_start, old.source_end) == (0, 5)
    assert old.text in summary_in_force(play)  # the first block's memory is in the summary
    for i, row in enumerate(play.path()[:6]):
        new_text = f"Brother Tam rings the chapel bell {i} and you count the gulls."
        play.do(lambda s, a=row.id, t=new_text: s.edit(a, t))
    settle(play)
    [fresh] = [m for m in play.memories() if m.id == old.id]
    assert not fresh.stale and fresh.text != old.text  # the memory was rewritten
    assert old.text not in summary_in_force(play)  # ... and so was the summary


def test_a_summary_is_never_written_from_a_stale_memory(plain_env: Env) -> None:
    """More stale memories than a run re-derives (``STALE_PER_RUN``), the current path's
    last among them by id: the summary due in that run must not read the stale one."""
    play = Play(plain_env)
    play.act(66)  # 67 actions on the main branch
    main = play.path()
    play.do(lambda s: s.fork(main[29].id))
    play.act(14)  # the fork's own actions, depths 30..43: memories 30-35 and 36-41
    fork = play.path()
    [old] = [m for m in play.memories() if m.source_start == 30]
    # five stale memories of the main branch, older than the fork's ...
    for depth in (31, 37, 43, 49, 55):
        play.do(lambda s, a=main[depth].id, d=depth: s.edit(a, f"You bury bell {d} by the pier."))
    # ... then the fork's memory 30-35, which the fork's next summary reads
    for depth in range(30, 36):
        play.do(lambda s, a=fork[depth].id, d=depth: s.edit(a, f"Old Wen sings hymn {d}."))
    play.act(1)  # 45 actions on the fork: a summary is due in this run
    settle(play)
    [fresh] = [m for m in play.memories() if m.id == old.id]
    assert not fresh.stale and fresh.text != old.text
    assert old.text not in summary_in_force(play)


@pytest.fixture
def summary_model_env(tmp_path: Path, double: ModelDouble) -> Iterator[Env]:
    """The double's deterministic summary model (the first sentence of what it is given)."""
    yield from build_env(
        tmp_path,
        endpoint_url=double.url,
        model="double-narrator",
        summary_model="double-summary",
        embedding_model="none",
    )


def test_an_edit_during_the_summary_call_is_not_overwritten(
    summary_model_env: Env, double: ModelDouble
) -> None:
    """The version is saved only if what it was written from (its raw actions and its
    memories, not only its anchor) is unchanged after the model call."""
    play = Play(summary_model_env)
    play.act(13)  # 14 actions: memories 0-5 and 6-11, no summary yet
    [first] = [m for m in play.memories() if m.source_start == 0]
    opening = play.path()[0]
    assert first.text in opening.text  # the double's memory: the block's first sentence
    edited: list[bool] = []

    def edit_during_the_call(body: dict[str, Any]) -> str:
        if "[New events]" in json.dumps(body) and not edited:
            edited.append(True)  # the player edits the opening while the summary is written
            play.do(lambda s: s.edit(opening.id, "You wake in the chapel of Brother Tam."))
        return summarize(body)

    double.responders["double-summary"] = edit_during_the_call
    play.act(1)  # 15 actions: the summary is due
    assert edited
    settle(play)
    [fresh] = [m for m in play.memories() if m.id == first.id]
    assert not fresh.stale and fresh.text != first.text
    assert first.text not in summary_in_force(play)


# -- bugs these properties found --------------------------------------------------------------


def test_a_memory_written_on_a_fork_never_double_covers_the_parent(plain_env: Env) -> None:
    play = Play(plain_env)
    play.act(12)  # 13 actions: memories 0-5 and 6-11
    main = play.path()
    play.do(lambda s: s.delete(main[5].id))  # withdraws 0-5: depths 0-4 are uncovered
    play.do(lambda s: s.fork(main[9].id))  # before a run fills that gap on the main branch
    # 12 actions on the fork: its run writes the block 0-4 + 6, which ends on main@6 and so
    # is attached there, on the main branch, beside main's own memory 6-11
    play.act(3)
    play.do(lambda s: s.switch_branch(play.root))
    with session_scope(play.env.runtime.sessions) as session:
        story = play.story(session)
        ranges = MemoryRepository(session).coverage(play.adventure_id, story.lineage())
    assert all(e < s for (_, e), (s, _) in zip(ranges, ranges[1:], strict=False)), ranges


def fork_sharing_a_gap(play: Play) -> tuple[list[Action], Memory]:
    """Main's memory 18-23 crosses the point (22) a fork leaves from, and so does the
    fork's own 18-23; deleting main's 23 withdraws main's, which leaves 18..22 uncovered on
    main between 12-17 and 24-29. Returns main's path before the delete and its memory
    24-29."""
    play.act(36)  # 37 actions: memories 0-5 .. 30-35
    main = play.path()
    play.do(lambda s: s.fork(main[22].id))
    play.act(3)  # the fork's own 23..25
    assert play.ranges() == [(0, 5), (6, 11), (12, 17), (18, 23)]
    assert play.memories()[3].branch_id != play.root  # the fork's, off main's path
    play.do(lambda s: s.switch_branch(play.root))
    [after] = [m for m in play.memories() if m.source_start == 24]
    return main, after


def row(story: Story, memory_id: int) -> Memory:
    memory = story.session.get(Memory, memory_id)
    assert memory is not None
    return memory


def coverage_of_every_branch(play: Play) -> dict[int, list[tuple[int, int]]]:
    with session_scope(play.env.runtime.sessions) as session:
        story = play.story(session)
        repo = MemoryRepository(session)
        return {
            b.id: repo.coverage(play.adventure_id, story.lineage(b.id))
            for b in story.repo.branches(play.adventure_id)
        }


def test_a_gap_only_a_forks_memory_can_end_in_joins_the_memory_after_it(
    plain_env: Env,
) -> None:
    """No memory may end on 18..22 (it would be on the fork's path too, beside the fork's
    18-23): the gap joins main's 24-29, which keeps its row and its pin."""
    play = Play(plain_env)
    main, after = fork_sharing_a_gap(play)
    play.do(
        lambda s: manage.edit(
            s.session, row(s, after.id), {"pinned": True}, s.memory, play.env.user_id
        )
    )
    play.do(lambda s: s.delete(main[23].id))
    settle(play)
    assert play.ranges() == [(0, 5), (6, 11), (12, 17), (18, 29), (30, 35)]
    [joined] = [m for m in play.memories() if m.source_start == 18]
    assert joined.id == after.id and joined.pinned and joined.text != after.text
    rows = [a for a in play.path() if 18 <= a.depth <= 29]
    assert [a.depth for a in rows] == [18, 19, 20, 21, 22, 24, 25, 26, 27, 28, 29]
    with session_scope(play.env.runtime.sessions) as session:
        assert [r.id for r in source_rows(session, joined)] == [a.id for a in rows]
        adventure = session.get(Adventure, play.adventure_id)
        assert adventure is not None
        salient = material(session, adventure).salient()
    lead = reference_lead(play.path(), ((play.root, None),), 18, rows[0])
    assert joined.text == extractive.write_memory(block_text(rows), PROTAGONIST, salient, lead)
    for branch, ranges in coverage_of_every_branch(play).items():
        assert all(e < s for (_, e), (s, _) in zip(ranges, ranges[1:], strict=False)), branch


def test_a_gap_joins_a_memory_the_player_deleted_without_rewriting_it(plain_env: Env) -> None:
    play = Play(plain_env)
    main, after = fork_sharing_a_gap(play)
    play.do(lambda s: manage.delete(s.session, row(s, after.id), s.memory))
    play.do(lambda s: s.delete(main[23].id))
    settle(play)
    [joined] = [m for m in play.memories(COVERING) if m.id == after.id]
    assert joined.status == MemoryStatus.DELETED and joined.text == after.text
    assert play.ranges(COVERING) == [(0, 5), (6, 11), (12, 17), (18, 29), (30, 35)]


def test_a_refresh_never_undoes_a_join_made_while_it_waited_for_the_model(
    summary_model_env: Env, double: ModelDouble
) -> None:
    """Two runs at once (a worker's claim taken over while its model call hangs): the
    first refreshes the stale 24-29 from its old range while the second joins the gap
    18..22 to it and the player edits the gap. The refresh's text must not be saved: it
    would leave a memory that is not stale but was not written from its range."""
    play = Play(summary_model_env)
    main, after = fork_sharing_a_gap(play)
    play.do(lambda s: s.edit(main[26].id, "Old Wen mends the rope at the smithy."))
    play.do(lambda s: s.delete(main[23].id))
    arrived, release = threading.Event(), threading.Event()

    def held_refresh(body: dict[str, Any]) -> str:
        if "Old Wen mends the rope" in json.dumps(body) and not arrived.is_set():
            arrived.set()  # the first run's refresh of 24-29: held until the rest happened
            release.wait(30)
        return summarize(body)

    double.responders["double-summary"] = held_refresh
    env = play.env
    sessions = env.runtime.sessions
    work = Work(play.adventure_id, env.runtime.models_for_user(env.user_id), env.system.cache)

    async def second_run() -> None:
        await asyncio.to_thread(arrived.wait, 30)
        joins = await run_pass(sessions, play.adventure_id, NewBlocks(work))
        assert joins.did_work  # joins the gap: 18-29, rewritten, not stale
        play.do(lambda s: s.edit(main[20].id, "Brother Tam counts 7 gulls on the chapel."))
        release.set()

    async def both() -> None:
        await asyncio.gather(
            run_pass(sessions, play.adventure_id, RefreshStale(work)), second_run()
        )

    env.loop.run_until_complete(both())
    settle(play)
    [joined] = [m for m in play.memories() if m.id == after.id]
    assert (joined.source_start, joined.source_end) == (18, 29)
    with session_scope(env.runtime.sessions) as session:
        rows = source_rows(session, joined)
    assert not joined.stale and joined.text in block_text(rows[:1])  # written from 18 on
