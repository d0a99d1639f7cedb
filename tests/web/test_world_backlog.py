"""Upgrading a database from before the world (docs/world.md, "Upgrading from a version
before the world"): a story played, its database taken back to revision 0014 (no world
tables, so no world), then started again on the newest revision. The start of background
work reads every branch of it with the rules, once, as play read it: the World tab shows
the location and inventory of the current branch, and a fork keeps its own. An adventure
made after the upgrade is never read again; a second start changes nothing; a failure on
one adventure leaves it in the backlog, the others read, and the next start reads it; an
adventure that gained a world before it was read keeps that world; two readers at once
write each world once; a story changed while it was read is read again.

Real parts: the app on a real temporary database (SQLite, or PostgreSQL with
``--db=postgresql``) taken down and up by the migrations, turns against the model double.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from alembic import command
from fastapi.testclient import TestClient
from sqlalchemy import Engine, inspect, text
from tests.conftest import LOCAL, double_settings
from tests.kit.world_api import turn, untimed, world_of

from talekeeper.services.exchange import backlog, world
from talekeeper.services.memory.base import NullMemory
from talekeeper.services.story.tree import Story
from talekeeper.services.world.events import GivenEvent, add_player_event
from talekeeper.settings import Settings
from talekeeper.storage import migrate
from talekeeper.storage.db import make_engine, make_session_factory, session_scope
from talekeeper.storage.vocabulary import EventKind
from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble

WORLD_TABLES = {"world_entities", "world_events", "world_readings", "world_backlog"}
WHISTLE = "You pick up a tin whistle."  # the second adventure's story


@dataclass
class Played:
    """A story as play left it: its branches, the world play read on each, its export."""

    adventure: int
    main: int  # the branch with the retried take
    fork: int  # the current branch, forked after the first reply
    worlds: dict[int, tuple[dict[str, Any], list[dict[str, Any]]]]  # by branch
    export: dict[str, Any]
    other: int  # a second adventure, a story of one turn


@contextmanager
def app(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        yield client


def switch(client: TestClient, aid: int, branch: int) -> None:
    answer = client.post(f"/api/adventures/{aid}/switch-branch", json={"branch_id": branch})
    assert answer.status_code == 200, answer.text


def play(client: TestClient, double: ModelDouble) -> Played:
    """Three turns, the last retried, and a fork from the first reply with a turn of its
    own; and a second adventure of one turn."""
    made = client.post("/api/adventures", json={"scenario": "lantern-coast"})
    assert made.status_code == 201, made.text
    aid, main = int(made.json()["id"]), int(made.json()["current_branch_id"])
    double.script(
        "You pick up the brass key. Old Maren arrives.",
        "You walk into the Salt Market.",
        "You pick up a lantern.",
        "You pick up a coil of rope.",  # the retry's take
        "You walk into the mill. You pick up a sack of flour.",  # the fork's turn
        WHISTLE,
    )
    first = turn(client, aid, "search the quay")
    turn(client, aid, "go on")
    turn(client, aid, "look around")
    assert client.post(f"/api/adventures/{aid}/retry").status_code == 200
    forked = client.post(f"/api/actions/{first['reply']['id']}/fork", json={"name": "Sea road"})
    assert forked.status_code == 201, forked.text
    fork = int(forked.json()["branch_id"])
    turn(client, aid, "head out")
    worlds = {fork: world_of(client, aid)}
    switch(client, aid, main)
    worlds[main] = world_of(client, aid)
    switch(client, aid, fork)
    exported = client.get(f"/api/adventures/{aid}/export").json()
    other = int(client.post("/api/adventures", json={"title": "Whistle"}).json()["id"])
    turn(client, other, "look")
    return Played(aid, main, fork, worlds, exported, other)


def engine_of(settings: Settings) -> Engine:
    return make_engine(settings.resolved_database_url)


def before_the_world(settings: Settings) -> None:
    """The database taken back to 0014: the story stays, the world's tables go."""
    engine = engine_of(settings)
    command.downgrade(migrate.alembic_config(engine), "0014")
    assert not WORLD_TABLES & set(inspect(engine).get_table_names())
    engine.dispose()


def upgraded(settings: Settings, double: ModelDouble) -> Played:
    """A story played, then its database as a version before the world left it."""
    with app(settings) as client:
        played = play(client, double)
    before_the_world(settings)
    return played


def rows(settings: Settings, query: str) -> list[tuple[Any, ...]]:
    engine = engine_of(settings)
    with engine.connect() as connection:
        found = [tuple(r) for r in connection.execute(text(query))]
    engine.dispose()
    return found


def waiting(settings: Settings) -> list[tuple[Any, ...]]:
    return rows(settings, "SELECT adventure_id, failures, last_error FROM world_backlog")


def world_rows(settings: Settings) -> list[tuple[Any, ...]]:
    """Every world row of the database, ids included."""
    return rows(settings, "SELECT * FROM world_entities ORDER BY id") + rows(
        settings, "SELECT * FROM world_events ORDER BY id"
    )


def names(refs: list[dict[str, Any]]) -> list[str]:
    return [r["name"] for r in refs]


def test_an_upgraded_story_has_the_world_play_read_on_every_branch(
    tmp_path: Path, double: ModelDouble
) -> None:
    settings = double_settings(tmp_path, double)
    played = upgraded(settings, double)
    aid = played.adventure
    with app(settings) as client:
        state = client.get(f"/api/adventures/{aid}/world").json()  # the fork, the current one
        assert state["location"]["name"] == "the mill"
        assert names(state["inventory"]) == ["the brass key", "a sack of flour"]
        assert world_of(client, aid) == played.worlds[played.fork]
        switch(client, aid, played.main)
        state = client.get(f"/api/adventures/{aid}/world").json()
        assert state["location"]["name"] == "the Salt Market"
        assert names(state["inventory"]) == ["the brass key", "a coil of rope"]  # the retry's
        assert world_of(client, aid) == played.worlds[played.main]
        events = client.get(f"/api/adventures/{aid}/world/events").json()
        assert {e["origin"] for e in events} == {"rules"}
        # Every event, on every branch and take, as play wrote it (but for when).
        exported = client.get(f"/api/adventures/{aid}/export").json()
        for section in ("world_entities", "world_events"):
            assert untimed(exported[section]) == untimed(played.export[section]), section
        whistle = client.get(f"/api/adventures/{played.other}/world").json()
        assert names(whistle["inventory"]) == ["a tin whistle"]
    assert waiting(settings) == []


def test_a_second_start_changes_nothing_and_a_later_adventure_is_never_read(
    tmp_path: Path, double: ModelDouble
) -> None:
    settings = double_settings(tmp_path, double)
    upgraded(settings, double)
    with app(settings) as client:
        later = int(client.post("/api/adventures", json={"title": "Later"}).json()["id"])
        double.script("You pick up a copper bell.")
        turn(client, later, "look")
    # A world emptied after it was read as it was played: nothing puts it back.
    engine = engine_of(settings)
    with engine.begin() as connection:
        for table in ("world_events", "world_entities"):
            connection.execute(text(f"DELETE FROM {table} WHERE adventure_id = :a"), {"a": later})
    engine.dispose()
    before = world_rows(settings)
    assert before  # the upgraded stories' worlds
    with app(settings) as client:
        assert client.get(f"/api/adventures/{later}/world/events").json() == []
    assert world_rows(settings) == before


def test_a_failed_reading_stays_in_the_backlog_and_the_next_start_reads_it(
    tmp_path: Path, double: ModelDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = double_settings(tmp_path, double)
    played = upgraded(settings, double)
    real = world.derived

    def failing(branches: Any, actions: Any, since: Any) -> Any:
        if any(a.text == WHISTLE for a in actions):
            raise RuntimeError("the rules tripped")
        return real(branches, actions, since)

    monkeypatch.setattr(world, "derived", failing)
    with app(settings) as client:
        inventory = client.get(f"/api/adventures/{played.adventure}/world").json()["inventory"]
        assert names(inventory) == ["the brass key", "a sack of flour"]
        assert client.get(f"/api/adventures/{played.other}/world/events").json() == []
    assert waiting(settings) == [(played.other, 1, "RuntimeError: the rules tripped")]
    monkeypatch.undo()
    with app(settings) as client:
        inventory = client.get(f"/api/adventures/{played.other}/world").json()["inventory"]
        assert names(inventory) == ["a tin whistle"]
    assert waiting(settings) == []


def test_an_adventure_given_a_world_before_its_reading_keeps_that_world(
    tmp_path: Path, double: ModelDouble
) -> None:
    settings = double_settings(tmp_path, double)
    played = upgraded(settings, double)
    engine = engine_of(settings)
    migrate.upgrade(engine)  # as a start would, before the background work
    assert sorted(r[0] for r in waiting(settings)) == [played.adventure, played.other]
    [(owner,)] = rows(settings, f"SELECT user_id FROM adventures WHERE id = {played.other}")
    with session_scope(make_session_factory(engine)) as session:
        story = Story.load(session, played.other, owner, NullMemory())
        add_player_event(story, GivenEvent(EventKind.TOOK, object="a brass horn"))
    engine.dispose()
    with app(settings) as client:
        events = client.get(f"/api/adventures/{played.other}/world/events").json()
        assert [(e["object"], e["origin"]) for e in events] == [("a brass horn", "player")]
        assert world_of(client, played.adventure) == played.worlds[played.fork]
    assert waiting(settings) == []


def reader(settings: Settings, outcomes: list[dict[int, backlog.Outcome]]) -> threading.Thread:
    """A reader of the backlog with an engine of its own, as another process has."""

    def run() -> None:
        engine = engine_of(settings)
        outcomes.append(backlog.read_backlog(make_session_factory(engine)))
        engine.dispose()

    return threading.Thread(target=run)


def derived_then(monkeypatch: pytest.MonkeyPatch, then: Callable[[list[Any]], None]) -> None:
    """``world.derived``, with ``then`` run after each derivation (given the actions it
    read), before the write."""
    real = world.derived

    def derive(branches: Any, actions: Any, since: Any) -> Any:
        found = real(branches, actions, since)
        then(actions)
        return found

    monkeypatch.setattr(world, "derived", derive)


def test_two_readers_at_once_write_each_world_once(
    tmp_path: Path, double: ModelDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = double_settings(tmp_path, double)
    played = upgraded(settings, double)
    engine = engine_of(settings)
    migrate.upgrade(engine)
    engine.dispose()
    both = threading.Barrier(2, timeout=20)
    derived_then(monkeypatch, lambda _: both.wait())  # each has read each story when it writes
    # One order for both (each process's own is random), so that each reads every story.
    monkeypatch.setattr(backlog, "random", SimpleNamespace(shuffle=lambda ids: None))
    outcomes: list[dict[int, backlog.Outcome]] = []
    readers = [reader(settings, outcomes), reader(settings, outcomes)]
    for thread in readers:
        thread.start()
    for thread in readers:
        thread.join(60)
    assert len(outcomes) == 2
    for aid in (played.adventure, played.other):
        assert sorted(o[aid].name for o in outcomes) == ["GONE", "READ"]
    monkeypatch.undo()
    with app(settings) as client:
        assert world_of(client, played.adventure) == played.worlds[played.fork]
        exported = client.get(f"/api/adventures/{played.adventure}/export").json()
        assert untimed(exported["world_events"]) == untimed(played.export["world_events"])


def test_a_story_changed_while_it_was_read_is_read_again(
    tmp_path: Path, double: ModelDouble, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = double_settings(tmp_path, double)
    played = upgraded(settings, double)
    engine = engine_of(settings)
    migrate.upgrade(engine)
    changed: list[bool] = []

    def change(actions: list[Any]) -> None:
        """Once: the second adventure's reply says more, after it was read."""
        if not changed and any(a.text == WHISTLE for a in actions):
            changed.append(True)
            with engine.begin() as connection:
                connection.execute(
                    text("UPDATE actions SET text = :t WHERE text = :w"),
                    {"t": WHISTLE + " You pick up a silver bell.", "w": WHISTLE},
                )

    derived_then(monkeypatch, change)
    outcomes = backlog.read_backlog(make_session_factory(engine))
    engine.dispose()
    assert outcomes == {a: backlog.Outcome.READ for a in (played.adventure, played.other)}
    monkeypatch.undo()
    with app(settings) as client:
        inventory = client.get(f"/api/adventures/{played.other}/world").json()["inventory"]
        assert names(inventory) == ["a tin whistle", "a silver bell"]
