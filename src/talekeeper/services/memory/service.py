"""The memory system behind the engine's seam (``services.memory.base.MemoryService``).

Invariants:

- ``retrieve`` writes nothing; ``record_use`` and ``schedule`` run inside the
  turn's one write transaction; ``story_changed`` inside the change's; the
  worker is woken only after a commit (``kick``, or the session's after-commit
  hook), so it never races the transaction that created its job.
- One background run per adventure at a time: memory (re-derive stale ones,
  then new blocks), summary, embedding, eviction. Each pass records its outcome
  (``derived_states``); a failing pass is recorded with its error and does not
  stop the others; its cursor did not move, so a later run retries it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Session, sessionmaker

from talekeeper.core.clock import utcnow
from talekeeper.core.errors import TalekeeperError
from talekeeper.services.memory import changes, retrieval
from talekeeper.services.memory.bank import BankCache
from talekeeper.services.memory.base import Retrieval, RetrievalQuery, StoryChange
from talekeeper.services.memory.summary import summary_pass
from talekeeper.services.memory.upkeep import embedding_pass, eviction_pass
from talekeeper.services.memory.work import Work
from talekeeper.services.memory.worker import Worker
from talekeeper.services.memory.writer import memory_pass, refresh_stale
from talekeeper.services.models import ModelSet
from talekeeper.storage.db import read_scope, session_scope
from talekeeper.storage.models import Adventure
from talekeeper.storage.repositories.memory import MemoryRepository

log = logging.getLogger(__name__)

KINDS = ("memory", "summary", "embedding", "eviction")
ERROR_MAX = 2000  # characters of an error kept for the debug page


class MemorySystem:
    def __init__(
        self, sessions: sessionmaker[Session], models_for_user: Callable[[int], ModelSet]
    ) -> None:
        self.sessions = sessions
        self.models_for_user = models_for_user
        self.cache = BankCache()
        self.worker = Worker(sessions, self.run)

    # -- the seam -----------------------------------------------------------------------

    async def retrieve(self, query: RetrievalQuery, models: ModelSet) -> Retrieval:
        return await retrieval.retrieve(query, models, self.sessions, self.cache)

    def record_use(self, session: Session, retrieval: Retrieval, reply_id: int) -> None:
        ids = [m.id for m in retrieval.used]
        MemoryRepository(session).record_use(ids, reply_id, utcnow())

    def schedule(self, session: Session, adventure_id: int, user_id: int) -> None:
        MemoryRepository(session).request_work(adventure_id)
        self._kick_after_commit(session, adventure_id)

    def story_changed(self, session: Session, change: StoryChange) -> None:
        if changes.apply(session, change, self.cache):
            self.schedule(session, change.adventure_id, 0)

    def kick(self, adventure_id: int) -> None:
        self.worker.kick(adventure_id)

    def _kick_after_commit(self, session: Session, adventure_id: int) -> None:
        def kick(_: Session) -> None:
            self.worker.kick(adventure_id)

        event.listen(session, "after_commit", kick, once=True)

    # -- lifecycle ----------------------------------------------------------------------

    async def start(self) -> None:
        await self.worker.start()

    async def stop(self) -> None:
        await self.worker.stop()

    async def idle(self, timeout: float = 60.0) -> None:
        await self.worker.idle(timeout)

    # -- one background run ---------------------------------------------------------------

    async def run(self, adventure_id: int) -> None:
        user_id = await asyncio.to_thread(self._owner, adventure_id)
        if user_id is None:
            return
        models = await asyncio.to_thread(self.models_for_user, user_id)
        work = Work(self.sessions, adventure_id, models, self.cache)

        async def memories() -> bool:
            refreshed = await refresh_stale(work)
            return await memory_pass(work) or refreshed

        passes: list[tuple[str, Callable[[], Awaitable[bool]]]] = [
            ("memory", memories),
            ("summary", lambda: summary_pass(work)),
            ("embedding", lambda: embedding_pass(work)),
            ("eviction", lambda: eviction_pass(work)),
        ]
        for kind, step in passes:
            await asyncio.to_thread(self._record, adventure_id, kind, "running")
            try:
                did = await step()
            except TalekeeperError as exc:
                await asyncio.to_thread(self._record, adventure_id, kind, "failed", exc.message)
            except Exception as exc:  # a pass must never take the others down with it
                log.exception("%s pass failed for adventure %s", kind, adventure_id)
                text = f"{type(exc).__name__}: {exc}"
                await asyncio.to_thread(self._record, adventure_id, kind, "failed", text)
            else:
                await asyncio.to_thread(self._record, adventure_id, kind, "idle", None, did)

    def _owner(self, adventure_id: int) -> int | None:
        with read_scope(self.sessions) as session:
            adventure = session.get(Adventure, adventure_id)
            return adventure.user_id if adventure is not None else None

    def _record(
        self,
        adventure_id: int,
        kind: str,
        state: str,
        error: str | None = None,
        did_work: bool = False,
    ) -> None:
        with session_scope(self.sessions) as session:
            if session.get(Adventure, adventure_id) is None:
                return
            row = MemoryRepository(session).state(adventure_id, kind)
            now = utcnow()
            row.state = state
            if state == "running":
                row.last_run_at = now
            elif state == "failed":
                row.last_failure_at = now
                row.last_error = (error or "")[:ERROR_MAX]
                row.failures = (row.failures or 0) + 1
            else:
                row.last_success_at = now
                row.did_work = did_work
                row.failures = 0


def derived_view(session: Session, adventure_id: int) -> dict[str, Any]:
    """Per kind: state, last success, last failure and its error; and whether work waits."""
    repo = MemoryRepository(session)
    states = repo.states(adventure_id)
    job = repo.job(adventure_id)
    out: dict[str, Any] = {"adventure_id": adventure_id, "pending": job is not None}
    for kind in KINDS:
        row = states.get(kind)
        out[kind] = {
            "state": row.state if row else "idle",
            "last_run_at": _iso(row.last_run_at if row else None),
            "last_success_at": _iso(row.last_success_at if row else None),
            "last_failure_at": _iso(row.last_failure_at if row else None),
            "last_error": row.last_error if row and row.state == "failed" else None,
            "previous_error": row.last_error if row and row.state != "failed" else None,
            "did_work": bool(row and row.did_work),
            "failures_in_a_row": row.failures if row else 0,
        }
    return out


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None
