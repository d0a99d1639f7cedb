"""The library indexer: makes the vectors of library passages in the background, in batches,
with progress, on SQLite and PostgreSQL alike.

Invariants:

- Work is found in the database, never only in memory: a source is due when its state is
  ``indexing``, or ``failed`` with ``retry_at`` passed. So an upload, a restart, a crash
  or another process's upload all end in the same place: the next step finds the source.
- A step claims one due source (a conditional UPDATE: unclaimed, or claimed longer ago
  than ``STALE`` by a process that died), embeds the next ``BATCH`` passages that lack a
  vector of the source's ``vector_model``, writes them and the progress (``embedded``,
  ``revision``), and releases the claim: one batch at a time, oldest-touched source
  first, so several sources progress side by side and any number of processes (``serve``
  on SQLite, ``worker`` on PostgreSQL) share the work without doing a batch twice.
- The model call happens with no transaction open. Vectors are written only if the
  source still wants that model (a reindex or a model change meanwhile wins).
- An embedding failure is recorded on the source (``failed``, ``error``, ``failures``)
  and retried from ``retry_at`` with a backoff from ``RETRY_FIRST`` to ``RETRY_MAX``;
  a turn that uses a failed source brings its retry forward (``catch_up``) and, once that
  is committed, wakes the indexers of its process (an idle one may otherwise sleep
  ``IDLE_POLL_SECONDS``; one in another process finds it at its next poll), so a fixed
  endpoint is caught up right after the next turn. The indexer never stops on a failure.
- Every ``SYNC_SECONDS`` each owner's embedding model is compared with their sources'
  (``store.sync_model``): a changed model re-embeds them, none makes them words-only.
- Nothing here depends on an adventure or on whether its Memory Bank is on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import numpy as np
from sqlalchemy import event
from sqlalchemy.orm import Session, sessionmaker

from talekeeper.core.clock import utcnow
from talekeeper.core.errors import TalekeeperError
from talekeeper.services.endpoints.models import ModelSet
from talekeeper.services.library import store
from talekeeper.storage.db import read_scope, session_scope
from talekeeper.storage.models import LibrarySource
from talekeeper.storage.repositories.library import IndexingRepository, PassageText
from talekeeper.storage.vocabulary import SourceState

log = logging.getLogger(__name__)

BATCH = 32  # passages per embedding call: one call of a few hundred ms on the CPU
POLL_SECONDS = 2.0  # how soon work another process wrote (or a lost wake-up) is found
IDLE_POLL_SECONDS = 15.0  # the poll slows down to this while nothing is due (a kick wakes it)
SYNC_SECONDS = 30.0  # how often each owner's embedding model is compared with their sources'
STALE = timedelta(seconds=120)  # a claim this old was left by a process that died
RETRY_FIRST = 5.0  # seconds before the first retry of a failed batch; doubled each time
RETRY_MAX = 600.0
ERROR_MAX = 2000


def retry_delay(failures: int) -> float:
    return float(min(RETRY_FIRST * 2.0 ** max(failures - 1, 0), RETRY_MAX))


@dataclass(frozen=True)
class Claim:
    source_id: int
    user_id: int
    model: str


# The indexers running in this process, woken when a turn brings a retry forward.
_RUNNING: weakref.WeakSet[LibraryIndexer] = weakref.WeakSet()


def catch_up(session: Session, source_ids: list[int]) -> None:
    """Failed sources among ``source_ids`` are retried at once (a turn used them): due now,
    and this process's indexers are woken when the caller's unit commits."""
    if not source_ids:
        return
    IndexingRepository(session).retry_failed(source_ids, utcnow())
    if not event.contains(session, "after_commit", _wake_running):
        event.listen(session, "after_commit", _wake_running)


def _wake_running(session: Session) -> None:
    # SQLAlchemy emits after_commit for a savepoint's release too (the memory queue
    # defers its job in one on PostgreSQL): only the unit's own commit makes the retry
    # visible, and a wake before it would be spent on a step that cannot see it.
    if session.in_nested_transaction():
        return
    for indexer in list(_RUNNING):
        indexer.kick_threadsafe()


class LibraryIndexer:
    def __init__(
        self,
        sessions: sessionmaker[Session],
        models_for_user: Callable[[int], ModelSet],
        *,
        batch: int = BATCH,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        self.sessions = sessions
        self.models_for_user = models_for_user
        self.batch = batch
        self.poll_seconds = poll_seconds
        self.owner = secrets.token_hex(8)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._synced_at = -SYNC_SECONDS

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        if self._task is None:
            self._loop = asyncio.get_running_loop()
            self._task = asyncio.create_task(self._run(), name="library-indexer")
            _RUNNING.add(self)

    async def stop(self) -> None:
        _RUNNING.discard(self)
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        with contextlib.suppress(Exception):
            await asyncio.to_thread(self._release_mine)

    def kick(self) -> None:
        self._wake.set()

    def kick_threadsafe(self) -> None:
        """``kick`` from any thread (a turn's unit commits in a worker thread)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self._wake.set)

    async def _run(self) -> None:
        wait = self.poll_seconds
        while True:
            # Cleared before the step, not after: a kick that lands while a step runs (too
            # early for it to see the work) leaves the flag set, so the wait below ends at
            # once and another step looks again. Cleared after, it would be lost.
            self._wake.clear()
            try:
                worked = await self.step()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 -- a database fault: log, wait, go on
                log.exception("the library indexer's step failed; trying again shortly")
                worked = False
            if worked:
                wait = self.poll_seconds
                await asyncio.sleep(0)
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), wait)
            # Idle: poll less and less often (a kick, an upload here, wakes it at once).
            wait = self.poll_seconds if self._wake.is_set() else min(wait * 2, IDLE_POLL_SECONDS)

    # -- one step ------------------------------------------------------------------------

    async def step(self) -> bool:
        """One batch of one due source; False when nothing was due."""
        if time.monotonic() - self._synced_at >= SYNC_SECONDS:
            await asyncio.to_thread(self.sync_models)
        claim = await asyncio.to_thread(self._claim)
        if claim is None:
            return False
        try:
            batch = await asyncio.to_thread(self._next_batch, claim)
            if not batch:
                await asyncio.to_thread(self._finish, claim)
                return True
            try:
                models = await asyncio.to_thread(self.models_for_user, claim.user_id)
                if models.embedding is None or models.embedding.model != claim.model:
                    self._synced_at = -SYNC_SECONDS  # the model changed: sync, then go on
                    return True
                result = await models.embedding.embed([text for _, text in batch])
                vectors = [np.asarray(v, dtype=np.float32) for v in result.vectors]
                if len(vectors) != len(batch):
                    raise TalekeeperError(
                        f"The embedding model returned {len(vectors)} vectors for "
                        f"{len(batch)} passages."
                    )
            except TalekeeperError as exc:
                await asyncio.to_thread(self._failed, claim, exc.message)
                return True
            await asyncio.to_thread(self._write, claim, batch, vectors)
            return True
        finally:
            await asyncio.to_thread(self._release, claim)

    def sync_models(self) -> None:
        """Compared in a read unit; a write unit (the write lock) only for an owner with a
        source to change: this runs every ``SYNC_SECONDS`` and usually changes nothing."""
        self._synced_at = time.monotonic()
        with read_scope(self.sessions) as session:
            rows = IndexingRepository(session).source_models()
        by_user: dict[int, list[tuple[str | None, str]]] = {}
        for user_id, vector_model, state in rows:
            by_user.setdefault(user_id, []).append((vector_model, state))
        for user_id, seen in by_user.items():
            try:
                models = self.models_for_user(user_id)
            except TalekeeperError:
                continue
            model = models.embedding.model if models.embedding else None
            if any(store.out_of_sync(v, s, model) for v, s in seen):
                with session_scope(self.sessions) as session:
                    store.sync_model(session, user_id, model)

    def _claim(self) -> Claim | None:
        now = utcnow()
        stale_before = now - STALE
        # Looked for in a read unit: a poll that finds nothing never takes the write lock.
        with read_scope(self.sessions) as session:
            candidates = IndexingRepository(session).due(now, stale_before, limit=4)
        if not candidates:
            return None
        with session_scope(self.sessions) as session:
            work = IndexingRepository(session)
            for source_id, user_id, model in candidates:
                # Another process may have taken it since it was read: the claim decides.
                if work.claim(source_id, self.owner, now, stale_before):
                    return Claim(source_id, user_id, model)
        return None

    def _next_batch(self, claim: Claim) -> list[PassageText]:
        with read_scope(self.sessions) as session:
            return IndexingRepository(session).next_batch(claim.source_id, claim.model, self.batch)

    def _wanted(self, session: Session, claim: Claim) -> LibrarySource | None:
        row = IndexingRepository(session).get(claim.source_id)
        if row is None or row.vector_model != claim.model or row.claimed_by != self.owner:
            return None
        return row

    def _write(self, claim: Claim, batch: list[PassageText], vectors: list[np.ndarray]) -> None:
        with session_scope(self.sessions) as session:
            row = self._wanted(session, claim)
            if row is None:
                return
            IndexingRepository(session).write_vectors(
                claim.model,
                [(pid, v.tobytes()) for (pid, _), v in zip(batch, vectors, strict=True)],
            )
            self._progress(session, row, claim.model)

    def _progress(self, session: Session, row: LibrarySource, model: str) -> None:
        row.embedded = IndexingRepository(session).embedded(row.id, model)
        row.revision += 1
        row.error, row.failures, row.retry_at = None, 0, None
        row.state = SourceState.READY if row.embedded >= row.passage_count else SourceState.INDEXING

    def _finish(self, claim: Claim) -> None:
        with session_scope(self.sessions) as session:
            row = self._wanted(session, claim)
            if row is not None:
                self._progress(session, row, claim.model)

    def _failed(self, claim: Claim, message: str) -> None:
        with session_scope(self.sessions) as session:
            row = self._wanted(session, claim)
            if row is None:
                return
            row.failures += 1
            row.state = SourceState.FAILED
            row.error = message[:ERROR_MAX]
            row.retry_at = utcnow() + timedelta(seconds=retry_delay(row.failures))
        log.warning("library source %s: embedding failed: %s", claim.source_id, message)

    def _release(self, claim: Claim) -> None:
        with session_scope(self.sessions) as session:
            IndexingRepository(session).release(claim.source_id, self.owner)

    def _release_mine(self) -> None:
        with session_scope(self.sessions) as session:
            IndexingRepository(session).release_all(self.owner)
