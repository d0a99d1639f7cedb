"""Memory revisions come from the adventure's counter, so a bank cached in one process sees
every memory written by others (``MemoryRepository.next_revision``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker
from tests.conftest import database_url
from tests.storage.revision_writer import MODEL

from talekeeper.services.memory.bank import clear_other_models, new_memory
from talekeeper.services.memory.base import NullMemory
from talekeeper.services.memory.cache import BankCache, pack
from talekeeper.services.story import adventures
from talekeeper.storage import migrate
from talekeeper.storage.db import make_engine, make_session_factory, read_scope, session_scope
from talekeeper.storage.models import Adventure, Memory
from talekeeper.storage.repositories.memory import MemoryRepository
from talekeeper.storage.repositories.users import UserRepository

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def sessions(tmp_path: Path) -> sessionmaker[Session]:
    engine = make_engine(database_url(tmp_path / "tk.db"))
    migrate.upgrade(engine)
    return make_session_factory(engine)


def _story(sessions: sessionmaker[Session]) -> tuple[int, int]:
    with session_scope(sessions) as session:
        uid = UserRepository(session).local_user().id
        story = adventures.create(session, uid, {"title": "T", "opening": "Once."}, NullMemory())
        assert story.adventure.current_branch_id is not None
        return story.adventure.id, story.adventure.current_branch_id


def _memory(session: Session, aid: int, branch: int, text_: str) -> Memory:
    return new_memory(
        session, aid, text_, branch_id=branch, depth=0, vector=pack([1.0, 0.0]), vector_model=MODEL
    )


def test_each_change_takes_the_counters_next_revision_and_leaves_the_story_untouched(
    sessions: sessionmaker[Session],
) -> None:
    aid, branch = _story(sessions)
    with session_scope(sessions) as session:
        before = session.get(Adventure, aid)
        assert before is not None
        edited_at = before.updated_at
        first = _memory(session, aid, branch, "Toen keeps bees.")
        second = _memory(session, aid, branch, "Mira fears the well.")
    assert (first.revision, second.revision) == (1, 2)
    with session_scope(sessions) as session:
        adventure = session.get(Adventure, aid)
        assert adventure is not None
        assert adventure.memory_revision == 2
        assert adventure.updated_at == edited_at  # a memory is not an edit of the story
    # The embedding model changes: both vectors go, each memory with a revision of its own.
    with session_scope(sessions) as session:
        assert clear_other_models(session, aid, "another-model", None) == 2
    with read_scope(sessions) as session:
        found = session.scalars(select(Memory.revision).where(Memory.adventure_id == aid))
        assert sorted(found) == [3, 4]


def test_two_memories_of_one_adventure_never_share_a_revision(
    sessions: sessionmaker[Session],
) -> None:
    aid, branch = _story(sessions)
    with session_scope(sessions) as session:
        taken = _memory(session, aid, branch, "Toen keeps bees.").revision
    with pytest.raises(IntegrityError), session_scope(sessions) as session:
        row = _memory(session, aid, branch, "Mira fears the well.")
        session.execute(
            text("UPDATE memories SET revision = :r WHERE id = :i"), {"r": taken, "i": row.id}
        )


def test_a_revision_for_a_deleted_adventure_is_a_clear_error(
    sessions: sessionmaker[Session],
) -> None:
    from talekeeper.core.errors import NotFound

    with pytest.raises(NotFound, match="does not exist"), session_scope(sessions) as session:
        MemoryRepository(session).next_revision(10_000)


@pytest.mark.postgresql_only("two writer processes at once: SQLite's file lock orders them")
def test_two_writer_processes_and_every_memory_reaches_a_third_processs_cache(
    tmp_path: Path,
) -> None:
    url = database_url(tmp_path / "tk.db")
    engine = make_engine(url)
    migrate.upgrade(engine)
    sessions = make_session_factory(engine)
    aid, branch = _story(sessions)
    n = 150
    writers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.storage.revision_writer",
                url,
                str(aid),
                str(branch),
                str(n),
                tag,
            ],
            cwd=ROOT,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag in ("Anwen", "Brom")
    ]
    cache = BankCache()  # this process's, read again and again while the others write
    reads = 0
    while any(w.poll() is None for w in writers):
        with read_scope(sessions) as session:
            cache.bank(session, aid, MODEL)
        reads += 1
    for writer in writers:
        assert writer.wait() == 0, writer.stderr.read() if writer.stderr else ""
    with read_scope(sessions) as session:
        cached = set(cache.bank(session, aid, MODEL).ids.tolist())
        stored = set(session.scalars(select(Memory.id).where(Memory.adventure_id == aid)))
        revisions = list(session.scalars(select(Memory.revision).where(Memory.adventure_id == aid)))
    assert reads > 10  # the cache was read while both wrote
    assert len(stored) == 2 * n
    assert cached == stored
    assert sorted(revisions) == list(range(1, 2 * n + 1))
    engine.dispose()
