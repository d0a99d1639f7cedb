"""What differs between SQLite and PostgreSQL, held the same on both (this file runs on
each pass): the database URL a host may set, column lengths PostgreSQL enforces, ids past
32 bits, the order rows are read in where the app keeps it, and a start whose database
server is not there.

Real parts: the app on the loopback model double, a migrated database (a SQLite file, or
PostgreSQL with ``--db=postgresql``).
"""

from __future__ import annotations

import logging
import os
import random
import sqlite3
import string
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker
from tests.conftest import LOCAL, database_url, double_settings, make_settings, on_postgresql

from talekeeper.cli.main import main
from talekeeper.core.errors import ConfigurationError
from talekeeper.services.common.limits import MAX_ID
from talekeeper.services.memory.base import NullMemory
from talekeeper.services.story import adventures
from talekeeper.setting_values import STORED_MAX
from talekeeper.settings import Settings
from talekeeper.storage import migrate
from talekeeper.storage.db import make_engine, make_session_factory, session_scope
from talekeeper.storage.models import Memory
from talekeeper.storage.repositories.memory import MemoryRepository
from talekeeper.storage.repositories.users import UserRepository
from talekeeper.web.app import create_app
from talekeeper_testkit import pg
from talekeeper_testkit.double import ModelDouble


@pytest.fixture
def sessions(tmp_path: Path) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(database_url(tmp_path / "tk.db"))
    migrate.upgrade(engine)
    yield make_session_factory(engine)
    engine.dispose()


# -- the database URL ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "mysql+pymysql://talekeeper:secret@db.example/talekeeper",
        "postgresql+asyncpg://talekeeper:secret@db.example/talekeeper",
        "postgresql+psycopg2://talekeeper:secret@db.example/talekeeper",
        "not a url at all",
    ],
)
def test_a_database_url_of_another_kind_is_refused_naming_both_forms(
    tmp_path: Path, url: str
) -> None:
    for attempt in (
        lambda: make_settings(tmp_path, database_url=url),
        lambda: make_engine(url),
    ):
        with pytest.raises(ConfigurationError) as refused:
            attempt()
        message = refused.value.message
        assert "TALEKEEPER_DATABASE_URL" in message
        assert "sqlite:///" in message and "postgresql+psycopg://" in message
        assert "secret" not in message  # a password in the URL is never repeated


@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
def test_a_bare_postgresql_url_means_psycopg(tmp_path: Path, scheme: str) -> None:
    url = f"{scheme}://talekeeper@/talekeeper?host=/nonexistent"
    assert make_settings(tmp_path, database_url=url).database_url == url
    engine = make_engine(url)
    try:
        assert engine.dialect.name == "postgresql" and engine.dialect.driver == "psycopg"
    finally:
        engine.dispose()


# -- lengths PostgreSQL enforces ---------------------------------------------------------------


@pytest.mark.parametrize("key", ["model", "summary_model", "embedding_model"])
def test_a_model_name_longer_than_its_column_is_refused(
    tmp_path: Path, double: ModelDouble, key: str
) -> None:
    """Model names are kept with every AI call and memory in columns of ``STORED_MAX``
    characters, which PostgreSQL enforces: a longer one is refused when it is saved (a
    400 naming the limit, or a start-up error), not lost at every call afterwards."""
    too_long = "m" * (STORED_MAX + 1)
    with TestClient(create_app(double_settings(tmp_path, double)), base_url=LOCAL) as client:
        answer = client.patch("/api/settings", json={key: too_long})
        assert answer.status_code == 400, answer.text
        assert f"at most {STORED_MAX} characters" in answer.json()["error"]["message"]
        assert client.get("/api/settings").json()["values"][key] != too_long
    with pytest.raises(ConfigurationError, match=f"at most {STORED_MAX}"):
        double_settings(tmp_path, double, **{key: too_long})


def test_an_endpoint_url_longer_than_its_column_is_refused(
    tmp_path: Path, double: ModelDouble
) -> None:
    too_long = double.url + "/" + "p" * STORED_MAX
    with TestClient(create_app(double_settings(tmp_path, double)), base_url=LOCAL) as client:
        answer = client.patch("/api/settings", json={"endpoint_url": too_long})
        assert answer.status_code == 400, answer.text
        assert f"the limit is {STORED_MAX}" in answer.json()["error"]["message"]
    # Credentials are not kept with the calls, so they do not count.
    long_password = double.url.replace("http://", "http://player:" + "k" * STORED_MAX + "@")
    assert double_settings(tmp_path, double, endpoint_url=long_password).endpoint_url


def test_a_model_name_as_long_as_its_column_is_logged_with_its_calls(tmp_path: Path) -> None:
    longest = "n" * STORED_MAX
    with ModelDouble(models=(longest, "double-embed", "double-summary")) as double:
        settings = double_settings(tmp_path, double, model=longest)
        with TestClient(create_app(settings), base_url=LOCAL) as client:
            adventure = client.post("/api/adventures", json={"title": "Long names"}).json()
            double.script("The lamp is lit.")
            turn = client.post(f"/api/adventures/{adventure['id']}/actions", json={"text": "go"})
            assert turn.status_code == 200, turn.text
            calls = client.get("/api/ai-calls", params={"kind": "narration"}).json()
    assert [(c["model"], c["status"]) for c in calls] == [(longest, "ok")]


# -- ids -----------------------------------------------------------------------------------


@pytest.mark.parametrize("number", [2**31, 2**40, MAX_ID])
def test_an_id_past_32_bits_is_not_found_never_an_error(
    tmp_path: Path, double: ModelDouble, number: int
) -> None:
    """Every id a client may send (up to ``MAX_ID``) fits the id columns on both databases:
    PostgreSQL's integer would refuse the query past 2**31 - 1 (a 500)."""
    with TestClient(create_app(double_settings(tmp_path, double)), base_url=LOCAL) as client:
        for path in (
            f"/api/adventures/{number}",
            f"/api/actions/{number}/insights",
            f"/api/memories/{number}/source",
            f"/api/cards/{number}",
        ):
            method = client.patch if path.startswith("/api/cards") else client.get
            answer = method(path, **({"json": {"name": "x"}} if method == client.patch else {}))
            assert answer.status_code == 404, (path, answer.text)
        calls = client.get("/api/ai-calls", params={"adventure_id": number})
        assert calls.status_code == 200 and calls.json() == []


# -- order -----------------------------------------------------------------------------------


def test_the_bank_reads_its_rows_in_revision_order(sessions: sessionmaker[Session]) -> None:
    """The bank keeps its rows in the order it read them (ties in ranking go to the earlier
    row). A use recorded on a memory does not change its revision, but on PostgreSQL the
    update can move the row to another page of the table (here its page is full: eight
    memories of 1,000 characters each), and read without an order the bank came out in
    another order than on SQLite."""
    with session_scope(sessions) as session:
        uid = UserRepository(session).local_user().id
        story = adventures.create(session, uid, {"title": "T", "opening": "Once."}, NullMemory())
        adventure = story.adventure
        first_action = story.head()
        assert first_action is not None and adventure.current_branch_id is not None
        words = random.Random(7)  # text that does not compress: the rows fill their page
        for revision in range(1, 9):
            filler = "".join(words.choice(string.ascii_letters) for _ in range(1000))
            session.add(
                Memory(
                    adventure_id=adventure.id,
                    branch_id=adventure.current_branch_id,
                    depth=0,
                    text=f"Memory {revision}: {filler}.",
                    authority="accepted_story",
                    revision=revision,
                )
            )
    with session_scope(sessions) as session:
        repo = MemoryRepository(session)
        ids = [row.id for row in repo.bank_rows(adventure.id)]
        repo.record_use(ids[:1], first_action.id, first_action.created_at)
    with session_scope(sessions) as session:
        assert [row.id for row in MemoryRepository(session).bank_rows(adventure.id)] == ids


# -- a server that is not there ----------------------------------------------------------------


def test_a_database_server_that_is_not_there_is_one_line_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The first connection of a start (the migrations') fails: the command says so in one
    sentence naming the setting, never a traceback."""
    for name in [n for n in os.environ if n.startswith("TALEKEEPER_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("TALEKEEPER_DATA_DIR", str(tmp_path / "data"))
    nowhere = f"postgresql+psycopg://talekeeper:secret@/talekeeper?host={tmp_path / 'none'}"
    monkeypatch.setenv("TALEKEEPER_DATABASE_URL", nowhere)
    assert main(["new", "--title", "Never"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("talekeeper: ")
    assert "could not open its database" in err and "TALEKEEPER_DATABASE_URL" in err
    assert "Traceback" not in err and "secret" not in err


def _refuse_replies(settings: Settings) -> None:
    """A trigger that refuses every reply row, standing in for a disk or schema fault."""
    if on_postgresql():
        with pg.connect(settings.database_url, autocommit=True) as outside:
            outside.execute(
                "CREATE FUNCTION refuse_replies() RETURNS trigger LANGUAGE plpgsql AS $$ "
                "BEGIN IF NEW.type = 'narration' THEN RAISE EXCEPTION 'replies refused'; "
                "END IF; RETURN NEW; END $$"
            )
            outside.execute(
                "CREATE TRIGGER refuse_replies BEFORE INSERT ON actions "
                "FOR EACH ROW EXECUTE FUNCTION refuse_replies()"
            )
        return
    database = sqlite3.connect(Path(settings.data_dir) / "talekeeper.db")
    with database:
        database.execute(
            "CREATE TRIGGER refuse_replies BEFORE INSERT ON actions "
            "WHEN NEW.type = 'narration' BEGIN SELECT RAISE(ABORT, 'replies refused'); END"
        )
    database.close()


def test_a_logged_database_error_shows_no_sql_parameters(
    tmp_path: Path, double: ModelDouble, caplog: pytest.LogCaptureFixture
) -> None:
    """A reply refused by the database: the error is logged with its SQL but without the
    story text it was saving, and the player still gets the reply's text in the answer."""
    reply = "Maren whispers the vault's combination: seven, nineteen, forty-two."
    settings = double_settings(tmp_path, double)
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        adventure = client.post("/api/adventures", json={"scenario": "lantern-coast"}).json()
        _refuse_replies(settings)
        double.script(reply)
        caplog.clear()
        with caplog.at_level(logging.ERROR):
            answer = client.post(
                f"/api/adventures/{adventure['id']}/actions",
                json={"text": "ask Maren for the secret combination"},
            )
    logged = caplog.text
    assert "replies refused" in logged and "INSERT INTO actions" in logged  # it was logged
    assert "SQL parameters hidden" in logged
    assert "seven, nineteen" not in logged and "secret combination" not in logged
    assert answer.status_code == 500
    error = answer.json()["error"]
    assert error["code"] == "internal_error" and "Traceback" not in answer.text
    assert error["code"] == "internal_error" and error["reply_text"] == reply
    assert error["reply_text"] == reply and error["action_saved"] is True
