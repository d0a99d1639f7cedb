"""Migration 0013 on a database that already holds replies with Insights: each snapshot that
recorded a ``cache`` placement gives its reply a placement record, read as the turn read it
from the snapshot; one that does not parse, or has no such layout, gives none; the snapshots
stay as they were, and the downgrade drops only the new table. An import reads the
snapshots of its file the same way (``services.exchange.placements``, which repeats the
migration's reading, since a migration imports no application code)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

from alembic import command
from sqlalchemy import inspect, text
from tests.conftest import database_url

from talekeeper.services.exchange.placements import read_layout
from talekeeper.services.prompt import placement as placement_record
from talekeeper.services.prompt.context import Placement
from talekeeper.storage import migrate
from talekeeper.storage.db import make_engine, make_session_factory, read_scope
from talekeeper.storage.repositories.story import StoryRepository

NOW = "2026-12-08 10:00:00"
PAGE = 500  # the migration's page of snapshots: the story below spans more than one

FULL = {
    "sections": [],
    "layout": {
        "name": "cache",
        "top_digest": "ef56",
        "history_start_depth": 4,
        "floating": {
            "memories": {"at_depth": 9, "digest": "ab12", "actions_before_end": 2},
            "story_cards": {"at_depth": 4, "digest": "cd34", "actions_before_end": 7},
        },
        "cards_held": [3, 1],
    },
}
# Before the cards were held: no ``cards_held``; an entry without a depth does not count.
OLDER = {
    "layout": {
        "name": "cache",
        "history_start_depth": None,
        "floating": {"memories": {"at_depth": "1"}, "authors_note": {"at_depth": 2, "digest": "x"}},
    }
}
NONE_GIVEN = [
    json.dumps({"layout": {"name": "classic"}}),
    json.dumps({"sections": [{"name": "history", "tokens": 12, "text": "x"}], "budget": {}}),
    json.dumps({"layout": {"name": "cache", "history_start_depth": "x", "floating": {}}}),
    json.dumps({"layout": {"name": "cache", "history_start_depth": 1, "floating": []}}),
    json.dumps([1, 2]),
    "{not json",
]


def _story_at_0012(url: str, snapshots: list[str]) -> list[int]:
    """An adventure whose narrations carry ``snapshots``, at 0012; their action ids."""
    engine = make_engine(url)
    migrate.upgrade(engine, "0012")
    with engine.begin() as connection:
        adventure = connection.execute(
            text(
                "INSERT INTO adventures (user_id, title, persona_name, persona_pronouns, "
                "persona_description, ai_instructions, plot_essentials, authors_note, "
                "auto_summarize, memory_bank, action_rows, created_at, updated_at) "
                "VALUES (1, 'kept', '', '', '', '', '', '', true, true, :rows, :n, :n) "
                "RETURNING id"
            ),
            {"n": NOW, "rows": len(snapshots)},
        ).scalar_one()
        branch = connection.execute(
            text(
                "INSERT INTO branches (adventure_id, fork_depth, name, created_at) "
                "VALUES (:a, 0, 'Main', :n) RETURNING id"
            ),
            {"a": adventure, "n": NOW},
        ).scalar_one()
        add = text(
            "INSERT INTO actions (adventure_id, branch_id, depth, type, text, state, take, "
            "created_at) VALUES (:a, :b, :d, 'narration', 'The tide.', 'active', 1, :n)"
        )
        connection.execute(
            add, [{"a": adventure, "b": branch, "d": d, "n": NOW} for d in range(len(snapshots))]
        )
        ids = list(connection.execute(text("SELECT id FROM actions ORDER BY depth")).scalars())
        connection.execute(
            text("INSERT INTO insights (action_id, data, created_at) VALUES (:a, :d, :n)"),
            [{"a": a, "d": d, "n": NOW} for a, d in zip(ids, snapshots, strict=True)],
        )
    engine.dispose()
    return ids


def test_0013_takes_each_cache_placement_from_its_snapshot_and_no_other(tmp_path: Path) -> None:
    url = database_url(tmp_path / "tk.db", blank=True)
    later = json.dumps(FULL)  # past the first page of snapshots
    snapshots = [json.dumps(FULL), json.dumps(OLDER), *NONE_GIVEN]
    snapshots += [json.dumps({"layout": {"name": "classic"}})] * PAGE + [later]
    ids = _story_at_0012(url, snapshots)
    engine = make_engine(url)
    migrate.upgrade(engine)
    assert migrate.current_revision(engine) == migrate.head_revision(engine)
    full = placement_record.Carried(
        Placement(4, {"memories": (9, "ab12"), "story_cards": (4, "cd34")}, "ef56"), (3, 1)
    )
    with read_scope(make_session_factory(engine)) as session:
        repo = StoryRepository(session)
        carried = {a: placement_record.read(repo.placement(a)) for a in ids}
        assert carried[ids[0]] == full
        assert carried[ids[1]] == placement_record.Carried(
            Placement(None, {"authors_note": (2, "x")}, ""), None
        )
        assert carried[ids[-1]] == full
        assert {a for a, c in carried.items() if c is not None} == {ids[0], ids[1], ids[-1]}
        stored = session.execute(text("SELECT data FROM insights ORDER BY action_id")).scalars()
        assert list(stored) == snapshots  # the snapshots are left as they are
    command.downgrade(migrate.alembic_config(engine), "0012")
    with engine.connect() as connection:
        assert "context_placements" not in inspect(connection).get_table_names()
        count = connection.execute(text("SELECT count(*) FROM insights")).scalar()
        assert count == len(snapshots)
    engine.dispose()


def _migration_0013() -> ModuleType:
    path = Path(migrate.__file__).parent / "migrations" / "versions" / "0013_context_placements.py"
    spec = importlib.util.spec_from_file_location("migration_0013", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_import_reads_a_snapshot_as_0013_read_it() -> None:
    """The same row from every snapshot the migration was written for (the import's file
    holds objects only), the held cards before an import translates them."""
    parse = _migration_0013().placement
    odd_top = {"layout": FULL["layout"] | {"top_digest": "f" * 65, "cards_held": [1, "2", True]}}
    objects = [json.loads(s) for s in NONE_GIVEN[:4]] + [FULL, OLDER, odd_top]
    for snapshot in objects:
        expected = parse(7, json.dumps(snapshot))
        found = read_layout(snapshot)
        if found is None:
            assert expected is None, snapshot
            continue
        placement, held = found
        record = placement_record.record(7, placement, held or [])
        if held is None:
            record.cards_held = None
        columns = ("action_id", "version", "history_start", "top_digest", "floating", "cards_held")
        assert {c: getattr(record, c) for c in columns} == expected, snapshot
