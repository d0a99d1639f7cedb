"""Limits on the work one request can cause: the caps per adventure at import and on
creation, nesting, checks that stay linear in the file, and an import that writes only
after it has read the whole file, in a few bulk statements.

Every file here is refused or imported through the real routes (or the real service, for
what no HTTP body can carry), against a migrated temporary database.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event, insert, select, update
from sqlalchemy.orm import Session, sessionmaker
from tests.kit.exchange import T0, T1, action, counts, version_2_file

from talekeeper.core.errors import InvalidInput
from talekeeper.services import exchange
from talekeeper.services.common import limits
from talekeeper.services.exchange.fileformat import MAX_NESTING
from talekeeper.services.memory.base import MemoryService, NullMemory
from talekeeper.storage.db import session_scope
from talekeeper.storage.models import Adventure, Memory, StoryCard, User


def story_file(actions: int, *, memories: int = 0, used_by: int = 0) -> dict[str, Any]:
    """One branch of ``actions`` actions (narrations with an Insights snapshot each), and
    ``memories`` memories, the first used by the first ``used_by`` narrations."""
    data = version_2_file()
    data["branches"] = data["branches"][:1]
    data["adventure"]["current_branch"] = 1
    data["actions"] = [
        action(k, 1, k - 1, "narration" if k % 2 else "do", f"Line {k} of the tide.")
        for k in range(1, actions + 1)
    ]
    snapshot = {"sections": [{"name": "history", "tokens": 12, "text": "x"}], "budget": {}}
    data["insights"] = [
        {"action": k, "data": snapshot, "created_at": T1} for k in range(1, actions + 1, 2)
    ]
    replies = list(range(1, actions + 1, 2))[:used_by]
    data["memories"] = [
        {**data["memories"][0], "key": k, "branch": 1, "action": 1, "depth": 0, "source_end": 0}
        | {"used_by": replies if k == 1 else [], "use_count": len(replies) if k == 1 else 0}
        for k in range(1, memories + 1)
    ]
    data["summaries"] = []
    return data


def memory_of(client: TestClient) -> MemoryService:
    memory: MemoryService = client.app.state.runtime.memory  # type: ignore[attr-defined]
    return memory


def sessions_of(client: TestClient) -> sessionmaker[Session]:
    factory: sessionmaker[Session] = client.app.state.runtime.sessions  # type: ignore[attr-defined]
    return factory


def local_user(sessions: sessionmaker[Session]) -> int:
    with session_scope(sessions) as session:
        return int(session.scalars(select(User.id)).one())


@contextmanager
def statements(sessions: sessionmaker[Session]) -> Iterator[list[str]]:
    """The first word of every SQL statement run meanwhile on this thread (an executemany
    counts once, or once per batch)."""
    engine = sessions.kw["bind"]
    seen: list[str] = []
    thread = threading.get_ident()

    def record(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if threading.get_ident() == thread:
            seen.append(statement.split(None, 1)[0].upper())

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)


# -- caps at import --------------------------------------------------------------------------


CAPS = {
    "branches": limits.MAX_BRANCHES,
    "actions": limits.MAX_ACTIONS,
    "memories": limits.MAX_MEMORIES,
    "insights": limits.MAX_ACTIONS,
    "summaries": limits.MAX_ACTIONS,
}


@pytest.mark.parametrize("section", list(CAPS))
def test_an_import_past_a_cap_is_refused_by_its_count_before_any_entry_is_read(
    client: TestClient, section: str
) -> None:
    cap = CAPS[section]
    data = version_2_file()
    data[section] = [{}] * (cap + 1)  # never read: the count alone refuses the file
    before = counts(client)
    response = client.post("/api/adventures/import", json=data)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "limit_reached"
    assert f"This file has {cap + 1:,} " in error["message"]
    assert f"an adventure holds at most {cap:,}" in error["message"]
    assert f"file.{section}" in error["message"]
    assert counts(client) == before


def test_an_import_of_more_cards_than_an_adventure_holds_is_refused(client: TestClient) -> None:
    data = version_2_file()
    card = {"name": "Gull", "type": "other", "keywords": ["gull"], "created_at": T0}
    data["cards"] = [card | {"updated_at": T1}] * (limits.MAX_CARDS + 1)
    before = counts(client)
    response = client.post("/api/adventures/import", json=data)
    assert response.status_code == 400, response.text
    message = response.json()["error"]["message"]
    assert "5,001 story cards; an adventure holds at most 5,000" in message
    assert counts(client) == before
    data["cards"] = data["cards"][: limits.MAX_CARDS]  # exactly the cap is welcome
    response = client.post("/api/adventures/import", json=data)
    assert response.status_code == 201, response.text


# -- caps on creation --------------------------------------------------------------------------


def _fill(client: TestClient, model: type[Any], rows: list[dict[str, Any]]) -> None:
    with session_scope(sessions_of(client)) as session:
        session.execute(insert(model), rows)


def test_a_card_past_the_cap_is_refused_naming_the_count_and_the_cap(client: TestClient) -> None:
    aid = client.post("/api/adventures", json={"title": "Many cards"}).json()["id"]
    row = {"adventure_id": aid, "name": "Gull", "type": "other", "keywords": '["gull"]'}
    _fill(client, StoryCard, [row] * (limits.MAX_CARDS - 1))
    card = {"name": "Last", "keywords": ["last"]}
    assert client.post(f"/api/adventures/{aid}/cards", json=card).status_code == 201
    refused = client.post(f"/api/adventures/{aid}/cards", json=card)
    assert refused.status_code == 409, refused.text
    error = refused.json()["error"]
    assert error["code"] == "limit_reached"
    assert "has 5,000 story cards and one adventure may hold at most 5,000" in error["message"]
    assert len(client.get(f"/api/adventures/{aid}/cards").json()) == limits.MAX_CARDS
    other = client.post("/api/adventures", json={"title": "Few cards"}).json()["id"]
    assert client.post(f"/api/adventures/{other}/cards", json=card).status_code == 201


def test_a_memory_past_the_cap_is_refused_naming_the_count_and_the_cap(
    client: TestClient,
) -> None:
    story = client.post("/api/adventures", json={"title": "Much memory"}).json()
    aid, branch = story["id"], story["current_branch_id"]
    row = {
        "adventure_id": aid,
        "branch_id": branch,
        "depth": -1,
        "text": "Pip owes Mara a favour.",
        "authority": "accepted_story",
        "status": "deleted",  # every status counts
    }
    filled = limits.MAX_MEMORIES - 1
    _fill(client, Memory, [row | {"revision": r} for r in range(1, filled + 1)])
    with session_scope(sessions_of(client)) as session:  # the revisions given so far
        session.execute(update(Adventure).where(Adventure.id == aid).values(memory_revision=filled))
    body = {"text": "The bell rings at dawn."}
    assert client.post(f"/api/adventures/{aid}/memories", json=body).status_code == 201
    refused = client.post(f"/api/adventures/{aid}/memories", json=body)
    assert refused.status_code == 409, refused.text
    error = refused.json()["error"]
    assert error["code"] == "limit_reached"
    assert "holds 100,000 memories" in error["message"]
    assert "at most 100,000" in error["message"]


# -- nesting -----------------------------------------------------------------------------------


def nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = [value]
    return value


def test_a_value_nested_deeper_than_an_export_ever_is_refused(client: TestClient) -> None:
    data = version_2_file()
    data["insights"] = [{"action": 2, "data": {"deep": nested(MAX_NESTING)}, "created_at": T0}]
    before = counts(client)
    response = client.post("/api/adventures/import", json=data)
    assert response.status_code == 400, response.text
    assert f"nests more than {MAX_NESTING} lists or objects deep" in response.text
    assert counts(client) == before


@pytest.mark.parametrize(
    "where",
    [
        lambda f, deep: f["insights"].append({"action": 2, "data": {"a": deep}}),
        lambda f, deep: f["actions"][0].update(type=deep),
        lambda f, deep: f["memories"][0].update(status=deep),
        lambda f, deep: f["adventure"].update(extra=deep),
    ],
)
def test_a_value_nested_past_the_recursion_limit_is_a_sentence_not_a_crash(
    client: TestClient, where: Any
) -> None:
    """What a file on disk can hold (the command line reads it): deeper than Python
    recurses, anywhere in the file."""
    data = version_2_file()
    where(data, nested(5_000))
    with session_scope(sessions_of(client)) as session:
        uid = session.scalars(select(User.id)).one()
        with pytest.raises(InvalidInput, match="nests more than 32 lists or objects deep"):
            exchange.import_adventure(session, uid, data, memory_of(client))


def test_text_no_utf8_store_can_hold_is_a_sentence_not_a_crash(client: TestClient) -> None:
    """A file on disk can spell half a character (JSON's ``"\\ud800"``); the database
    cannot store it, so it is refused before anything is written."""
    data = version_2_file()
    data["actions"][2]["text"] = "You find a brass key \ud800 in the silt."
    with session_scope(sessions_of(client)) as session:
        uid = session.scalars(select(User.id)).one()
        with pytest.raises(InvalidInput, match="holds a lone surrogate"):
            exchange.import_adventure(session, uid, data, memory_of(client))


def test_a_scenario_id_longer_than_the_column_is_refused(client: TestClient) -> None:
    data = version_2_file()
    data["adventure"]["scenario"] = "s" * 65
    response = client.post("/api/adventures/import", json=data)
    assert response.status_code == 400, response.text
    assert "file.adventure.scenario must be null or a scenario id of at most 64" in response.text


def test_what_the_database_holds_past_an_import_limit_is_exported_and_refused_at_import(
    client: TestClient,
) -> None:
    """The export writes what the database holds, whatever it is; only an import holds a
    file to the limits, naming the value past one."""
    aid = client.post("/api/adventures/import", json=version_2_file()).json()["id"]
    with session_scope(sessions_of(client)) as session:
        session.execute(update(Memory).where(Memory.adventure_id == aid).values(text="x" * 2_001))
    exported = client.get(f"/api/adventures/{aid}/export")
    assert exported.status_code == 200, exported.text
    assert exported.json()["memories"][0]["text"] == "x" * 2_001
    refused = client.post("/api/adventures/import", json=exported.json())
    assert refused.status_code == 400, refused.text
    assert "file.memories[0].text must be text of at most 2,000 characters" in refused.text


# -- the write ---------------------------------------------------------------------------------


def test_a_refused_file_costs_the_database_nothing(sessions: sessionmaker[Session]) -> None:
    """The whole file is read before the first statement: a problem in its last entry
    leaves the database untouched, not written and rolled back."""
    data = story_file(2_000, memories=3)
    data["memories"][-1]["status"] = "lost"
    uid = local_user(sessions)
    refused = pytest.raises(InvalidInput, match=r"file\.memories\[2\]\.status")
    with statements(sessions) as seen, session_scope(sessions) as session, refused:
        exchange.import_adventure(session, uid, data, NullMemory())
    assert seen == []


def test_an_import_is_a_few_bulk_statements_whatever_its_length(
    sessions: sessionmaker[Session],
) -> None:
    """A long story is written in a handful of statements, so the write lock is held for
    the inserts alone (row by row, 3,000 actions took thousands of statements)."""
    uid = local_user(sessions)
    written = {}
    for length in (300, 3_000):
        data = story_file(length, memories=40, used_by=100)
        with statements(sessions) as seen, session_scope(sessions) as session:
            aid = exchange.import_adventure(session, uid, data, NullMemory()).id
        written[length] = len(seen)
        with session_scope(sessions) as session:
            assert exchange.export(session, aid, uid) == data  # nothing lost on the way
    assert written[300] <= 25, written
    assert written[3_000] == written[300], written  # bigger batches, not more statements


def test_branches_listed_children_first_are_written_parents_first(client: TestClient) -> None:
    data = story_file(4)
    chain = limits.MAX_BRANCHES
    data["branches"] = [
        {
            "key": key,
            "parent": key - 1 if key > 1 else None,
            "fork_depth": min(key - 1, 4),
            "forked_from_action": None,
            "name": f"Branch {key}",
            "created_at": T0,
        }
        for key in range(chain, 0, -1)  # the deepest first: every parent after its child
    ]
    response = client.post("/api/adventures/import", json=data)
    assert response.status_code == 201, response.text
    tree = client.get(f"/api/adventures/{response.json()['id']}/tree").json()
    by_name = {b["name"]: b for b in tree["branches"]}
    ids = [by_name[f"Branch {key}"]["id"] for key in range(1, chain + 1)]
    assert ids == sorted(ids)  # written root first
    assert by_name["Branch 2"]["parent_id"] == by_name["Branch 1"]["id"]
    assert by_name[f"Branch {chain}"]["parent_id"] == by_name[f"Branch {chain - 1}"]["id"]


def test_replies_that_used_a_memory_are_checked_in_linear_time(client: TestClient) -> None:
    """200 memories each used by all 5,000 replies: every entry is checked once, against a
    set (a check against the list before it cost 200 x 12.5 million comparisons)."""
    data = story_file(10_000, memories=200, used_by=5_000)
    replies = data["memories"][0]["used_by"]
    for memory in data["memories"]:
        memory["used_by"] = replies
    data["memories"][-1]["used_by"] = [*replies, replies[0]]  # refused at the very end
    started = time.perf_counter()
    response = client.post("/api/adventures/import", json=data)
    elapsed = time.perf_counter() - started
    assert response.status_code == 400, response.text
    assert "file.memories[199].used_by[5000] names the same action twice" in response.text
    assert elapsed < 20, elapsed


def test_more_uses_of_memories_than_an_adventure_holds_are_refused(client: TestClient) -> None:
    """201 memories each used by 5,000 replies: past the million uses one import may write
    (each a row of the write transaction), refused before anything is written."""
    data = story_file(10_000, memories=201, used_by=5_000)
    for memory in data["memories"]:
        memory["used_by"] = data["memories"][0]["used_by"]
    before = counts(client)
    response = client.post("/api/adventures/import", json=data)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "limit_reached"
    assert "more than 1,000,000 uses of memories by replies" in error["message"]
    assert "file.memories[200].used_by" in error["message"]
    assert counts(client) == before
