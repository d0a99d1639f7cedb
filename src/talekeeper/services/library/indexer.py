"""The library indexer: makes the vectors of library passages in the background, in batches,
with progress, on SQLite and PostgreSQL alike, through the background work's port.

Invariants:

- Its work is asked for through the same port as the memory passes
  (``services.background.port``), with the source as the subject, in the transaction
  that makes the work: an upload, a reindex, a changed embedding model, a turn or a
  player that retries a failed source (``schedule``, ``catch_up``, ``models_changed``). So
  the request exists exactly when that commit does, and the port's adapter claims, runs,
  recovers from a dead process and wakes workers in other processes as it does for every
  subject: at most one run of a source at a time, anywhere.
- A run (``run``) embeds the source's passages that lack a vector of its ``vector_model``,
  ``BATCH`` at a time in reading order, and writes each batch with the progress
  (``embedded``, ``revision``): a source bigger than a batch shows its progress as it
  goes, and the port runs several sources side by side.
- The model call happens with no transaction open. Vectors are written only if the
  source still wants that model (a reindex or a model change meanwhile wins); a source
  deleted meanwhile ends the run quietly.
- An embedding failure is recorded on the source (``failed``, ``error``, ``failures``,
  ``retry_at``) and, in the same unit, its next run is asked for after a backoff from
  ``RETRY_FIRST`` to ``RETRY_MAX``; a turn or a player that uses the failed source asks
  for it at once (``catch_up``), so a fixed endpoint is caught up right after the next
  turn. A run never raises for a failure of the model.
- The owner's embedding model is compared with their sources' whenever it may have
  changed: a run that finds them differ, a settings change (``models_changed``), and every
  start of the background work (``reconcile``), which also asks again for the runs of
  every source still wanting vectors (a request lost to an older version, or a backoff
  that outlived its process). A changed model re-embeds them; none makes them words-only.
- Nothing here depends on an adventure or on whether its Memory Bank is on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from enum import Enum, auto

import numpy as np
from sqlalchemy.orm import Session, sessionmaker

from talekeeper.core.clock import utcnow
from talekeeper.core.errors import TalekeeperError
from talekeeper.services.background.port import BackgroundWork, Subject
from talekeeper.services.endpoints.models import ModelSet
from talekeeper.services.library import store
from talekeeper.storage.db import read_scope, session_scope
from talekeeper.storage.models import LibrarySource
from talekeeper.storage.repositories.library import IndexingRepository, PassageText
from talekeeper.storage.vocabulary import SourceState

log = logging.getLogger(__name__)

BATCH = 32  # passages per embedding call: one call of a few hundred ms on the CPU
RETRY_FIRST = 5.0  # seconds before the first retry of a failed batch; doubled each time
RETRY_MAX = 600.0
ERROR_MAX = 2000
WANTS_VECTORS = (SourceState.INDEXING, SourceState.FAILED)


def retry_delay(failures: int) -> float:
    return float(min(RETRY_FIRST * 2.0 ** max(failures - 1, 0), RETRY_MAX))


class Outcome(Enum):
    """What one batch of a run came to (never stored)."""

    EMBEDDED = auto()  # a batch written; more passages may want vectors
    DONE = auto()  # nothing left: the source is ready
    FAILED = auto()  # the model failed: recorded, retried after the backoff
    RESYNCED = auto()  # the owner's model changed: the sources start again
    NOTHING = auto()  # the source is gone, or wants no vectors


@dataclass(frozen=True)
class Target:
    source_id: int
    user_id: int
    model: str


class LibraryIndexer:
    def __init__(
        self,
        sessions: sessionmaker[Session],
        models_for_user: Callable[[int], ModelSet],
        background: BackgroundWork,
        *,
        batch: int = BATCH,
    ) -> None:
        self.sessions = sessions
        self.models_for_user = models_for_user
        self.background = background
        self.batch_size = batch

    # -- asking for work, in the caller's unit ------------------------------------------

    def schedule(self, session: Session, source_ids: Iterable[int]) -> None:
        """Ask for a run of each source now, in the caller's transaction."""
        for source_id in source_ids:
            self.background.request(session, Subject.library_source(source_id))

    def catch_up(self, session: Session, source_ids: Iterable[int]) -> list[int]:
        """Failed sources among ``source_ids`` are retried now (a turn used them, or the
        player asked); returns them. Others are left as they are."""
        asked = list(source_ids)
        if not asked:  # nearly every turn: no statement at all
            return []
        failed = IndexingRepository(session).retry_failed(asked, utcnow())
        self.schedule(session, failed)
        return failed

    def models_changed(self, session: Session, user_id: int, model: str | None) -> None:
        """The owner's embedding model is now ``model`` (none: no embeddings), in the
        caller's unit: sources of another model start again (none: words only), and every
        source of theirs that wants vectors is asked for."""
        store.sync_model(session, user_id, model)
        session.flush()
        wanting = IndexingRepository(session).wanting(user_id)
        self.schedule(session, [w.id for w in wanting if w.retry_at is None])

    def reconcile(self) -> None:
        """At the start of background work: every owner's model compared with their
        sources', and every source that wants vectors asked for (a failed one at its retry
        time). Compared and listed in read units; a write unit only for an owner whose
        sources change, and one for the requests when a source wants vectors."""
        with read_scope(self.sessions) as session:
            rows = IndexingRepository(session).source_models()
        seen: dict[int, list[tuple[str | None, str]]] = {}
        for user_id, vector_model, state in rows:
            seen.setdefault(user_id, []).append((vector_model, state))
        for user_id, sources in seen.items():
            try:
                models = self.models_for_user(user_id)
            except TalekeeperError:
                continue
            model = models.embedding.model if models.embedding else None
            if any(store.out_of_sync(v, s, model) for v, s in sources):
                with session_scope(self.sessions) as session:
                    store.sync_model(session, user_id, model)
        with read_scope(self.sessions) as session:  # nearly every start: none, no write
            wanting = IndexingRepository(session).wanting()
        if not wanting:
            return
        now = utcnow()
        with session_scope(self.sessions) as session:
            for source_id, retry_at in wanting:
                later = retry_at - now if retry_at is not None and retry_at > now else None
                self.background.request(session, Subject.library_source(source_id), later)

    # -- the run ------------------------------------------------------------------------

    async def run(self, source_id: int) -> None:
        """The source's run: batch after batch until none is left or one fails."""
        while await self.step(source_id) is Outcome.EMBEDDED:
            await asyncio.sleep(0)  # the other runs of this loop go on between batches

    async def step(self, source_id: int) -> Outcome:
        """One batch of the source's missing vectors."""
        target = await asyncio.to_thread(self._target, source_id)
        if target is None:
            return Outcome.NOTHING
        batch = await asyncio.to_thread(self._next_batch, target)
        if not batch:
            return await asyncio.to_thread(self._finish, target)
        try:
            models = await asyncio.to_thread(self.models_for_user, target.user_id)
            if models.embedding is None or models.embedding.model != target.model:
                await asyncio.to_thread(self._resync, target.user_id)
                return Outcome.RESYNCED
            result = await models.embedding.embed([text for _, text in batch])
            vectors = [np.asarray(v, dtype=np.float32) for v in result.vectors]
            if len(vectors) != len(batch):
                raise TalekeeperError(
                    f"The embedding model returned {len(vectors)} vectors for "
                    f"{len(batch)} passages."
                )
        except TalekeeperError as exc:
            return await asyncio.to_thread(self._failed, target, exc.message)
        return await asyncio.to_thread(self._write, target, batch, vectors)

    def _target(self, source_id: int) -> Target | None:
        with read_scope(self.sessions) as session:
            row = IndexingRepository(session).get(source_id)
            if row is None or row.vector_model is None or row.state not in WANTS_VECTORS:
                return None
            return Target(row.id, row.user_id, row.vector_model)

    def _next_batch(self, target: Target) -> list[PassageText]:
        with read_scope(self.sessions) as session:
            repository = IndexingRepository(session)
            return repository.next_batch(target.source_id, target.model, self.batch_size)

    def _wanted(self, session: Session, target: Target) -> LibrarySource | None:
        """The source, if it still wants vectors of the target's model."""
        row = IndexingRepository(session).get(target.source_id)
        if row is None or row.vector_model != target.model or row.state not in WANTS_VECTORS:
            return None
        return row

    def _write(
        self, target: Target, batch: list[PassageText], vectors: list[np.ndarray]
    ) -> Outcome:
        with session_scope(self.sessions) as session:
            row = self._wanted(session, target)
            if row is None:
                return Outcome.NOTHING
            IndexingRepository(session).write_vectors(
                target.model,
                [(pid, v.tobytes()) for (pid, _), v in zip(batch, vectors, strict=True)],
            )
            return self._progress(session, row, target.model)

    def _progress(self, session: Session, row: LibrarySource, model: str) -> Outcome:
        row.embedded = IndexingRepository(session).embedded(row.id, model)
        row.revision += 1
        row.error, row.failures, row.retry_at = None, 0, None
        if row.embedded >= row.passage_count:
            row.state = SourceState.READY
            return Outcome.DONE
        row.state = SourceState.INDEXING
        return Outcome.EMBEDDED

    def _finish(self, target: Target) -> Outcome:
        with session_scope(self.sessions) as session:
            row = self._wanted(session, target)
            if row is None:
                return Outcome.NOTHING
            self._progress(session, row, target.model)
            return Outcome.DONE

    def _resync(self, user_id: int) -> None:
        try:
            models = self.models_for_user(user_id)
        except TalekeeperError:
            return  # settings that name no usable model: the next request tries again
        model = models.embedding.model if models.embedding else None
        with session_scope(self.sessions) as session:
            self.models_changed(session, user_id, model)

    def _failed(self, target: Target, message: str) -> Outcome:
        with session_scope(self.sessions) as session:
            row = self._wanted(session, target)
            if row is None:
                return Outcome.NOTHING
            row.failures += 1
            row.state = SourceState.FAILED
            row.error = message[:ERROR_MAX]
            delay = timedelta(seconds=retry_delay(row.failures))
            row.retry_at = utcnow() + delay
            self.background.request(session, Subject.library_source(row.id), delay)
        log.warning("library source %s: embedding failed: %s", target.source_id, message)
        return Outcome.FAILED
