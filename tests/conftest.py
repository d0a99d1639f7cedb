"""Shared fixtures: a loopback model double, a migrated temporary database, an app client.

The database is a SQLite file in the test's temporary folder, or with ``--db=postgresql``
a database of its own in a throwaway PostgreSQL cluster (``talekeeper_testkit.pg``): the same
fixtures and tests run on either. ``database_url(path)`` is the database a test keeps
at ``path`` (the same one each time it asks); ``make_settings`` uses the data folder's.
Tests about one database itself are marked ``sqlite_only`` or ``postgresql_only`` (with
the reason) and are not collected on the other pass. A module whose tests never ask for a
database is marked ``no_database`` and is not collected on the PostgreSQL pass (it would
run there exactly as on SQLite); the SQLite pass fails such a test if it asks for one
(``data_env``, ``database_url``: the only ways a test reaches PostgreSQL).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from argon2 import PasswordHasher
from fastapi.testclient import TestClient

from talekeeper.services.accounts import create_user
from talekeeper.services.memory import int8
from talekeeper.settings import Settings, load_settings
from talekeeper.storage import migrate
from talekeeper.storage.db import make_engine, session_scope
from talekeeper.web.app import create_app
from talekeeper_testkit import pg
from talekeeper_testkit.double import ModelDouble

# pytest loads this file as ``conftest``; the test modules import it as ``tests.conftest``.
# One module, not two copies: the template database is made once, and what a test asked of
# it (``_asked``) is seen by the fixtures.
sys.modules.setdefault("tests.conftest", sys.modules[__name__])

# The Host the test clients send: the app answers only loopback names (and those the
# host allows), never FastAPI's default "testserver".
LOCAL = "http://localhost"
BACKENDS = ("sqlite", "postgresql")
ONLY = {"sqlite": "sqlite_only", "postgresql": "postgresql_only"}  # backend -> its marker


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--db",
        choices=BACKENDS,
        default="sqlite",
        help="the database the tests run on: sqlite (a file per test, the default) or "
        "postgresql (a throwaway local cluster, a database per test)",
    )
    parser.addoption(
        "--db-free",
        choices=("run", "skip"),
        default=None,
        help="the modules marked no_database: run them (the default on SQLite) or skip them "
        "(the default on PostgreSQL, where they would run exactly as on SQLite)",
    )
    parser.addoption(
        "--db-free-elsewhere",
        action="append",
        default=[],
        metavar="PATH",
        help="leave the modules marked no_database under PATH to the other pass (make test: "
        "the PostgreSQL pass runs those under its folders, evening out the two passes)",
    )


def pytest_report_header(config: pytest.Config) -> str:
    """The int8 ranking's kernel on this CPU (it differs by CPU: ``services/memory/int8``),
    so a failure that depends on the machine says which machine it was."""
    return int8.describe().line()


def pytest_sessionstart(session: pytest.Session) -> None:
    if session.config.getoption("--db") != "postgresql":
        return
    try:
        pg.active = pg.start()
    except FileNotFoundError as exc:  # not installed: the pass is skipped, in one message
        if os.environ.get(pg.REQUIRE_ENV):
            pytest.exit(str(exc), returncode=1)
        pg.missing = str(exc)
    except RuntimeError as exc:
        pytest.exit(str(exc), returncode=1)


def pytest_sessionfinish(session: pytest.Session) -> None:
    template = _template.pop("path", None)
    if template is not None:
        shutil.rmtree(template.parent, ignore_errors=True)
    if pg.active is not None:
        pg.active.cluster.stop()
        pg.active = None
    if pg.missing and session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        session.exitstatus = pytest.ExitCode.OK  # skipped for want of PostgreSQL: not a failure


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if pg.missing:
        terminalreporter.section("PostgreSQL pass skipped", yellow=True)
        terminalreporter.write_line(pg.missing)


BROWSER_TESTS = Path(__file__).resolve().parent / "browser"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test under ``tests/browser`` is marked ``browser`` (a ``pytestmark`` in a
    conftest marks nothing: pytest reads it from test modules only). Tests about one
    database itself are not collected on the other database's pass; without PostgreSQL,
    its pass collects only the database-free modules it was asked to run (``--db-free``)."""
    for item in items:
        if BROWSER_TESTS in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.browser)
    backend = config.getoption("--db")
    run_free = config.getoption("--db-free") or ("skip" if backend == "postgresql" else "run")
    elsewhere_free = [Path(p).resolve() for p in config.getoption("--db-free-elsewhere")]
    keep: list[pytest.Item] = []
    other: list[pytest.Item] = []
    for item in items:
        if item.get_closest_marker("no_database"):
            path = Path(str(item.path)).resolve()
            left = any(folder == path or folder in path.parents for folder in elsewhere_free)
            (keep if run_free == "run" and not left else other).append(item)
            continue
        if pg.missing:
            other.append(item)
            continue
        marks = {name: item.get_closest_marker(name) for name in ONLY.values()}
        for name, mark in marks.items():
            if mark is not None and not mark.args:
                raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.{name} needs its reason")
        elsewhere = [name for name, mark in marks.items() if mark and name != ONLY[backend]]
        (other if elsewhere else keep).append(item)
    if other:
        config.hook.pytest_deselected(items=other)
        items[:] = keep


def on_postgresql() -> bool:
    """Whether this is the PostgreSQL pass."""
    return pg.active is not None


# How many times a test asked for a database (``data_env``, ``database_url``): a test of a
# ``no_database`` module must not.
_asked = [0]


@pytest.fixture(autouse=True)
def _no_database_means_none(request: pytest.FixtureRequest) -> Iterator[None]:
    before = _asked[0]
    yield
    if request.node.get_closest_marker("no_database") and _asked[0] != before:
        pytest.fail(
            "this module is marked no_database (not run on the PostgreSQL pass) but the test "
            "asked for a database: remove the marker"
        )


# Settings the test process passes on to every Talekeeper it starts, when set in its own
# environment: ``make test`` runs the embedded models on one thread each, since its two
# passes already share the machine's cores (``tests/both_passes.sh``).
PASSED_ON = ("TALEKEEPER_THREADS",)


def passed_on() -> dict[str, str]:
    """The ``PASSED_ON`` settings this test process has."""
    return {name: os.environ[name] for name in PASSED_ON if os.environ.get(name)}


def threads_setting() -> int:
    """The threads setting passed on (0: the default), for tests that build the embedded
    provider themselves."""
    return int(passed_on().get("TALEKEEPER_THREADS", "0"))


def data_env(data: Path) -> dict[str, str]:
    """The environment that points Talekeeper at the data folder ``data`` and its database
    (on the PostgreSQL pass, the database ``make_settings`` gives the same folder), with
    the settings ``passed_on``."""
    _asked[0] += 1
    env = {**passed_on(), "TALEKEEPER_DATA_DIR": str(data)}
    if pg.active is not None:
        env["TALEKEEPER_DATABASE_URL"] = pg.active.url_for(str(data))
    return env


def data_database(data: Path) -> str:
    """The URL of the database Talekeeper uses with the data folder ``data``."""
    return data_env(data).get("TALEKEEPER_DATABASE_URL", f"sqlite:///{data / 'talekeeper.db'}")


_template: dict[str, Path] = {}


def sqlite_template() -> Path:
    """A SQLite file migrated to the head revision, made once per test process: a test's
    database starts as a copy of it (a copy takes a fraction of a millisecond, migrating
    through every revision a tenth of a second), as the PostgreSQL pass copies its
    template database."""
    found = _template.get("path")
    if found is None:
        found = Path(tempfile.mkdtemp(prefix="talekeeper-template-")) / "template.db"
        engine = make_engine(f"sqlite:///{found}")
        try:
            migrate.upgrade(engine)
        finally:
            engine.dispose()  # the write-ahead log checkpointed: the file alone is the database
        _template["path"] = found
    return found


def migrated_sqlite(path: Path) -> None:
    """``path`` becomes a migrated database (a copy of the template) unless it exists."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(sqlite_template(), path)


def database_url(path: Path, *, blank: bool = False) -> str:
    """The database a test keeps at ``path`` (the same one for the same path): that SQLite
    file, or on the PostgreSQL pass a database of its own; migrated unless ``blank`` (a
    copy of a migrated template on either), where ``upgrade`` migrates it."""
    _asked[0] += 1
    if pg.active is None:
        if not blank:
            migrated_sqlite(path)
        return f"sqlite:///{path}"
    return pg.active.url_for(str(path), blank=blank)


@pytest.fixture(autouse=True)
def _drop_test_databases() -> Iterator[None]:
    """On the PostgreSQL pass, the databases a test made are dropped when it ends."""
    databases = pg.active
    mark = databases.made if databases is not None else 0
    yield
    if databases is not None and pg.active is databases:
        databases.drop_since(mark)


@pytest.fixture
def double() -> Iterator[ModelDouble]:
    with ModelDouble() as server:
        yield server


def make_settings(tmp_path: Path, *, fresh: bool = False, **env: str) -> Settings:
    """Settings over the data folder ``tmp_path/data``, whose database starts migrated (a
    copy of the template; the app's own upgrade then has nothing to do), or with ``fresh``
    as a new install finds it: no folder yet."""
    values = {**passed_on(), "TALEKEEPER_DATA_DIR": str(tmp_path / "data")}
    values.update({"TALEKEEPER_" + k.upper(): v for k, v in env.items()})
    if "database_url" not in env:
        data = Path(values["TALEKEEPER_DATA_DIR"])
        values = data_env(data) | values
        if pg.active is None and not fresh:
            migrated_sqlite(data / "talekeeper.db")
    return load_settings(values)


def double_settings(tmp_path: Path, double: ModelDouble, **env: str) -> Settings:
    """Every model on the double (narrator, embeddings, summaries), with ``env`` over it."""
    values = {
        "endpoint_url": double.url,
        "model": "double-narrator",
        "embedding_model": "double-embed",
        "summary_model": "double-summary",
        "timeout": "2",
    }
    return make_settings(tmp_path, **(values | env))


@pytest.fixture
def endpoint_settings(tmp_path: Path, double: ModelDouble) -> Settings:
    return double_settings(tmp_path, double)


@pytest.fixture
def client(endpoint_settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(endpoint_settings), base_url=LOCAL) as test_client:
        yield test_client


@pytest.fixture
def local_client(endpoint_settings: Settings) -> Iterator[TestClient]:
    """Local mode only, where a module runs its other tests in both modes (``each_mode``)."""
    with TestClient(create_app(endpoint_settings), base_url=LOCAL) as test_client:
        yield test_client


@pytest.fixture
def app_client(tmp_path: Path, double: ModelDouble) -> Iterator[TestClient]:
    """The app on the model double with the extractive writer, for tests that drive the
    memory system through the API."""
    settings = double_settings(tmp_path, double, summary_model="extractive", timeout="5")
    with TestClient(create_app(settings), base_url=LOCAL) as test_client:
        yield test_client


# Accounts mode for tests: argon2 at its lowest cost for the accounts the tests make (sign-in
# verifies with the parameters stored in the hash).
TEST_HASHER = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
TEST_PASSWORD = "correct horse battery"
MODES = ("local", "accounts")


def each_mode(mode: str, tmp_path: Path, double: ModelDouble, **env: str) -> Iterator[TestClient]:
    """The app on the double in ``mode``: in accounts mode, signed in (its cookie kept by the
    client) as an account that took over the local user, so every route is exercised through
    the auth layer as a player's browser would."""
    if mode == "local":
        settings = double_settings(tmp_path, double, **env)
    else:
        settings = double_settings(tmp_path, double, auth="accounts", **env)
    with TestClient(create_app(settings), base_url=LOCAL) as test_client:
        if mode == "accounts":
            runtime = test_client.app.state.runtime  # type: ignore[attr-defined]
            with session_scope(runtime.sessions) as session:
                create_user(session, "player", TEST_PASSWORD, hasher=TEST_HASHER)
            answer = test_client.post(
                "/api/auth/login", json={"username": "player", "password": TEST_PASSWORD}
            )
            assert answer.status_code == 200, answer.text
        yield test_client
