from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, select, text

from talekeeper.storage import migrate
from talekeeper.storage.db import make_engine, make_session_factory, session_scope
from talekeeper.storage.models import Base, User
from talekeeper.storage.repositories.users import UserRepository


def test_a_blank_database_migrates_to_head_with_the_local_user(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'nested' / 'tk.db'}")
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.head_revision(engine)
    assert {"users", "user_settings", "ai_calls"} <= set(inspect(engine).get_table_names())
    with engine.connect() as connection:
        assert connection.execute(text("SELECT name FROM users")).scalars().all() == ["local"]


def test_models_and_migrations_agree(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'tk.db'}")
    migrate.upgrade(engine)
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []


def test_sqlite_runs_with_wal_foreign_keys_and_a_busy_timeout(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'tk.db'}")
    with engine.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() == 5000


def test_a_unit_of_work_rolls_back_on_error_and_settings_round_trip(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'tk.db'}")
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
    engine = make_engine(f"sqlite:///{tmp_path / 'tk.db'}")
    migrate.upgrade(engine, "0002")
    with engine.begin() as connection:
        now = "2026-12-01 10:00:00"
        for title, summary in (("kept", "Mara found the key."), ("empty", "")):
            adventure = connection.execute(
                text(
                    "INSERT INTO adventures (user_id, title, persona_name, persona_pronouns, "
                    "persona_description, ai_instructions, plot_essentials, authors_note, "
                    "story_summary, auto_summarize, memory_bank, created_at, updated_at) "
                    "VALUES (1, :t, '', '', '', '', '', '', :s, 1, 1, :n, :n)"
                ),
                {"t": title, "s": summary, "n": now},
            ).lastrowid
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
