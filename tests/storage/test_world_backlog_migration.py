"""Migration 0017 on a database that already holds stories: every adventure without a
world (no entity, no event) is put in the world's backlog, to be read once by the next
start of background work (``services.exchange.backlog``); one that has a world already is
not; the downgrade drops the backlog alone. An adventure made after the migration is never
in it."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from sqlalchemy import Engine, inspect, text
from tests.conftest import database_url

from talekeeper.storage import migrate
from talekeeper.storage.db import make_engine

NOW = "2026-12-09 10:00:00"


def _adventure(engine: Engine, title: str) -> tuple[int, int, int]:
    """An adventure with a branch and one action; their ids."""
    with engine.begin() as connection:
        adventure = connection.execute(
            text(
                "INSERT INTO adventures (user_id, title, persona_name, persona_pronouns, "
                "persona_description, ai_instructions, plot_essentials, authors_note, "
                "auto_summarize, memory_bank, action_rows, created_at, updated_at) "
                "VALUES (1, :t, '', '', '', '', '', '', true, true, 1, :n, :n) RETURNING id"
            ),
            {"t": title, "n": NOW},
        ).scalar_one()
        branch = connection.execute(
            text(
                "INSERT INTO branches (adventure_id, fork_depth, name, created_at) "
                "VALUES (:a, 0, 'Main', :n) RETURNING id"
            ),
            {"a": adventure, "n": NOW},
        ).scalar_one()
        action = connection.execute(
            text(
                "INSERT INTO actions (adventure_id, branch_id, depth, type, text, state, take, "
                "created_at) VALUES (:a, :b, 0, 'narration', 'You pick up the brass key.', "
                "'active', 1, :n) RETURNING id"
            ),
            {"a": adventure, "b": branch, "n": NOW},
        ).scalar_one()
    return int(adventure), int(branch), int(action)


def _backlog(engine: Engine) -> list[tuple[int, int, object]]:
    with engine.connect() as connection:
        query = text("SELECT adventure_id, failures, last_error FROM world_backlog ORDER BY 1")
        return [(int(a), int(f), e) for a, f, e in connection.execute(query)]


def test_0017_puts_each_adventure_without_a_world_in_the_backlog(tmp_path: Path) -> None:
    engine = make_engine(database_url(tmp_path / "tk.db", blank=True))
    migrate.upgrade(engine, "0016")
    unread, _, _ = _adventure(engine, "from before the world")
    entity_only, _, _ = _adventure(engine, "a player's entity, its event removed")
    played, branch, action = _adventure(engine, "played since the world was kept")
    with engine.begin() as connection:
        add_entity = text(
            "INSERT INTO world_entities (adventure_id, kind, name, key, aliases, created_at) "
            "VALUES (:a, 'item', 'the brass key', 'brass key', '[]', :n) RETURNING id"
        )
        connection.execute(add_entity, {"a": entity_only, "n": NOW})
        key = connection.execute(add_entity, {"a": played, "n": NOW}).scalar_one()
        connection.execute(
            text(
                "INSERT INTO world_events (adventure_id, action_id, branch_id, depth, kind, "
                "object_id, origin, evidence, dismissed, created_at) VALUES "
                "(:a, :c, :b, 0, 'took', :k, 'rules', 'You pick up the brass key.', false, :n)"
            ),
            {"a": played, "c": action, "b": branch, "k": key, "n": NOW},
        )
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.head_revision(engine)
    assert _backlog(engine) == [(unread, 0, None)]
    _adventure(engine, "made after the upgrade")
    assert _backlog(engine) == [(unread, 0, None)]
    with engine.begin() as connection:  # a deleted adventure leaves the backlog with it
        connection.execute(text("DELETE FROM adventures WHERE id = :a"), {"a": unread})
    assert _backlog(engine) == []
    command.downgrade(migrate.alembic_config(engine), "0016")
    with engine.connect() as connection:
        assert "world_backlog" not in inspect(connection).get_table_names()
        assert connection.execute(text("SELECT count(*) FROM adventures")).scalar() == 3
        assert connection.execute(text("SELECT count(*) FROM world_events")).scalar() == 1
    engine.dispose()
