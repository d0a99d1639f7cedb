"""The memory system behind the engine's seam (``services.memory.base.MemoryService``).

Invariants:

- ``retrieve`` writes nothing; ``record_use`` and ``schedule`` run inside the
  turn's one write transaction; ``story_changed`` inside the change's. Work is
  asked for through the ``BackgroundWork`` port (``services.background.port``) in that same
  transaction, and the process that runs it is woken only after the commit, so
  it never races the transaction that created its job.
- What a run does (one run per adventure at a time: memory, summary, embedding,
  eviction) is the runner's (``passes.runner``); it records each ``Kind``'s
  ``PassState`` (``storage.vocabulary``) in ``derived_states``, which ``derived_view``
  shows. A failing pass is recorded with its error and does not stop the others, and a
  later run retries it. Whether work waits is the port's to say (``BackgroundWork.pending``),
  whichever queue holds it.
"""

from __future__ import annotations

import asyncio
from enum import StrEnum
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from talekeeper.core.clock import utcnow
from talekeeper.services.background.port import BackgroundWork, Subject
from talekeeper.services.endpoints.models import ModelSet
from talekeeper.services.memory import changes, retrieval
from talekeeper.services.memory.base import Retrieval, RetrievalQuery, StoryChange
from talekeeper.services.memory.cache import BankCache
from talekeeper.storage.repositories.jobs import JobRepository
from talekeeper.storage.repositories.memory import MemoryRepository
from talekeeper.storage.vocabulary import PassState


class Kind(StrEnum):
    """The background work the player sees, one recorded state each, in run order."""

    MEMORY = "memory"
    SUMMARY = "summary"
    EMBEDDING = "embedding"
    EVICTION = "eviction"
    WORLD = "world"  # the world model's reading of the newest reply (services.world.reading)
    CARDS = "cards"  # the lore clerk's card proposals (services.world.clerk_pass)


KINDS = tuple(kind.value for kind in Kind)
SNAPSHOT_WAIT = 30.0  # seconds a stop waits for a bank snapshot being written


class MemorySystem:
    def __init__(
        self, sessions: sessionmaker[Session], cache: BankCache, background: BackgroundWork
    ) -> None:
        self.sessions = sessions
        self.cache = cache  # shared with the runner the background work runs
        self.background = background

    # -- the seam -----------------------------------------------------------------------

    async def retrieve(self, query: RetrievalQuery, models: ModelSet) -> Retrieval:
        return await retrieval.retrieve(query, models, self.sessions, self.cache)

    def record_use(self, session: Session, retrieval: Retrieval, reply_id: int) -> None:
        ids = [m.id for m in retrieval.used]
        MemoryRepository(session).record_use(ids, reply_id, utcnow())

    def schedule(self, session: Session, adventure_id: int, user_id: int) -> None:
        self.background.request(session, Subject.adventure(adventure_id))

    def story_changed(self, session: Session, change: StoryChange) -> None:
        if changes.apply(session, change, self.cache):
            self.background.request(session, Subject.adventure(change.adventure_id))

    def kick(self, adventure_id: int) -> None:
        self.background.kick(Subject.adventure(adventure_id))

    # -- lifecycle ----------------------------------------------------------------------

    async def start(self, *, queue_worker: bool = True) -> None:
        await self.background.start(queue_worker=queue_worker)

    async def stop(self) -> None:
        await self.background.stop()
        # The banks that moved since their snapshot are written, and the writing finished (a
        # half-written one is never used, but the next start would build that bank again).
        self.cache.save_behind()
        await asyncio.to_thread(self.cache.wait_saved, SNAPSHOT_WAIT)

    async def idle(self, timeout: float = 60.0) -> None:
        await self.background.idle(timeout)


def derived_view(
    session: Session, adventure_id: int, background: BackgroundWork | None
) -> dict[str, Any]:
    """Per kind: state, last success, last failure and its error; and whether work waits
    (never, with no background work at all)."""
    states = JobRepository(session).states(adventure_id)
    pending = background is not None and background.pending(
        session, Subject.adventure(adventure_id)
    )
    out: dict[str, Any] = {"adventure_id": adventure_id, "pending": pending}
    for kind in KINDS:
        row = states.get(kind)
        out[kind] = {
            "state": row.state if row else PassState.IDLE.value,
            "last_run_at": _iso(row.last_run_at if row else None),
            "last_success_at": _iso(row.last_success_at if row else None),
            "last_failure_at": _iso(row.last_failure_at if row else None),
            "last_error": row.last_error if row and row.state == PassState.FAILED else None,
            "previous_error": row.last_error if row and row.state != PassState.FAILED else None,
            "did_work": bool(row and row.did_work),
            "failures_in_a_row": row.failures if row else 0,
        }
    return out


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None
