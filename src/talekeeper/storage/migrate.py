"""Alembic, driven from code: the migrations ship inside the package.

``upgrade(url)`` brings any database to the newest schema; the app calls it on
start and ``talekeeper db upgrade`` calls it by hand. No ``alembic.ini`` is
needed on disk.

Invariant: before a SQLite database file whose tables are at an older revision
is migrated, it is copied next to itself (``<name>.backup-<revision>-<UTC time>``,
mode 0600) with SQLite's backup API, which copies one consistent snapshot even
while other connections write through the WAL; the log says where. A fresh
database (no revision yet) or one already at the target makes no copy. A PostgreSQL
database is the server's to back up (``pg_dump``): nothing is copied here.

The same migrations run on SQLite and PostgreSQL (``migrations/env.py`` alters SQLite
tables by copy where it must, PostgreSQL's in place). On PostgreSQL they also write the
job queue's schema (procrastinate's tables, revision 0009), which the models do not
describe: comparing the models with a database leaves those tables out (``ours``).
"""

from __future__ import annotations

import functools
import logging
import os
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError

from talekeeper.core.clock import utcnow
from talekeeper.core.errors import ConfigurationError
from talekeeper.storage import fulltext
from talekeeper.storage.dialect import database_file
from talekeeper.storage.locking import READ_ONLY

log = logging.getLogger(__name__)

MIGRATIONS = Path(__file__).parent / "migrations"
BACKUP_MODE = 0o600  # the copy holds every story and any API key the database holds
QUEUE_TABLES = "procrastinate_"  # the job queue's tables (revision 0009), not the models'


def ours(name: str | None, type_: str, _parents: Any) -> bool:
    """Whether a database object is described by the models (Alembic's ``include_name``):
    every one but the job queue's tables and what belongs to them, and the library's
    full-text index (``storage.fulltext``), which only the migrations describe."""
    if type_ == "table" and (name or "").startswith(QUEUE_TABLES):
        return False
    return not fulltext.is_index_object(name)


def alembic_config(engine: Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    # The engine travels in attributes, so env.py reuses its connection settings (pragmas).
    config.attributes["engine"] = engine
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    reachable(engine)
    target = head_revision(engine) if revision == "head" else revision
    if current_revision(engine) == target:
        return  # every start of an up-to-date database: nothing to copy, nothing to run
    backup_before_upgrade(engine, revision)
    command.upgrade(alembic_config(engine), revision)


def reachable(engine: Engine) -> None:
    """Open one connection, or say in one sentence why the database cannot be opened (a
    server that is down or refuses us, a file that cannot be created): the first thing
    every start does, so a wrong URL is a clear error rather than a traceback."""
    try:
        engine.connect().close()
    except OperationalError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else type(exc).__name__
        raise ConfigurationError(
            f"Talekeeper could not open its database ({reason}). Check "
            f"TALEKEEPER_DATABASE_URL (or the data folder) and that the database server is "
            f"running, then start again."
        ) from exc


def current_revision(engine: Engine) -> str | None:
    from alembic.runtime.migration import MigrationContext

    # A read: the health check must not queue behind writers for the one write lock.
    with engine.execution_options(**{READ_ONLY: True}).connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision(_engine: Engine | None = None) -> str | None:
    """The newest revision the package ships (the same for every database)."""
    return _shipped_head()


@functools.cache
def _shipped_head() -> str | None:
    # Read once a process: the migrations ship in the package and cannot change under it,
    # and loading every revision's module took ~10 ms of each start.
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return ScriptDirectory.from_config(config).get_current_head()


def backup_before_upgrade(engine: Engine, revision: str = "head") -> Path | None:
    """Copy the SQLite database file if upgrading to ``revision`` would migrate it; the
    copy's path, or None when there is nothing to copy (not a file, fresh, up to date)."""
    path = database_file(engine)
    if path is None:
        return None
    current = current_revision(engine)
    target = head_revision(engine) if revision == "head" else revision
    if current is None or current == target:
        return None
    copy = _backup(path, current)
    log.info(
        "Copied the database (revision %s) to %s before upgrading it to revision %s; "
        "keep the copy until the upgraded database has proved itself, then delete it.",
        current,
        copy,
        target,
    )
    return copy


def _backup(path: Path, revision: str) -> Path:
    stamp = utcnow().strftime("%Y%m%dT%H%M%SZ")
    for attempt in range(100):
        extra = f"-{attempt}" if attempt else ""
        copy = path.with_name(f"{path.name}.backup-{revision}-{stamp}{extra}")
        try:  # created private before any byte is written, and never over another file
            os.close(os.open(copy, os.O_CREAT | os.O_EXCL | os.O_WRONLY, BACKUP_MODE))
        except FileExistsError:
            continue
        break
    else:
        raise FileExistsError(f"{copy} and 99 others like it already exist; remove some.")
    try:
        with closing(sqlite3.connect(path)) as source, closing(sqlite3.connect(copy)) as target:
            source.backup(target)  # one step: a single consistent snapshot, WAL included
    except BaseException:
        copy.unlink(missing_ok=True)
        raise
    copy.chmod(BACKUP_MODE)
    return copy
