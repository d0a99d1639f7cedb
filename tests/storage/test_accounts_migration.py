"""Migration 0007 (accounts) on a database that already holds a story: every row stays, the
local user gains no password, and the first account then takes the story over."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from argon2 import PasswordHasher
from sqlalchemy import inspect, text
from tests.conftest import database_url

from talekeeper.services import accounts
from talekeeper.storage import migrate
from talekeeper.storage.db import make_engine, make_session_factory, session_scope

FAST = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
NOW = "2026-12-01 10:00:00"


def _story_at_0006(url: str) -> None:
    """The local user with an adventure, a branch, an action and a setting, at 0006."""
    engine = make_engine(url)
    migrate.upgrade(engine, "0006")
    with engine.begin() as connection:
        adventure = connection.execute(
            text(
                "INSERT INTO adventures (user_id, title, persona_name, persona_pronouns, "
                "persona_description, ai_instructions, plot_essentials, authors_note, "
                "auto_summarize, memory_bank, action_rows, created_at, updated_at) "
                "VALUES (1, 'kept', '', '', '', '', '', '', true, true, 1, :n, :n) RETURNING id"
            ),
            {"n": NOW},
        ).scalar_one()
        branch = connection.execute(
            text(
                "INSERT INTO branches (adventure_id, fork_depth, name, created_at) "
                "VALUES (:a, 0, 'Main', :n) RETURNING id"
            ),
            {"a": adventure, "n": NOW},
        ).scalar_one()
        connection.execute(
            text(
                "INSERT INTO actions (adventure_id, branch_id, depth, type, text, state, take, "
                "created_at) VALUES (:a, :b, 0, 'do', 'open the door', 'active', 1, :n)"
            ),
            {"a": adventure, "b": branch, "n": NOW},
        )
        connection.execute(
            text(
                "INSERT INTO user_settings (user_id, key, value, updated_at) "
                "VALUES (1, 'reply_tokens', '120', :n)"
            ),
            {"n": NOW},
        )
    engine.dispose()


def _counts(url: str) -> tuple[int, ...]:
    engine = make_engine(url)
    with engine.connect() as connection:
        found = tuple(
            int(connection.execute(text(f"SELECT count(*) FROM {table}")).scalar() or 0)
            for table in ("users", "adventures", "branches", "actions", "user_settings")
        )
    engine.dispose()
    return found


def test_0007_keeps_every_row_and_the_first_account_takes_the_story(tmp_path: Path) -> None:
    url = database_url(tmp_path / "tk.db", blank=True)
    _story_at_0006(url)
    assert _counts(url) == (1, 1, 1, 1, 1)
    engine = make_engine(url)
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.head_revision(engine)
    with engine.connect() as connection:
        user = connection.execute(
            text("SELECT id, name, password_hash, is_admin, disabled FROM users")
        ).one()
        assert tuple(user) == (1, "local", None, False, False)  # SQLite's 0 == False
        assert {"auth_sessions", "api_tokens"} <= set(inspect(connection).get_table_names())
    assert _counts(url) == (1, 1, 1, 1, 1)  # no copy of ``users`` cascaded a delete
    sessions = make_session_factory(engine)
    with session_scope(sessions) as session:
        mara = accounts.create_user(session, "mara", "lantern coast", admin=True, hasher=FAST)
    assert mara.id == 1
    with engine.connect() as connection:
        assert connection.execute(text("SELECT user_id FROM adventures")).scalar() == 1
    command.downgrade(migrate.alembic_config(engine), "0006")
    with engine.connect() as connection:
        columns = {c["name"] for c in inspect(connection).get_columns("users")}
        assert not {"password_hash", "is_admin", "disabled"} & columns
        assert "auth_sessions" not in inspect(connection).get_table_names()
    engine.dispose()
    assert _counts(url) == (1, 1, 1, 1, 1)
