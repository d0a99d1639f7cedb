"""Property: random sequences of story operations keep every branch's path exactly as a
simple reference model says, and refuse exactly the operations that would change another
branch's past. Every way of reading a path agrees with the model: the whole path, its
newest rows a page at a time (per entry and in depth windows), and each branch's head in
the tree."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.orm import Session, sessionmaker
from tests.conftest import database_url

from talekeeper.core.errors import Conflict
from talekeeper.services.memory.base import NullMemory
from talekeeper.services.story import adventures
from talekeeper.services.story.tree import Story
from talekeeper.storage import migrate
from talekeeper.storage.db import make_engine, make_session_factory, session_scope
from talekeeper.storage.repositories.users import UserRepository

OPS = ("do", "reply", "retry", "switch", "undo", "redo", "edit", "delete", "fork", "branch")


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sessionmaker[Session]]:
    path: Path = tmp_path_factory.mktemp("tree") / "tk.db"
    engine = make_engine(database_url(path))
    migrate.upgrade(engine)
    yield make_session_factory(engine)
    engine.dispose()


class Model:
    """The reference: each branch's path as a list of action ids, and its redo stack."""

    def __init__(self, root: int, first: int) -> None:
        self.paths: dict[int, list[int]] = {root: [first]}
        self.redo: dict[int, list[int]] = {root: []}
        self.current = root

    def shared(self, action_id: int) -> bool:
        return any(action_id in p for b, p in self.paths.items() if b != self.current)

    @property
    def path(self) -> list[int]:
        return self.paths[self.current]


def apply(story: Story, model: Model, op: str, pick: int) -> None:
    path = model.path
    head = story.head()
    if op in ("do", "reply"):
        row = story.append("do" if op == "do" else "narration", f"{op} {pick}")
        path.append(row.id)
        model.redo[model.current] = []
    elif op == "retry":
        allowed = head is not None and head.type == "narration" and not model.shared(head.id)
        if head is None or head.type != "narration":
            return
        _expect(allowed, lambda: story.check_retry())
        if allowed:
            path[-1] = story.add_take(head, f"take {pick}").id
            model.redo[model.current] = []
    elif op == "switch":
        if head is None or head.type != "narration":
            return
        allowed = not model.shared(head.id)
        takes = story.repo.slot(head.branch_id, head.depth)
        chosen = takes[pick % len(takes)]
        result = _expect(allowed, lambda: story.switch_take(chosen.take))
        if allowed and result is not None:
            if chosen.id != path[-1]:
                model.redo[model.current] = []
            path[-1] = chosen.id
    elif op == "undo":
        if not path:
            return
        allowed = not model.shared(path[-1])
        if _expect(allowed, story.undo) is not None:
            model.redo[model.current].append(path.pop())
    elif op == "redo":
        stack = model.redo[model.current]
        if _expect(bool(stack), story.redo) is not None:
            path.append(stack.pop())
    elif op == "edit" and path:
        story.edit(path[pick % len(path)], f"edited {pick}")
    elif op == "delete" and path:
        target = path[pick % len(path)]
        if _expect(not model.shared(target), lambda: story.delete(target)) is not None:
            if target == path[-1]:
                model.redo[model.current] = []
            path.remove(target)
    elif op == "fork" and path:
        index = pick % len(path)
        branch = story.fork(path[index])
        model.paths[branch.id] = path[: index + 1]
        model.redo[branch.id] = []
        model.current = branch.id
    elif op == "branch":
        target = sorted(model.paths)[pick % len(model.paths)]
        story.switch_branch(target)
        model.current = target


def _expect(allowed: bool, call: object) -> object:
    assert callable(call)
    if allowed:
        return call() or True
    with pytest.raises(Conflict):
        call()
    return None


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 50)), max_size=40))
def test_paths_follow_the_reference_model(
    sessions: sessionmaker[Session], ops: list[tuple[str, int]]
) -> None:
    with session_scope(sessions) as session:
        uid = UserRepository(session).local_user().id
        story = adventures.create(session, uid, {"title": "P", "opening": "Once."}, NullMemory())
        first = story.head()
        assert first is not None
        model = Model(story.branch.id, first.id)
        for op, pick in ops:
            apply(story, model, op, pick)
            assert story.branch.id == model.current
            for branch_id, expected in model.paths.items():
                actual = [a.id for a in story.repo.path(story.lineage(branch_id))]
                assert actual == expected, (op, branch_id)
                depths = [a.depth for a in story.repo.path(story.lineage(branch_id))]
                assert depths == sorted(set(depths))
                check_pages(story, branch_id, expected, depths, pick)
            heads = {b.id: b.head_action_id for b in story.tree().branches}
            assert heads == {b: (p[-1] if p else None) for b, p in model.paths.items()}


def check_pages(
    story: Story, branch_id: int, expected: list[int], depths: list[int], pick: int
) -> None:
    """The newest rows, a page at a time from any depth down, are the path's own."""
    lineage = story.lineage(branch_id)
    newest = expected[::-1]
    size = 1 + pick % max(1, len(expected))  # up to the whole path: across every entry
    assert [a.id for a in story.repo.newest(lineage, size)] == newest[:size]
    if depths:
        cut = depths[pick % len(depths)]
        below = [i for i, d in zip(expected, depths, strict=True) if d < cut][::-1]
        page = story.repo.newest_texts(lineage, size, below_depth=cut)
        assert [a.id for a in page] == below[:size]
