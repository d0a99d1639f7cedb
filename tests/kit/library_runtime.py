"""The knowledge library's services on the app's runtime, without HTTP (``Env``): the
runtime on the loopback model double, its own event loop and the local user, with the
steps a library test takes (store a file, index it, read back its rows); and Markdown
files of one passage a paragraph (``sections``, ``numbered``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from tests.conftest import double_settings
from tests.kit.accounts import CHEAP, PASSWORD

from talekeeper.bootstrap import Runtime
from talekeeper.core.tokens import BpeCounter
from talekeeper.services.accounts.users import create_user
from talekeeper.services.endpoints.models import ModelSet
from talekeeper.services.library import store
from talekeeper.services.library.indexer import LibraryIndexer
from talekeeper.services.memory.base import NullMemory
from talekeeper.services.story import adventures
from talekeeper.storage import fulltext
from talekeeper.storage.db import read_scope, session_scope
from talekeeper.storage.models import LibraryPassage, LibrarySource
from talekeeper.storage.repositories.users import UserRepository
from talekeeper.storage.vocabulary import SourceState
from talekeeper_testkit.double import ModelDouble

COUNTER = BpeCounter()
EMBED = "double-embed"


def sections(*paragraphs: str, heading: str = "Part") -> bytes:
    """Markdown with one heading per paragraph: one passage each."""
    return "\n\n".join(f"# {heading} {i}\n\n{p}" for i, p in enumerate(paragraphs)).encode()


def numbered(count: int, word: str = "lantern") -> bytes:
    return sections(*(f"Entry {i} speaks of the {word} number {i}." for i in range(count)))


@dataclass
class Env:
    """The runtime on the double, its own event loop, and the local user."""

    runtime: Runtime
    loop: asyncio.AbstractEventLoop
    user_id: int
    double: ModelDouble

    @property
    def sessions(self) -> sessionmaker[Session]:
        return self.runtime.sessions

    def run(self, awaitable: Any) -> Any:
        return self.loop.run_until_complete(awaitable)

    def models(self, user_id: int | None = None) -> ModelSet:
        return self.runtime.models_for_user(user_id or self.user_id)

    def model(self, user_id: int | None = None) -> str | None:
        embedding = self.models(user_id).embedding
        return embedding.model if embedding else None

    def add(
        self,
        data: bytes,
        name: str = "notes.md",
        user_id: int | None = None,
        *,
        schedule: bool = False,
    ) -> int:
        """Store a file; with ``schedule``, its run asked for in the same unit, as the
        upload route does (without, tests run the indexer themselves)."""
        uid = user_id or self.user_id
        prepared = store.prepare(name, data, COUNTER)
        with session_scope(self.sessions) as session:
            row = store.store(session, uid, prepared, self.model(uid))
            session.flush()
            if schedule:
                self.indexer.schedule(session, [row.id])
            return row.id

    def row(self, source_id: int) -> LibrarySource:
        with read_scope(self.sessions) as session:
            row = session.get(LibrarySource, source_id)
            assert row is not None
            session.expunge(row)
        return row

    def passages(self, source_id: int) -> list[LibraryPassage]:
        with read_scope(self.sessions) as session:
            rows = list(
                session.scalars(
                    select(LibraryPassage)
                    .where(LibraryPassage.source_id == source_id)
                    .order_by(LibraryPassage.position)
                )
            )
            for row in rows:
                session.expunge(row)
        return rows

    @property
    def indexer(self) -> LibraryIndexer:
        """The runtime's indexer, on the runtime's background work (not started: a test
        runs the indexer's runs itself, or starts the work)."""
        assert self.runtime.indexer is not None
        return self.runtime.indexer

    def index(self, limit: int = 20) -> int:
        """Run every source still ``indexing`` until none is (a model change may send
        sources back); how many runs that took."""
        runs = 0
        for _ in range(limit):
            with read_scope(self.sessions) as session:
                indexing = list(
                    session.scalars(
                        select(LibrarySource.id).where(LibrarySource.state == SourceState.INDEXING)
                    )
                )
            if not indexing:
                return runs
            for source_id in indexing:
                self.run(self.indexer.run(source_id))
                runs += 1
        raise AssertionError("the sources never stopped indexing")

    def settings(self, user_id: int | None = None, **values: Any) -> None:
        with session_scope(self.sessions) as session:
            UserRepository(session).save_settings(user_id or self.user_id, values)

    def user(self, name: str) -> int:
        with session_scope(self.sessions) as session:
            return create_user(session, name, PASSWORD, hasher=CHEAP).id

    def adventure(self, user_id: int | None = None, title: str = "Salt") -> int:
        with session_scope(self.sessions) as session:
            story = adventures.create(
                session, user_id or self.user_id, {"title": title}, NullMemory()
            )
            return story.adventure.id

    def holding(self, term: str, source_ids: list[int]) -> list[int]:
        with read_scope(self.sessions) as session:
            return sorted(fulltext.holding(session, [term], source_ids)[0])


def build_env(tmp_path: Path, double: ModelDouble, **env: str) -> Iterator[Env]:
    runtime = Runtime.build(double_settings(tmp_path, double, **env))
    loop = asyncio.new_event_loop()
    try:
        yield Env(runtime, loop, runtime.local_user_id(), double)
    finally:
        loop.run_until_complete(runtime.aclose())
        loop.close()
