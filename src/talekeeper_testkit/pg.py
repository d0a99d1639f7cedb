"""A throwaway PostgreSQL cluster for the PostgreSQL pass of the suite (``--db=postgresql``).

One cluster per test session, in a temporary directory: ``initdb`` with trust
authentication and no fsync, listening on a Unix socket in that directory only (no TCP
port, so nothing else on the machine can reach it or collide with it). As root, the
server runs as the ``postgres`` user (``initdb`` and ``pg_ctl`` refuse root).

The schema is migrated once, into a template database; each database a test asks for is
a copy of it (``CREATE DATABASE .. TEMPLATE``, a few milliseconds), or a blank one for
the migration tests. A test's databases are dropped when it ends; the cluster is stopped
and its directory removed when the session ends, whatever the outcome, and at exit
should the session die first.
"""

from __future__ import annotations

import atexit
import itertools
import os
import pwd
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

from talekeeper.storage import migrate
from talekeeper.storage.db import make_engine

BIN_ENV = "PG_BIN_FOR_TESTS"  # a folder holding initdb and pg_ctl, if not found
REQUIRE_ENV = "REQUIRE_POSTGRESQL_FOR_TESTS"  # CI: a missing PostgreSQL is a failure
NOT_INSTALLED = (
    "PostgreSQL is not installed here, so the PostgreSQL pass (--db=postgresql) did not "
    "run. Install it (Debian or Ubuntu: `apt-get install postgresql`; elsewhere, set "
    f"{BIN_ENV} to the folder that holds initdb and pg_ctl) and run it again."
)
SERVER_USER = "postgres"  # who runs the server when the tests run as root
TEMPLATE = "tk_template"
_TOOLS = ("initdb", "pg_ctl", "postgres")
# Trust on a private socket; no fsync: the cluster lives as long as one test session.
INITDB = ("--no-sync", "--auth=trust", "--username=postgres", "--encoding=UTF8", "--locale=C")


def find_bindir() -> Path | None:
    """The folder of the PostgreSQL server programs: the one named by ``BIN_ENV``, else
    the newest of Debian's, else the one on the PATH."""
    given = os.environ.get(BIN_ENV)
    candidates = [Path(given)] if given else []
    debian = Path("/usr/lib/postgresql").glob("*/bin")
    candidates += sorted(debian, key=lambda p: _version(p.parent.name), reverse=True)
    found = shutil.which("initdb")
    if found:
        candidates.append(Path(found).parent)
    for folder in candidates:
        if all((folder / tool).is_file() for tool in _TOOLS):
            return folder
    return None


def _version(name: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", name))


class Cluster:
    """A private PostgreSQL server in a temporary directory."""

    def __init__(self, bindir: Path, *, durable: bool = False) -> None:
        """``durable``: fsync and synchronous commits on, as a real server runs (the
        benchmarks); off for the tests."""
        self.bindir = bindir
        self.durable = durable
        self.as_user: list[str] = []
        if os.geteuid() == 0:
            try:
                pwd.getpwnam(SERVER_USER)
            except KeyError:
                raise RuntimeError(
                    f"The tests run as root and there is no {SERVER_USER!r} user to run "
                    "PostgreSQL as (initdb refuses root): run the tests as another user, or "
                    "install PostgreSQL from the distribution, which creates that user."
                ) from None
            self.as_user = ["runuser", "-u", SERVER_USER, "--"]
        # The socket's path must stay under ~100 bytes: a short base, whatever TMPDIR says.
        base = "/tmp" if os.access("/tmp", os.W_OK) else None
        self.root = Path(tempfile.mkdtemp(prefix="tkpg-", dir=base))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self._running = False
        atexit.register(self.stop)

    def start(self) -> None:
        if self.as_user:
            shutil.chown(self.root, user=SERVER_USER)
        self._run("initdb", *INITDB, "-D", str(self.data))
        self._pg_ctl("start")
        self._running = True

    def _options(self) -> str:
        fast = (
            ""
            if self.durable
            else "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
        )
        return f"{fast}-c listen_addresses='' -k {self.root} -c max_connections=200"

    def restart(self) -> None:
        """Stop the server (``fast``: every session is cut off) and start it again (the
        scale-out benchmark's fault)."""
        self._pg_ctl("restart", "-m", "fast")

    def _pg_ctl(self, action: str, *extra: str) -> None:
        """``pg_ctl ACTION`` on this cluster, with its log and options, waiting for it."""
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            *extra,
            "-w",
            "-o",
            self._options(),
            action,
        )

    def stop(self) -> None:
        """Stop the server and remove its directory; safe to call more than once."""
        if self._running:
            self._running = False
            subprocess.run(
                [
                    *self.as_user,
                    str(self.bindir / "pg_ctl"),
                    "-D",
                    str(self.data),
                    "-m",
                    "immediate",
                    "-w",
                    "stop",
                ],
                capture_output=True,
                check=False,
            )
        shutil.rmtree(self.root, ignore_errors=True)

    def url(self, name: str) -> str:
        return f"postgresql+psycopg://postgres@/{name}?host={self.root}"

    def admin(self) -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(
            host=str(self.root), user="postgres", dbname="postgres", autocommit=True
        )

    def _run(self, tool: str, *args: str) -> None:
        done = subprocess.run(
            [*self.as_user, str(self.bindir / tool), *args], capture_output=True, text=True
        )
        if done.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(
                f"{tool} failed ({done.returncode}) setting up the test PostgreSQL in "
                f"{self.root}:\n{done.stdout}{done.stderr}{log}"
            )


class Databases:
    """The test databases of one cluster: one per key (a test's path), copied from a
    migrated template, or blank."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._numbers = itertools.count(1)
        self._by_key: dict[tuple[str, bool], str] = {}
        self._made: list[str] = []

    def prepare(self) -> None:
        """The template: a database migrated to the newest schema."""
        with self.cluster.admin() as admin:
            admin.execute(f"CREATE DATABASE {TEMPLATE}")
        engine = make_engine(self.cluster.url(TEMPLATE))
        try:
            migrate.upgrade(engine)
        finally:
            engine.dispose()  # a template cannot be copied while anyone is connected

    def url_for(self, key: str, *, blank: bool = False) -> str:
        """The URL of the database kept for ``key``, made on first use: migrated, or
        blank (no tables at all)."""
        name = self._by_key.get((key, blank))
        if name is None:
            name = f"t_{next(self._numbers)}"
            source = "template0" if blank else TEMPLATE
            with self.cluster.admin() as admin:
                admin.execute(f"CREATE DATABASE {name} TEMPLATE {source} STRATEGY FILE_COPY")
            self._by_key[(key, blank)] = name
            self._made.append(name)
        return self.cluster.url(name)

    @property
    def made(self) -> int:
        """How many databases were made so far (a mark for ``drop_since``)."""
        return len(self._made)

    def drop_since(self, mark: int) -> None:
        """Drop the databases made after ``mark``, closing whatever still uses them."""
        dropped, self._made = self._made[mark:], self._made[:mark]
        if not dropped:
            return
        self._by_key = {k: v for k, v in self._by_key.items() if v not in dropped}
        with self.cluster.admin() as admin:
            for name in dropped:
                admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def connect(url: str, *, autocommit: bool = False) -> psycopg.Connection[tuple[object, ...]]:
    """A plain driver connection to a test database, as another process would have."""
    parsed = make_url(url)
    host = parsed.query.get("host")
    return psycopg.connect(
        host=host if isinstance(host, str) else None,
        user=parsed.username,
        dbname=parsed.database,
        autocommit=autocommit,
    )


active: Databases | None = None  # the session's databases, on the PostgreSQL pass
missing: str | None = None  # why the PostgreSQL pass did not run, when it did not


def start() -> Databases:
    """A started cluster with its template ready; ``RuntimeError`` says what went wrong."""
    bindir = find_bindir()
    if bindir is None:
        raise FileNotFoundError(NOT_INSTALLED)
    cluster = Cluster(bindir)
    try:
        cluster.start()
        databases = Databases(cluster)
        databases.prepare()
    except BaseException:
        cluster.stop()
        raise
    return databases
