"""An adventure's members are read once a transaction (``SharingRepository.members``):
saving an action asks whether its adventure is shared several times over, so the list is
kept until the transaction ends or the repository adds or removes a member, and never
longer: another transaction's change is seen by the next one.

Real parts: a migrated SQLite file (or PostgreSQL with ``--db=postgresql``), SQL counted
as the engine sends it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, event
from sqlalchemy.orm import Session, sessionmaker
from tests.conftest import database_url

from talekeeper.services.memory.base import NullMemory
from talekeeper.services.story import adventures
from talekeeper.storage import migrate
from talekeeper.storage.db import make_engine, make_session_factory, read_scope, session_scope
from talekeeper.storage.models import AdventureMember, User
from talekeeper.storage.repositories.sharing import SharingRepository
from talekeeper.storage.repositories.users import UserRepository
from talekeeper.storage.vocabulary import MemberRole


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    made = make_engine(database_url(tmp_path / "tk.db"))
    migrate.upgrade(made)
    yield made
    made.dispose()


def _reads(engine: Engine) -> list[str]:
    """The statements that read ``adventure_members`` from now on, as the engine sends them."""
    seen: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "adventure_members" in statement:
            seen.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    return seen


def _adventure(sessions: sessionmaker[Session]) -> int:
    with session_scope(sessions) as session:
        uid = UserRepository(session).local_user().id
        story = adventures.create(session, uid, {"title": "T", "opening": "Once."}, NullMemory())
        return story.adventure.id


def _member(session: Session, aid: int, name: str) -> AdventureMember:
    user = User(name=name, password_hash="x")
    session.add(user)
    session.flush()
    return AdventureMember(
        adventure_id=aid, user_id=user.id, role=MemberRole.PLAYER, persona_name=name
    )


def test_the_members_are_read_once_a_transaction_and_a_change_in_it_is_seen(
    engine: Engine,
) -> None:
    sessions = make_session_factory(engine)
    aid = _adventure(sessions)
    reads = _reads(engine)
    with session_scope(sessions) as session:
        repo = SharingRepository(session)
        for n in range(5):
            assert repo.count(aid) == 0
            assert repo.members(aid) == []
            session.add(User(name=f"someone {n}"))
            session.flush()  # another row written in the transaction: the list stands
        assert len(reads) == 1
        tal = _member(session, aid, "tal")
        repo.add(tal)  # this transaction's own change: read again
        assert [name for _, name in repo.members(aid)] == ["tal"]
        assert SharingRepository(session).count(aid) == 1  # one list a session, any repository
        assert len(reads) == 2
        repo.members(aid).clear()  # the caller's copy: the kept list is untouched
        assert repo.count(aid) == 1
        repo.remove(tal)
        assert repo.count(aid) == 0
        repo.add(_member(session, aid, "mara"))
        repo.end(aid)
        assert repo.members(aid) == []
        savepoint = session.begin_nested()
        repo.add(_member(session, aid, "ida"))
        assert repo.count(aid) == 1
        savepoint.rollback()  # the member it added is gone, and so is the list that had her
        assert repo.members(aid) == []


def test_a_change_another_transaction_commits_is_seen_by_the_next_one(engine: Engine) -> None:
    sessions = make_session_factory(engine)
    aid = _adventure(sessions)
    with read_scope(sessions) as session:
        assert SharingRepository(session).count(aid) == 0
    reader = sessions()
    try:
        assert SharingRepository(reader).count(aid) == 0
        reader.commit()  # the reader's transaction ends; the session goes on
        with session_scope(sessions) as writer:
            SharingRepository(writer).add(_member(writer, aid, "tal"))
        assert SharingRepository(reader).count(aid) == 1
    finally:
        reader.close()
