"""The database layer on SQLite and PostgreSQL alike (``--db=postgresql`` runs this file
again on a throwaway PostgreSQL): migrations from a blank database, up and down; models
and migrations agree; units of work roll back, never lose an update to a race, and a
read never waits for a writer. Tests of SQLite itself (its file, WAL, busy timeout,
writer queue, the copy before a migration) are marked ``sqlite_only``."""

from __future__ import annotations

import logging
import re
import sqlite3
import stat
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, inspect, select, text
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import Session, sessionmaker
from tests.conftest import database_url, on_postgresql

from talekeeper.core.errors import ConfigurationError
from talekeeper.storage import migrate
from talekeeper.storage.db import (
    WriterQueue,
    make_engine,
    make_session_factory,
    read_scope,
    session_scope,
)
from talekeeper.storage.models import Base, User
from talekeeper.storage.postgresql import WRITER_LOCK
from talekeeper.storage.repositories.users import UserRepository
from talekeeper.storage.sqlite import native_alter_or_refuse
from talekeeper_testkit import pg

SQLITE_ITSELF = "about SQLite itself"
# Models against a database, as the migrations compare them (the job queue's tables left out).
COMPARE = {"compare_type": True, "include_name": migrate.ours}


def blank(path: Path) -> Engine:
    """An engine on a blank database (no tables): the SQLite file at ``path``, or a
    PostgreSQL database of its own."""
    return make_engine(database_url(path, blank=True))


def test_a_blank_database_migrates_to_head_with_the_local_user(tmp_path: Path) -> None:
    engine = blank(tmp_path / "nested" / "tk.db")
    assert migrate.current_revision(engine) is None
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.head_revision(engine)
    assert {"users", "user_settings", "ai_calls"} <= set(inspect(engine).get_table_names())
    with engine.connect() as connection:
        assert connection.execute(text("SELECT name FROM users")).scalars().all() == ["local"]


def test_models_and_migrations_agree(tmp_path: Path) -> None:
    engine = blank(tmp_path / "tk.db")
    migrate.upgrade(engine)
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts=COMPARE)
        assert compare_metadata(context, Base.metadata) == []


def test_down_to_nothing_and_up_again(tmp_path: Path) -> None:
    """Every migration's downgrade undoes its upgrade: down to base leaves no table but
    Alembic's own, and the way up again ends where a fresh database does."""
    engine = blank(tmp_path / "tk.db")
    migrate.upgrade(engine)
    command.downgrade(migrate.alembic_config(engine), "base")
    assert migrate.current_revision(engine) is None
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.head_revision(engine)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT name FROM users")).scalars().all() == ["local"]
        context = MigrationContext.configure(connection, opts=COMPARE)
        assert compare_metadata(context, Base.metadata) == []


@pytest.mark.sqlite_only(SQLITE_ITSELF)
def test_sqlite_runs_with_wal_foreign_keys_and_a_busy_timeout(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'tk.db'}")
    with engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 5000


def test_a_unit_of_work_rolls_back_on_error_and_settings_round_trip(tmp_path: Path) -> None:
    engine = blank(tmp_path / "tk.db")
    migrate.upgrade(engine)
    sessions = make_session_factory(engine)
    try:
        with session_scope(sessions) as session:
            session.add(User(name="ghost"))
            session.flush()
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    with session_scope(sessions) as session:
        assert session.scalar(select(User).where(User.name == "ghost")) is None
        repo = UserRepository(session)
        uid = repo.local_user().id
        repo.save_settings(uid, {"reply_tokens": 90, "model": "x"})
    with session_scope(sessions) as session:
        repo = UserRepository(session)
        repo.save_settings(uid, {"model": None})
        assert repo.settings(uid) == {"reply_tokens": 90}


def test_an_existing_story_summary_becomes_the_players_first_version(tmp_path: Path) -> None:
    engine = blank(tmp_path / "tk.db")
    migrate.upgrade(engine, "0002")
    with engine.begin() as connection:
        now = "2026-12-01 10:00:00"
        for title, summary in (("kept", "Mara found the key."), ("empty", "")):
            adventure = connection.execute(
                text(
                    "INSERT INTO adventures (user_id, title, persona_name, persona_pronouns, "
                    "persona_description, ai_instructions, plot_essentials, authors_note, "
                    "story_summary, auto_summarize, memory_bank, created_at, updated_at) "
                    "VALUES (1, :t, '', '', '', '', '', '', :s, true, true, :n, :n) RETURNING id"
                ),
                {"t": title, "s": summary, "n": now},
            ).scalar_one()
            connection.execute(
                text(
                    "INSERT INTO branches (adventure_id, fork_depth, name, created_at) "
                    "VALUES (:a, 0, 'Main', :n)"
                ),
                {"a": adventure, "n": now},
            )
    migrate.upgrade(engine)
    with engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT a.title, v.text, v.trigger, v.depth, v.covers_to FROM summary_versions v "
                "JOIN adventures a ON a.id = v.adventure_id"
            )
        ).all()
        columns = {c["name"] for c in inspect(connection).get_columns("adventures")}
    assert [tuple(r) for r in rows] == [("kept", "Mara found the key.", "user", -1, -1)]
    assert "story_summary" not in columns and "scene_location" in columns
    with engine.connect() as connection:  # nothing else was lost on the way (no cascade)
        assert connection.execute(text("SELECT count(*) FROM branches")).scalar() == 2
    command.downgrade(migrate.alembic_config(engine), "0002")  # back to its column
    with engine.connect() as connection:
        back = connection.execute(text("SELECT title, story_summary FROM adventures")).all()
    assert sorted(tuple(r) for r in back) == [("empty", ""), ("kept", "Mara found the key.")]


# -- 0004: claims with an owner, the count of action rows; the copy before migrating -----------


def _story_at_0003(engine: Engine) -> None:
    """One adventure with a branch, three actions and a claimed job, written at 0003."""
    migrate.upgrade(engine, "0003")
    now = "2026-12-01 10:00:00"
    with engine.begin() as connection:
        adventure = connection.execute(
            text(
                "INSERT INTO adventures (user_id, title, persona_name, persona_pronouns, "
                "persona_description, ai_instructions, plot_essentials, authors_note, "
                "auto_summarize, memory_bank, created_at, updated_at) "
                "VALUES (1, 'kept', '', '', '', '', '', '', true, true, :n, :n) RETURNING id"
            ),
            {"n": now},
        ).scalar_one()
        branch = connection.execute(
            text(
                "INSERT INTO branches (adventure_id, fork_depth, name, created_at) "
                "VALUES (:a, 0, 'Main', :n) RETURNING id"
            ),
            {"a": adventure, "n": now},
        ).scalar_one()
        for depth, state in ((0, "active"), (1, "take"), (1, "active")):
            connection.execute(
                text(
                    "INSERT INTO actions (adventure_id, branch_id, depth, type, text, state, "
                    "take, created_at) VALUES (:a, :b, :d, 'do', 'x', :s, 1, :n)"
                ),
                {"a": adventure, "b": branch, "d": depth, "s": state, "n": now},
            )
        connection.execute(
            text(
                "INSERT INTO derived_jobs (adventure_id, requested_at, claimed_at) "
                "VALUES (:a, :n, :n)"
            ),
            {"a": adventure, "n": now},
        )


def test_0004_counts_each_adventures_rows_and_downgrades_without_loss(tmp_path: Path) -> None:
    engine = blank(tmp_path / "tk.db")
    _story_at_0003(engine)
    migrate.upgrade(engine, "0013")
    with engine.connect() as connection:
        assert connection.execute(text("SELECT action_rows FROM adventures")).scalar() == 3
        job = connection.execute(text("SELECT claimed_at, claimed_by FROM derived_jobs")).one()
        assert job[0] is not None and job[1] is None  # a claim from before owners had none
    command.downgrade(migrate.alembic_config(engine), "0003")
    with engine.connect() as connection:
        assert "action_rows" not in {
            c["name"] for c in inspect(connection).get_columns("adventures")
        }
        assert "claimed_by" not in {
            c["name"] for c in inspect(connection).get_columns("derived_jobs")
        }
        assert connection.execute(text("SELECT count(*) FROM actions")).scalar() == 3
        assert connection.execute(text("SELECT count(*) FROM derived_jobs")).scalar() == 1


def test_0014_moves_waiting_jobs_to_one_queue_of_subjects_and_back(tmp_path: Path) -> None:
    engine = blank(tmp_path / "tk.db")
    _story_at_0003(engine)
    migrate.upgrade(engine, "0013")
    with engine.begin() as connection:
        connection.execute(text("UPDATE derived_jobs SET claimed_by = 'w1'"))
        before = connection.execute(
            text("SELECT adventure_id, requested_at, claimed_at FROM derived_jobs")
        ).one()
    migrate.upgrade(engine)
    with engine.connect() as connection:
        names = inspect(connection).get_table_names()
        assert "derived_jobs" not in names
        job = connection.execute(
            text(
                "SELECT kind, subject_id, requested_at, run_after, claimed_at, claimed_by "
                "FROM background_jobs"
            )
        ).one()
        assert tuple(job) == ("adventure", before[0], before[1], None, before[2], "w1")
        columns = {c["name"] for c in inspect(connection).get_columns("library_sources")}
        assert not {"claimed_by", "claimed_at"} & columns  # the indexer's own claims are gone
    command.downgrade(migrate.alembic_config(engine), "0013")
    with engine.connect() as connection:
        again = connection.execute(
            text("SELECT adventure_id, requested_at, claimed_at, claimed_by FROM derived_jobs")
        ).one()
        assert tuple(again) == (*before, "w1")
        columns = {c["name"] for c in inspect(connection).get_columns("library_sources")}
        assert {"claimed_by", "claimed_at"} <= columns


def test_0006_drops_the_keys_so_they_are_read_again_with_their_names(tmp_path: Path) -> None:
    engine = blank(tmp_path / "tk.db")
    _story_at_0003(engine)
    command.upgrade(migrate.alembic_config(engine), "0005")
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO memories (adventure_id, branch_id, depth, text, terms, authority, "
                "origin, writer, status, pinned, stale, revision, use_count, keyed, created_at, "
                "updated_at) SELECT id, (SELECT min(id) FROM branches), 1, 'Toen hates cabbage.', "
                "'toen hate cabbage', 'accepted_story', 'auto', '', 'active', false, false, 1, 0, "
                "true, created_at, created_at FROM adventures"
            )
        )
        connection.execute(
            text(
                "INSERT INTO memory_keys (memory_id, adventure_id, position, depth, text, terms) "
                "SELECT id, adventure_id, 0, 1, 'Toen hates cabbage.', 'toen hate cabbage' "
                "FROM memories"
            )
        )
    migrate.upgrade(engine)
    with engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM memory_keys")).scalar() == 0
        assert connection.execute(text("SELECT keyed FROM memories")).scalar() == 0  # false
        assert connection.execute(text("SELECT count(*) FROM memories")).scalar() == 1
        columns = {c["name"] for c in inspect(connection).get_columns("memory_keys")}
        assert "names" in columns


def test_0008_numbers_the_revisions_again_and_starts_each_counter_at_its_last(
    tmp_path: Path,
) -> None:
    """Duplicated revisions (a bulk change gave many memories one) become 1..n per adventure
    in (revision, id) order, the counter starts at n, and the index is unique from then on."""
    engine = blank(tmp_path / "tk.db")
    _story_at_0003(engine)
    command.upgrade(migrate.alembic_config(engine), "0007")
    insert = text(
        "INSERT INTO memories (adventure_id, branch_id, depth, text, terms, authority, origin, "
        "writer, status, pinned, stale, revision, use_count, keyed, created_at, updated_at) "
        "SELECT id, (SELECT min(id) FROM branches), 1, :text, '', 'accepted_story', 'auto', "
        "'', 'active', false, false, :revision, 0, false, created_at, created_at "
        "FROM adventures"
    )
    with engine.begin() as connection:
        for name, revision in (("c", 7), ("a", 3), ("b", 3), ("d", 9)):
            connection.execute(insert, {"text": name, "revision": revision})
    migrate.upgrade(engine)
    with engine.begin() as connection:
        rows = connection.execute(text("SELECT text, revision FROM memories ORDER BY id")).all()
        assert [tuple(r) for r in rows] == [("c", 3), ("a", 1), ("b", 2), ("d", 4)]
        assert connection.execute(text("SELECT memory_revision FROM adventures")).scalar() == 4
    with pytest.raises(IntegrityError), engine.begin() as connection:
        connection.execute(insert, {"text": "e", "revision": 4})
    command.downgrade(migrate.alembic_config(engine), "0007")
    with engine.begin() as connection:
        connection.execute(insert, {"text": "e", "revision": 4})  # no longer unique
        assert "memory_revision" not in {
            c["name"] for c in inspect(connection).get_columns("adventures")
        }


def test_0010_gives_existing_cards_the_rules_they_fired_by_and_downgrades_without_loss(
    tmp_path: Path,
) -> None:
    """A card written before 0010 is not always on, has no secondary keywords and the rule
    ANY (so it fires exactly as before); the way down drops the three columns and keeps
    the card."""
    engine = blank(tmp_path / "tk.db")
    _story_at_0003(engine)
    config = migrate.alembic_config(engine)
    command.upgrade(config, "0009")
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO story_cards (adventure_id, name, type, keywords, entry, notes, "
                "created_at, updated_at) SELECT id, 'Mara', 'character', '[\"mara\"]', "
                "'A smuggler.', '', created_at, created_at FROM adventures"
            )
        )
    migrate.upgrade(engine)
    with engine.begin() as connection:
        row = connection.execute(
            text("SELECT always_on, secondary_keywords, secondary_rule FROM story_cards")
        ).one()
        assert (bool(row[0]), row[1], row[2]) == (False, "[]", "any")
        connection.execute(  # the columns take the new rules
            text(
                "UPDATE story_cards SET always_on = :on, secondary_keywords = '[\"storm\"]', "
                "secondary_rule = 'none'"
            ),
            {"on": True},
        )
    command.downgrade(config, "0009")
    with engine.connect() as connection:
        columns = {c["name"] for c in inspect(connection).get_columns("story_cards")}
        assert not columns & {"always_on", "secondary_keywords", "secondary_rule"}
        card = connection.execute(text("SELECT name, keywords, entry FROM story_cards")).one()
        assert tuple(card) == ("Mara", '["mara"]', "A smuggler.")
    migrate.upgrade(engine)
    with engine.connect() as connection:
        row = connection.execute(text("SELECT always_on, secondary_rule FROM story_cards")).one()
        assert (bool(row[0]), row[1]) == (False, "any")


def test_0019_gives_cards_and_events_no_secret_and_downgrades_without_loss(
    tmp_path: Path,
) -> None:
    """Cards and events written before 0019 are no one's secret; the way down drops the
    two columns (natively: a batch copy would cascade) and keeps every card and event."""
    engine = blank(tmp_path / "tk.db")
    _story_at_0003(engine)
    migrate.upgrade(engine, "0018")
    with engine.begin() as connection:
        connection.execute(
            text(
                "INSERT INTO story_cards (adventure_id, name, type, keywords, entry, notes, "
                "created_at, updated_at) SELECT id, 'Cache', 'other', '[]', 'x', '', "
                "created_at, created_at FROM adventures"
            )
        )
        connection.execute(
            text(
                "INSERT INTO world_events (adventure_id, action_id, branch_id, depth, kind, "
                "value, origin, evidence, created_at) SELECT adventure_id, id, branch_id, "
                "depth, 'time', 'dusk', 'rules', '', created_at FROM actions WHERE depth = 0"
            )
        )
    migrate.upgrade(engine)
    for table in ("story_cards", "world_events"):
        with engine.begin() as connection:
            assert connection.execute(text(f"SELECT known_by FROM {table}")).scalar_one() is None
            connection.execute(text(f"UPDATE {table} SET known_by = '[\"Mara\"]'"))
    command.downgrade(migrate.alembic_config(engine), "0018")
    with engine.connect() as connection:
        for table in ("story_cards", "world_events"):
            assert "known_by" not in {c["name"] for c in inspect(connection).get_columns(table)}
        assert connection.execute(text("SELECT name FROM story_cards")).scalar_one() == "Cache"
        assert connection.execute(text("SELECT value FROM world_events")).scalar_one() == "dusk"
        assert connection.execute(text("SELECT count(*) FROM actions")).scalar_one() == 3


def test_0020_gives_adventures_the_default_budgets_and_downgrades_without_loss(
    tmp_path: Path,
) -> None:
    """Adventures from before 0020 have no budgets of their own (the defaults); the way
    down drops the column natively and keeps every adventure and action."""
    engine = blank(tmp_path / "tk.db")
    _story_at_0003(engine)
    migrate.upgrade(engine, "0019")
    migrate.upgrade(engine)
    with engine.begin() as connection:
        stored = connection.execute(text("SELECT section_budgets FROM adventures")).scalar_one()
        assert stored is None
        connection.execute(text("UPDATE adventures SET section_budgets = '{}'"))
    command.downgrade(migrate.alembic_config(engine), "0019")
    with engine.connect() as connection:
        columns = {c["name"] for c in inspect(connection).get_columns("adventures")}
        assert "section_budgets" not in columns
        assert connection.execute(text("SELECT count(*) FROM adventures")).scalar_one() == 1
        assert connection.execute(text("SELECT count(*) FROM actions")).scalar_one() == 3


@pytest.mark.sqlite_only("the copy is of SQLite's file; a PostgreSQL server backs up itself")
def test_an_older_database_is_copied_before_it_is_migrated(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tk.db"
    engine = make_engine(f"sqlite:///{path}")
    _story_at_0003(engine)
    reader = sqlite3.connect(path)  # while any connection is open, the WAL is not folded in
    reader.execute("SELECT count(*) FROM actions").fetchall()
    assert (tmp_path / "tk.db-wal").stat().st_size > 0  # the latest commits are in the WAL
    with caplog.at_level(logging.INFO, logger="talekeeper.storage.migrate"):
        migrate.upgrade(engine)
    reader.close()
    copies = sorted(tmp_path.glob("tk.db.backup-*"))
    assert [c.name.split("-")[1] for c in copies] == ["0003"]
    copy = copies[0]
    assert re.fullmatch(r"tk\.db\.backup-0003-\d{8}T\d{6}Z", copy.name)
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    assert str(copy) in caplog.text
    with closing(sqlite3.connect(copy)) as backup:  # the data as it was, WAL included
        assert backup.execute("SELECT version_num FROM alembic_version").fetchone() == ("0003",)
        assert backup.execute("SELECT count(*) FROM actions").fetchone() == (3,)
        columns = {row[1] for row in backup.execute("PRAGMA table_info(adventures)")}
        assert "action_rows" not in columns
    assert migrate.current_revision(engine) == migrate.head_revision(engine)


def test_a_fresh_or_current_database_is_not_copied(tmp_path: Path) -> None:
    engine = blank(tmp_path / "tk.db")
    migrate.upgrade(engine)  # fresh: nothing to keep
    migrate.upgrade(engine)  # already at head: nothing changes
    assert migrate.backup_before_upgrade(engine) is None
    assert list(tmp_path.glob("*.backup-*")) == []


def _counter(sessions: sessionmaker[Session]) -> None:
    with session_scope(sessions) as session:
        UserRepository(session).save_settings(UserRepository(session).local_user().id, {"n": 0})


def test_read_then_write_transactions_racing_each_other_never_fail_as_locked(
    tmp_path: Path,
) -> None:
    """Each unit reads a counter, lets the other thread commit, then writes it back: a
    deferred transaction would fail at its write (its snapshot is stale, and SQLite answers
    "database is locked" at once, without waiting); on PostgreSQL, READ COMMITTED alone
    would lose updates. A write unit takes the writer lock first, on both."""
    engine = make_engine(database_url(tmp_path / "tk.db"))
    migrate.upgrade(engine)
    sessions = make_session_factory(engine)
    _counter(sessions)
    errors: list[str] = []
    rounds = 60

    def bump() -> None:
        for _ in range(rounds):
            try:
                with session_scope(sessions) as session:
                    repo = UserRepository(session)
                    uid = repo.local_user().id
                    n = repo.settings(uid)["n"]
                    time.sleep(0.001)  # the other thread gets its turn here
                    repo.save_settings(uid, {"n": n + 1})
            except Exception as exc:  # noqa: BLE001 -- every failure is the finding
                errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=bump) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with read_scope(sessions) as session:
        repo = UserRepository(session)
        assert repo.settings(repo.local_user().id)["n"] == 2 * rounds  # no update was lost


class OutsideWriter:
    """Another process's connection to the same database, holding the writer lock."""

    def __init__(self, url: str, path: Path) -> None:
        self.connection: Any
        if on_postgresql():
            self.connection = pg.connect(url)
            self.connection.execute("SELECT pg_advisory_xact_lock(%s)", (WRITER_LOCK,))
        else:
            self.connection = sqlite3.connect(path, isolation_level=None)
            self.connection.execute("BEGIN IMMEDIATE")

    def release(self) -> None:
        self.connection.rollback()
        self.connection.close()


def test_a_read_unit_never_waits_for_a_writer_and_cannot_write(tmp_path: Path) -> None:
    url = database_url(tmp_path / "tk.db")
    engine = make_engine(f"{url}{'&' if '?' in url else '?'}timeout=2")
    migrate.upgrade(engine)
    sessions = make_session_factory(engine)
    outside = OutsideWriter(url, tmp_path / "tk.db")
    try:
        began = time.monotonic()
        with read_scope(sessions) as session:
            assert session.scalar(select(User.name)) == "local"
        assert time.monotonic() - began < 0.5
        refused = "readonly|read-only transaction"  # SQLite's words, PostgreSQL's
        with pytest.raises(DBAPIError, match=refused), read_scope(sessions) as session:
            session.add(User(name="intruder"))
            session.flush()
    finally:
        outside.release()
    with read_scope(sessions) as session:
        assert session.scalar(select(User).where(User.name == "intruder")) is None


def test_a_read_unit_sees_one_snapshot(tmp_path: Path) -> None:
    """A read unit's second read sees what its first saw, whatever was committed between
    them (SQLite's deferred transaction; REPEATABLE READ on PostgreSQL)."""
    engine = make_engine(database_url(tmp_path / "tk.db"))
    migrate.upgrade(engine)
    sessions = make_session_factory(engine)
    with read_scope(sessions) as reading:
        before = reading.scalars(select(User.name)).all()
        with session_scope(sessions) as writing:
            writing.add(User(name="newcomer"))
        assert reading.scalars(select(User.name)).all() == before
    with read_scope(sessions) as reading:
        assert "newcomer" in reading.scalars(select(User.name)).all()


@pytest.mark.sqlite_only(SQLITE_ITSELF)
def test_the_busy_timeout_comes_from_the_url_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'tk.db'}?timeout=0.25")
    with engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 250
    with pytest.raises(ConfigurationError, match="'timeout'"):
        make_engine(f"sqlite:///{tmp_path / 'tk.db'}?timeout=soon")


@pytest.mark.sqlite_only("the writer queue is SQLite's (PostgreSQL queues its lock itself)")
def test_the_writer_queue_hands_the_lock_over_in_arrival_order() -> None:
    """Writers that queued one after another get the lock in that order, and a newcomer
    never barges in ahead of a writer already waiting."""
    writers = WriterQueue()
    assert writers.acquire(1.0)
    order: list[int] = []

    def wait_turn(k: int) -> None:
        assert writers.acquire(10.0)
        order.append(k)
        writers.release()

    threads = []
    for k in range(6):
        thread = threading.Thread(target=wait_turn, args=(k,))
        thread.start()
        threads.append(thread)
        deadline = time.monotonic() + 10
        while writers.waiting < k + 1 and time.monotonic() < deadline:
            time.sleep(0.001)
        assert writers.waiting == k + 1
    writers.release()
    for thread in threads:
        thread.join()
    assert order == list(range(6))
    assert writers.acquire(0.0)  # free again once the queue is drained
    assert not writers.acquire(0.05)  # and held by whoever took it
    writers.release()


@pytest.mark.sqlite_only("the writer queue is SQLite's (PostgreSQL queues its lock itself)")
def test_a_writer_that_gives_up_leaves_the_queue() -> None:
    writers = WriterQueue()
    assert writers.acquire(1.0)
    assert not writers.acquire(0.05)
    assert writers.waiting == 0
    writers.release()
    assert writers.acquire(0.0)


def test_writers_of_one_process_take_the_lock_in_turn(tmp_path: Path) -> None:
    """Eight threads writing back to back through real sessions: a writer is overtaken by
    about the seven already waiting when it asked. The bound is four times that, because
    a loaded machine can pause a thread between reading the count and joining the queue
    (CI once saw 15); SQLite's own busy handler, which polls with growing sleeps, let a
    waiting writer be overtaken by hundreds, so the bound still tells the two apart. The
    exact order is the unit test above. On PostgreSQL the server queues the writer lock
    itself, and the same bound holds."""
    engine = make_engine(database_url(tmp_path / "tk.db"))
    migrate.upgrade(engine)
    sessions = make_session_factory(engine)
    threads, rounds = 8, 40
    committed = 0  # units finished, counted while each still holds the lock
    overtaken: list[int] = []

    def write(k: int) -> None:
        nonlocal committed
        for i in range(rounds):
            asked = committed
            with session_scope(sessions) as session:
                session.scalar(select(User.id).limit(1))  # the lock is ours from here
                overtaken.append(committed - asked)
                time.sleep(0.001)
                session.add(User(name=f"writer {k}.{i}"))
                session.flush()
                committed += 1

    workers = [threading.Thread(target=write, args=(k,)) for k in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(overtaken) == threads * rounds and committed == threads * rounds
    assert max(overtaken) <= 4 * (threads - 1)


def test_a_sqlite_too_old_to_alter_in_place_is_refused_saying_what_to_do() -> None:
    """Migrations that alter a table in place stop on a SQLite before 3.35 rather than copy
    it (a copy's drop would cascade); 3.35 and later go on."""
    with pytest.raises(RuntimeError, match=r"SQLite 3\.35 or newer to downgrade .*has 3\.34\.1"):
        native_alter_or_refuse("3.34.1", "downgrade")
    for fine in ("3.35.0", "3.45.1", "4.0"):
        native_alter_or_refuse(fine, "upgrade")
