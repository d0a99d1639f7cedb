"""The background passes' one seam and one runner (``services.memory.passes``).

Real parts throughout: a migrated database, the loopback model double as the summary and
embedding models, ``Story`` or the app's routes for every change. What is checked:

1. a piece whose story moved while it was generated (a real undo landing during the held
   model call) saves nothing, and the next run writes it from the story as it is;
2. no unit of work of a pass is open while it generates: no connection is checked out of
   the pool, and on SQLite another connection takes the write lock (``BEGIN IMMEDIATE``),
   at the start of every pass's ``generate`` and in the middle of the model call;
3. a failing pass is recorded in ``derived_states`` with its error, the passes after it
   still run, and the next run retries it;
4. the three floors of ``services.memory`` import only downwards.
"""

from __future__ import annotations

import ast
import asyncio
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event, select
from sqlalchemy.orm import Session
from tests.conftest import make_settings

from talekeeper.bootstrap import Runtime
from talekeeper.services.common.rendering import NARRATION
from talekeeper.services.memory.passes.runner import Runner, passes_for
from talekeeper.services.memory.passes.seam import Pass
from talekeeper.services.memory.service import MemorySystem, derived_view
from talekeeper.services.story import adventures
from talekeeper.services.story.tree import Story
from talekeeper.storage.db import read_scope, session_scope
from talekeeper.storage.models import Action, Adventure, Memory, SummaryVersion
from talekeeper.storage.vocabulary import ActionState, MemoryOrigin, MemoryStatus
from talekeeper_testkit.double import ModelDouble, summarize

MEMORY_PACKAGE = Path(__file__).parents[3] / "src" / "talekeeper" / "services" / "memory"


# -- a game through the app ---------------------------------------------------------------


def app_runtime(client: TestClient) -> Runtime:
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    assert isinstance(runtime, Runtime)
    return runtime


def idle(client: TestClient) -> None:
    memory = app_runtime(client).memory
    assert isinstance(memory, MemorySystem) and client.portal is not None
    client.portal.call(memory.idle)


def turn(client: TestClient, adventure: int, text: str) -> None:
    response = client.post(
        f"/api/adventures/{adventure}/actions", json={"type": "do", "text": text}
    )
    assert response.status_code == 200, response.text


def ranges(client: TestClient, adventure: int) -> list[tuple[int, int]]:
    rows = client.get(f"/api/adventures/{adventure}/memories").json()
    return [(m["source_start"], m["source_end"]) for m in rows]


def test_a_block_the_story_moved_under_during_its_model_call_is_dropped_then_rewritten(
    client: TestClient, double: ModelDouble
) -> None:
    """At 13 actions the run writes 0-5, then 6-11; while the model writes 6-11 the player
    undoes twice (the block's last action goes). The held call returns, the save finds the
    story moved and writes nothing; the next turn's run writes 6-11 from the new story."""
    adventure = client.post("/api/adventures", json={"scenario": "lantern-coast"}).json()["id"]
    for i in range(5):  # 11 actions: no memory yet
        turn(client, adventure, f"look around {i}")
        idle(client)
    assert ranges(client, adventure) == []
    blocks: list[str] = []
    arrived, release = threading.Event(), threading.Event()

    def held_second_block(body: dict[str, Any]) -> str:
        if "[Passage]" in str(body):
            blocks.append(str(body))
            if len(blocks) == 2:  # 6-11: held until the undo landed
                arrived.set()
                release.wait(30)
        return summarize(body)

    double.responders["double-summary"] = held_second_block
    turn(client, adventure, "look around 5")  # 13 actions: 0-5 and 6-11 are due
    try:
        assert arrived.wait(30)
        actions = client.get(f"/api/adventures/{adventure}/actions").json()["actions"]
        undone = next(a for a in actions if a["depth"] == 11)
        for _ in range(2):  # takes the write lock while the pass waits for the model
            response = client.post(f"/api/adventures/{adventure}/undo")
            assert response.status_code == 200, response.text
    finally:
        release.set()
    idle(client)
    assert ranges(client, adventure) == [(0, 5)]  # 6-11 was written, and not saved
    derived = client.get(f"/api/adventures/{adventure}/derived").json()["memory"]
    assert derived["state"] == "idle" and derived["last_error"] is None
    turn(client, adventure, "look around again")  # 13 actions again: the next run
    idle(client)
    assert ranges(client, adventure) == [(0, 5), (6, 11)]
    with read_scope(app_runtime(client).sessions) as session:
        end = session.scalar(select(Memory.action_id).where(Memory.source_end == 11))
        action = session.get(Action, end)
        assert (
            action is not None and action.id != undone["id"] and action.state == ActionState.ACTIVE
        )
    assert len(blocks) == 3  # the dropped block was asked for again, once


# -- a game through ``Story``, runs through the runner ---------------------------------------


@dataclass
class Game:
    runtime: Runtime
    loop: asyncio.AbstractEventLoop
    user_id: int
    adventure_id: int = 0
    n: int = 0

    @property
    def system(self) -> MemorySystem:
        assert isinstance(self.runtime.memory, MemorySystem)
        return self.runtime.memory

    @property
    def runner(self) -> Runner:
        """The runner the worker runs, over the same bank cache."""
        return Runner(self.runtime.sessions, self.runtime.models_for_user, self.system.cache)

    def story(self, session: Session) -> Story:
        return Story.load(session, self.adventure_id, self.user_id, self.system)

    def act(self, count: int) -> None:
        """``count`` actions, alternating narration and the player's, each scheduling work."""
        for _ in range(count):
            with session_scope(self.runtime.sessions) as session:
                story = self.story(session)
                head = story.head()
                kind = "do" if head is not None and head.type == NARRATION else NARRATION
                self.n += 1
                text = f"Captain Ilse counts {self.n} gulls at Gull Rock. The bell rings."
                story.append(kind, text if kind == NARRATION else f"ask about bell {self.n}")
                story.memory.schedule(session, self.adventure_id, self.user_id)

    def at(self, depth: int) -> Action:
        with read_scope(self.runtime.sessions) as session:
            story = self.story(session)
            return next(a for a in story.repo.path(story.lineage()) if a.depth == depth)

    def run(self) -> None:
        self.loop.run_until_complete(self.runner.run(self.adventure_id))

    def derived(self) -> dict[str, Any]:
        with read_scope(self.runtime.sessions) as session:
            return derived_view(session, self.adventure_id, self.system.background)


@pytest.fixture
def game(tmp_path: Path, double: ModelDouble) -> Iterator[Game]:
    settings = make_settings(
        tmp_path,
        endpoint_url=double.url,
        model="double-narrator",
        embedding_model="double-embed",
        summary_model="double-summary",
        bank_capacity="2",
        timeout="5",
    )
    runtime = Runtime.build(settings)  # not started: runs happen only when a test asks
    loop = asyncio.new_event_loop()
    play = Game(runtime, loop, runtime.local_user_id())
    with session_scope(runtime.sessions) as session:
        data = {"title": "Seam", "opening": "You wake on the quay at Gull Rock."}
        play.adventure_id = adventures.create(session, play.user_id, data, play.system).adventure.id
    try:
        yield play
    finally:
        loop.run_until_complete(runtime.aclose())
        loop.close()


class Connections:
    """Connections of the engine checked out of its pool right now."""

    def __init__(self, runtime: Runtime) -> None:
        self.out = 0
        self.lock = threading.Lock()
        event.listen(runtime.engine, "checkout", self._checkout)
        event.listen(runtime.engine, "checkin", self._checkin)

    def _checkout(self, *_: Any) -> None:
        with self.lock:
            self.out += 1

    def _checkin(self, *_: Any) -> None:
        with self.lock:
            self.out -= 1


def outside_writer_locks(runtime: Runtime) -> None:
    """On SQLite, a plain connection takes the write lock at once (``BEGIN IMMEDIATE``
    fails with "database is locked" while any writer holds it); elsewhere nothing."""
    url = runtime.engine.url
    if url.get_backend_name() != "sqlite" or not url.database:
        return
    outside = sqlite3.connect(url.database, timeout=0, isolation_level=None)
    try:
        outside.execute("BEGIN IMMEDIATE")
        outside.execute("ROLLBACK")
    finally:
        outside.close()


def assert_no_unit_of_work_open(runtime: Runtime, connections: Connections) -> None:
    assert connections.out == 0, "a connection is held while a pass generates"
    outside_writer_locks(runtime)


class Checked:
    """A pass as the runner would run it, checked when its ``generate`` starts."""

    def __init__(self, inner: Pass[Any, Any], check: Any, generated: list[str]) -> None:
        self.inner = inner
        self.name = inner.name
        self.check = check
        self.generated = generated

    def read(self, session: Session, adventure: Adventure) -> Sequence[Any]:
        return self.inner.read(session, adventure)

    async def generate(self, piece: Any) -> Any:
        self.check()
        self.generated.append(self.name)
        return await self.inner.generate(piece)

    def save(self, session: Session, adventure: Adventure, piece: Any, result: Any) -> bool:
        return self.inner.save(session, adventure, piece, result)


def test_no_unit_of_work_is_open_while_any_pass_generates(game: Game, double: ModelDouble) -> None:
    game.act(15)  # 16 actions
    game.run()  # memories 0-5 and 6-11, a summary, their keys and vectors
    with session_scope(game.runtime.sessions) as session:  # 0-5 and the summary go stale
        game.story(session).edit(game.at(2).id, "Brother Tam hides 3 keys under the pier.")
    game.act(6)  # 22 actions: 12-17 is due, and 3 memories overflow a capacity of 2
    connections = Connections(game.runtime)
    mid_call: list[str] = []

    def checked_answer(body: dict[str, Any]) -> str:
        assert_no_unit_of_work_open(game.runtime, connections)
        mid_call.append(str(body)[:40])
        return summarize(body)

    double.responders["double-summary"] = checked_answer
    generated: list[str] = []

    def check() -> None:
        assert_no_unit_of_work_open(game.runtime, connections)

    async def run() -> None:
        work = await game.runner.work(game.adventure_id)
        assert work is not None
        for kind, steps in passes_for(work):
            checked = [Checked(step, check, generated) for step in steps]
            await game.runner.run_kind(game.adventure_id, kind, checked)

    game.loop.run_until_complete(run())
    derived = game.derived()
    assert all(derived[k]["state"] == "idle" for k in ("memory", "summary", "embedding"))
    assert derived["eviction"]["state"] == "idle", derived["eviction"]
    expected = {"stale refresh", "memory blocks", "summary", "evidence keys", "embedding"}
    assert expected | {"eviction"} <= set(generated), generated
    assert len(mid_call) >= 3  # the refresh, the new block and the summary: model calls
    with read_scope(game.runtime.sessions) as session:
        memories = list(
            session.scalars(select(Memory).where(Memory.origin == MemoryOrigin.AUTO)).all()
        )
        versions = list(session.scalars(select(SummaryVersion)).all())
    assert {(m.source_start, m.source_end) for m in memories} == {(0, 5), (6, 11), (12, 17)}
    assert not any(m.stale for m in memories)
    assert [m.status for m in memories].count(MemoryStatus.FORGOTTEN) == 1  # evicted: 3 over 2
    assert any(v.refreshes_id is not None for v in versions)  # the stale summary rewritten


def test_the_check_sees_a_unit_of_work_left_open(game: Game) -> None:
    """The check itself: a unit of work still open (here one that wrote) is seen, both
    as a connection out of the pool and, on SQLite, as the write lock held."""
    connections = Connections(game.runtime)
    with session_scope(game.runtime.sessions) as session:
        session.get(Adventure, game.adventure_id)  # the write lock is taken, and held
        assert connections.out == 1
        if game.runtime.engine.url.get_backend_name() == "sqlite":
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                outside_writer_locks(game.runtime)
    assert_no_unit_of_work_open(game.runtime, connections)


def test_a_failing_pass_is_recorded_and_the_passes_after_it_still_run(
    game: Game, double: ModelDouble
) -> None:
    """The summary model writes the memories but answers the Story Summary with nothing:
    the summary fails with its error, the memories before it and the embedding and
    eviction after it run; the next run writes the summary."""
    game.act(15)  # 16 actions: memories 0-5 and 6-11 and a summary are due
    double.responders["double-summary"] = lambda body: (
        "" if "[New events]" in str(body) else summarize(body)
    )
    game.run()
    derived = game.derived()
    summary = derived["summary"]
    assert summary["state"] == "failed" and summary["failures_in_a_row"] == 1
    assert (
        summary["last_error"] == "The summary model (double-summary) wrote an empty Story Summary."
    )
    for kind in ("memory", "embedding", "eviction"):
        assert derived[kind]["state"] == "idle" and derived[kind]["last_error"] is None, kind
    assert derived["memory"]["did_work"] and derived["embedding"]["did_work"]
    with read_scope(game.runtime.sessions) as session:
        memories = list(session.scalars(select(Memory)).all())
        assert session.scalar(select(SummaryVersion.id)) is None
    assert len(memories) == 2 and all(m.vector is not None for m in memories)  # embedded after
    double.responders["double-summary"] = summarize
    game.run()  # the next run retries it
    derived = game.derived()
    assert derived["summary"]["state"] == "idle" and derived["summary"]["did_work"]
    assert derived["summary"]["failures_in_a_row"] == 0
    assert derived["summary"]["previous_error"] == summary["last_error"]
    with read_scope(game.runtime.sessions) as session:
        assert session.scalar(select(SummaryVersion.covers_to)) == 15


# -- the floors ----------------------------------------------------------------------------

PURE = {"writer", "eviction", "extractive", "evidence", "terms", "authority", "excerpt"}
PURE |= {"cast", "prompts", "ranking", "keyset", "int8", "postings"}
PURE |= {"arrays", "scoring", "keyscores", "fusion", "selection", "prose"}
REQUEST = {"base", "service", "retrieval", "changes", "manage", "bank", "scene", "summary"}
REQUEST |= {"source", "snapshot", "cache"}
BACKGROUND = {"passes"}  # the port and its adapters are services.background
NO_IO = ("sqlalchemy", "talekeeper.storage.db", "talekeeper.storage.repositories")


def runtime_imports(path: Path) -> set[str]:
    """The modules a file imports when it runs (``TYPE_CHECKING`` blocks left out)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
            for child in ("body", "orelse", "finalbody", "handlers"):
                visit(getattr(node, child, []))

    visit(tree.body)
    return found


def floor_of(module: str) -> int | None:
    prefix = "talekeeper.services.memory."
    if not module.startswith(prefix):
        return None
    top = module[len(prefix) :].split(".")[0]
    return 1 if top in PURE else 2 if top in REQUEST else 3 if top in BACKGROUND else None


def test_every_module_of_the_memory_system_is_on_one_floor() -> None:
    names = {p.stem for p in MEMORY_PACKAGE.glob("*.py") if p.stem != "__init__"}
    names |= {p.name for p in MEMORY_PACKAGE.iterdir() if (p / "__init__.py").exists()}
    assert names == PURE | REQUEST | BACKGROUND


@pytest.mark.parametrize("floor", [1, 2])
def test_a_floor_imports_only_from_the_floors_below_it(floor: int) -> None:
    tops = PURE if floor == 1 else REQUEST
    for top in sorted(tops):
        path = MEMORY_PACKAGE / f"{top}.py"
        for module in runtime_imports(path):
            above = floor_of(module)
            assert above is None or above <= floor, f"{top} (floor {floor}) imports {module}"
            if floor == 1:
                assert not module.startswith(NO_IO), f"{top} is pure but imports {module}"
