"""The runner: one background run of every pass for one adventure, and its record.

Invariants:

- A run loads the adventure's owner and that owner's models once, then runs the passes
  through the seam (``seam.run_pass``) in this order, grouped by the kind the player
  sees (``passes_for``): memory (the stale refresh, then new blocks), summary,
  embedding (another model's vectors retired, evidence keys, vectors), eviction; then
  what a layer above adds (``MorePasses``: the world model's reading, when the owner has
  a world model). A kind's passes run in order; an error ends its kind, never the run.
- Each kind's outcome is recorded in ``derived_states`` (a ``PassState``): "running"
  before it starts, then "idle" (with whether it did any work) or "failed" with its
  error (``ERROR_MAX`` characters), each in its own short transaction. A failed kind is
  retried by the next run: no cursor moved for what it did not save.
- An adventure deleted before or during the run ends it quietly: nothing is recorded
  for an adventure that is gone.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from talekeeper.core.clock import utcnow
from talekeeper.core.errors import TalekeeperError
from talekeeper.services.endpoints.models import ModelSet
from talekeeper.services.memory.cache import BankCache
from talekeeper.services.memory.passes.blocks import NewBlocks
from talekeeper.services.memory.passes.embed import Embed, KeyMemories, RetireVectors
from talekeeper.services.memory.passes.evict import Evict
from talekeeper.services.memory.passes.refresh import RefreshStale
from talekeeper.services.memory.passes.seam import Pass, run_pass
from talekeeper.services.memory.passes.summarize import Summarize
from talekeeper.services.memory.passes.work import Work
from talekeeper.services.memory.service import Kind
from talekeeper.storage.db import read_scope, session_scope
from talekeeper.storage.models import Adventure
from talekeeper.storage.repositories.jobs import JobRepository
from talekeeper.storage.vocabulary import PassState

log = logging.getLogger(__name__)

ERROR_MAX = 2000  # characters of an error kept for the debug page


Kinds = list[tuple[Kind, Sequence[Pass[Any, Any]]]]
# Passes a layer above the memory system adds to every run (the world model's reading),
# handed in by the composition root: what a run does for ``work``, after the memory's own.
MorePasses = Callable[[Work], Kinds]


def passes_for(work: Work) -> Kinds:
    """Every pass of a run, in order, by the kind it is recorded under."""
    embedding = work.models.embedding
    embed: Sequence[Pass[Any, Any]] = ()
    if embedding is not None:
        embed = (
            RetireVectors(work, embedding.model),
            KeyMemories(work),
            Embed(work, embedding.model),
        )
    return [
        (Kind.MEMORY, (RefreshStale(work), NewBlocks(work))),
        (Kind.SUMMARY, (Summarize(work),)),
        (Kind.EMBEDDING, embed),
        (Kind.EVICTION, (Evict(work),)),
    ]


class Runner:
    def __init__(
        self,
        sessions: sessionmaker[Session],
        models_for_user: Callable[[int], ModelSet],
        cache: BankCache,
        more: MorePasses | None = None,
    ) -> None:
        self.sessions = sessions
        self.models_for_user = models_for_user
        self.cache = cache
        self.more = more

    async def work(self, adventure_id: int) -> Work | None:
        """What a run of the adventure works with (None: the adventure is gone)."""
        user_id = await asyncio.to_thread(self._owner, adventure_id)
        if user_id is None:
            return None
        models = await asyncio.to_thread(self.models_for_user, user_id)
        return Work(adventure_id, models, self.cache)

    async def run(self, adventure_id: int) -> None:
        work = await self.work(adventure_id)
        if work is None:
            return
        more = self.more(work) if self.more is not None else []
        for kind, steps in [*passes_for(work), *more]:
            await self.run_kind(adventure_id, kind, steps)

    async def run_kind(
        self, adventure_id: int, kind: Kind, steps: Sequence[Pass[Any, Any]]
    ) -> None:
        """Run one kind's passes in order and record how it went."""
        await asyncio.to_thread(self._record, adventure_id, kind, PassState.RUNNING)
        did = False
        try:
            for step in steps:
                did = (await run_pass(self.sessions, adventure_id, step)).did_work or did
        except TalekeeperError as exc:
            log.warning("%s pass failed for adventure %s: %s", kind, adventure_id, exc.message)
            await asyncio.to_thread(self._record, adventure_id, kind, PassState.FAILED, exc.message)
        except Exception as exc:  # a pass must never take the others down with it
            log.exception("%s pass failed for adventure %s", kind, adventure_id)
            text = f"{type(exc).__name__}: {exc}"
            await asyncio.to_thread(self._record, adventure_id, kind, PassState.FAILED, text)
        else:
            await asyncio.to_thread(self._record, adventure_id, kind, PassState.IDLE, None, did)

    def _owner(self, adventure_id: int) -> int | None:
        with read_scope(self.sessions) as session:
            adventure = session.get(Adventure, adventure_id)
            return adventure.user_id if adventure is not None else None

    def _record(
        self,
        adventure_id: int,
        kind: Kind,
        state: PassState,
        error: str | None = None,
        did_work: bool = False,
    ) -> None:
        with session_scope(self.sessions) as session:
            if session.get(Adventure, adventure_id) is None:
                return
            # Stored as plain text: a driver may write an enum member by its name.
            row = JobRepository(session).state(adventure_id, kind.value)
            now = utcnow()
            row.state = state.value
            if state == PassState.RUNNING:
                row.last_run_at = now
            elif state == PassState.FAILED:
                row.last_failure_at = now
                row.last_error = (error or "")[:ERROR_MAX]
                row.failures = (row.failures or 0) + 1
            else:
                row.last_success_at = now
                row.did_work = did_work
                row.failures = 0
