"""A story forked 1,100 levels deep stays playable: every read of the path, the tree,
export and import, the memory listing and a dry run work, and the tree costs a constant
number of queries however many branches nest.

Each level forks the newest action of the branch before it (so the lineage gains an entry
per level); a real turn on the model double comes every ``TURN_EVERY`` levels.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import event
from sqlalchemy.orm import Session, sessionmaker

from talekeeper.services.memory.base import NullMemory
from talekeeper.services.story import adventures
from talekeeper.services.story.tree import Story
from talekeeper.storage.db import session_scope
from talekeeper.storage.repositories.users import UserRepository
from talekeeper_testkit.double import ModelDouble

LEVELS = 1_100  # deeper than SQLite's expression depth limit (1,000) for one OR per level
TURN_EVERY = 100
BATCH = 50  # levels written per transaction


def turn(client: TestClient, adventure: int, text: str) -> dict[str, Any]:
    response = client.post(f"/api/adventures/{adventure}/actions", json={"text": text})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def nest(client: TestClient, adventure: int, levels: int) -> None:
    """Each level: a player's action on the current branch, then a fork from it."""
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    uid = runtime.local_user_id()
    for start in range(0, levels, BATCH):
        with session_scope(runtime.sessions) as session:
            story = Story.load(session, adventure, uid, runtime.memory)
            for level in range(start, min(start + BATCH, levels)):
                row = story.append("do", f"step {level}")
                story.fork(row.id, f"level {level}")


@contextmanager
def count_statements(session: Session) -> Iterator[list[str]]:
    """The statements ``session`` runs meanwhile (the background worker's are not counted)."""
    connection = session.connection()
    seen: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if conn is connection:
            seen.append(statement)

    event.listen(connection.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(connection.engine, "before_cursor_execute", record)


def tree_statements(client: TestClient, adventure: int) -> int:
    """How many statements ``Story.tree`` runs for ``adventure`` (the story loaded first)."""
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    with session_scope(runtime.sessions) as session:
        story = Story.load(session, adventure, runtime.local_user_id(), runtime.memory)
        with count_statements(session) as seen:
            story.tree()
        return len(seen)


def idle(client: TestClient) -> None:
    client.portal.call(client.app.state.runtime.memory.idle, 300.0)  # type: ignore[attr-defined]


def test_a_story_forked_1100_levels_deep_stays_playable(
    app_client: TestClient, double: ModelDouble
) -> None:
    client = app_client
    adventure = client.post("/api/adventures", json={"scenario": "lantern-coast"}).json()["id"]
    small = client.post("/api/adventures", json={"scenario": "lantern-coast"}).json()["id"]
    for done in range(0, LEVELS, TURN_EVERY):
        nest(client, adventure, TURN_EVERY)
        turn(client, adventure, f"look around at level {done + TURN_EVERY}")
    reply = turn(client, adventure, "climb the last stair")["reply"]

    tree = client.get(f"/api/adventures/{adventure}/tree")
    assert tree.status_code == 200, tree.text
    view = tree.json()
    assert len(view["branches"]) == LEVELS + 1
    assert len(view["lineage"]) == LEVELS + 1  # every level holds an action of its own
    current = next(b for b in view["branches"] if b["current"])
    assert current["head_action_id"] == reply["id"]
    heads = {b["id"]: b["head_action_id"] for b in view["branches"]}
    assert all(heads.values())
    # A constant number of statements, the same as for a story with one branch.
    assert tree_statements(client, adventure) == tree_statements(client, small) <= 3

    page = client.get(f"/api/adventures/{adventure}/actions", params={"limit": 500})
    assert page.status_code == 200, page.text
    actions = page.json()["actions"]
    assert len(actions) == 500 and page.json()["more_before"]
    assert actions[-1]["id"] == reply["id"]
    depths = [a["depth"] for a in actions]
    assert depths == sorted(depths) and len(set(depths)) == len(depths)
    length = client.get(f"/api/adventures/{adventure}").json()["length"]
    assert length == LEVELS + 2 * (LEVELS // TURN_EVERY + 1) + 1  # + the opening

    dry = client.post(f"/api/adventures/{adventure}/insights/dry-run", json={"text": "wait"})
    assert dry.status_code == 200, dry.text
    idle(client)
    derived = client.get(f"/api/adventures/{adventure}/derived").json()
    failed = {
        k: v for k, v in derived.items() if isinstance(v, dict) and v.get("state") == "failed"
    }
    assert failed == {}
    listing = client.get(f"/api/adventures/{adventure}/memories")
    assert listing.status_code == 200, listing.text
    assert listing.json()  # the background work wrote memories along the nested path

    exported = client.get(f"/api/adventures/{adventure}/export")
    assert exported.status_code == 200, exported.text
    imported = client.post("/api/adventures/import", json=exported.json())
    assert imported.status_code == 201, imported.text
    copy = imported.json()["id"]
    assert imported.json()["length"] == length
    copy_tree = client.get(f"/api/adventures/{copy}/tree").json()
    assert len(copy_tree["lineage"]) == LEVELS + 1
    assert client.get(f"/api/adventures/{copy}/memories").status_code == 200
    turn(client, copy, "the copy plays on")


def test_pages_of_a_nested_path_with_deleted_depths_match_the_whole_path(
    sessions: sessionmaker[Session],
) -> None:
    """The newest rows from any depth down, read per entry and in depth windows, are the
    whole path's rows, even where deleted actions leave depths unused at every level."""
    with session_scope(sessions) as session:
        uid = UserRepository(session).local_user().id
        story = adventures.create(session, uid, {"title": "T", "opening": "Once."}, NullMemory())
        for level in range(30):
            rows = [story.append("do", f"{level}.{i}") for i in range(3)]
            story.delete(rows[1].id)
            if level % 3 == 0:
                story.delete(rows[0].id)
            story.fork(rows[2].id)
        lineage = story.lineage()
        assert len(lineage) == 31
        path = story.repo.path(lineage)
        newest = [(a.id, a.depth) for a in path][::-1]
        for size in (1, 2, 5, 17, len(path) + 3):
            for cut in [None, *range(0, newest[0][1] + 2, 7)]:
                below = [r for r in newest if cut is None or r[1] < cut]
                pages = story.repo.newest(lineage, size, below_depth=cut)
                assert [(a.id, a.depth) for a in pages] == below[:size], (size, cut)
                texts = story.repo.newest_texts(lineage, size, below_depth=cut)
                assert [(a.id, a.depth) for a in texts] == below[:size], (size, cut)
