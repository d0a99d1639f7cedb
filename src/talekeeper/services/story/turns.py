"""A turn, in the order the spec gives it, and its dry run.

1. ``begin``: the turn takes its ticket (``queue``: one turn of an adventure at a
   time, in arrival order) and the player's action is validated and written in
   one short write transaction that commits before anything else happens (input
   is never lost). When other turns are ahead, the action waits in the turn and
   is written in the write that finds its turn come (``run``), so no action lands
   between another action and its reply. A continue or a retry writes nothing
   of the story: it only checks, in a read unit of work, that there is
   something to continue or retry, and reads again when its turn comes.
2. ``plan``: the path, the cards and the plot components are read in a read
   unit of work (never inside the write that saved the action: no CPU work
   holds the write lock), memories are retrieved (the memory service opens
   its own session) and the context is built (a pure function).
3. ``generate``: the reply streams from the narrator with **no transaction
   open**.
4. ``finish``: the reply, its Insights snapshot, where its prompt put things for
   the next turn (``services.prompt.placement``, the ``cache`` layout) and the
   memory use counts are written, and background work is scheduled, in one short
   transaction that waits longer than a request would for a busy database
   (``SAVE_ATTEMPTS``): a finished reply is worth the wait. It checks that the
   story did not move underneath (an undo, an edit): if it did, nothing is
   written and the error says so. The same transaction gives the ticket back.

``run`` never raises for a failure (only cancellation goes through): every
error, ours or not, becomes the one ``error`` event, so a stream always ends
with ``reply`` or ``error``. A model failure, a client that goes away or a
reply that cannot be saved leaves the player's action saved and the head
"awaiting a reply": a retry generates it. A complete reply that could not be
saved travels in the error (``reply_text``), so the player can still read and
copy it. This module is an orchestrator that opens its own units of work,
because a turn is several transactions by design and both the web app and the
terminal drive it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from talekeeper.core.errors import Conflict, DatabaseBusy, ProviderError
from talekeeper.services.common import limits
from talekeeper.services.common.rendering import NARRATION
from talekeeper.services.endpoints.models import ModelSet
from talekeeper.services.library.indexer import LibraryIndexer
from talekeeper.services.library.search import KnowledgeResult, KnowledgeSearch
from talekeeper.services.memory.base import MemoryService, Retrieval, RetrievalQuery
from talekeeper.services.prompt import insights
from talekeeper.services.prompt import placement as placement_record
from talekeeper.services.prompt.build import build, request
from talekeeper.services.prompt.built import BuiltContext
from talekeeper.services.prompt.inputs import ContextInputs, gather
from talekeeper.services.prompt.prefix import PrefixUse, PromptPrefixes
from talekeeper.services.story import queue, rounds, sharing
from talekeeper.services.story.tree import Story
from talekeeper.services.story.turn_events import (
    Pending,
    TurnEvent,
    TurnEventKind,
    as_ours,
    failure,
    player_text,
)
from talekeeper.services.story.view import ActionView, Author
from talekeeper.services.world import derive as world
from talekeeper.services.world.knowing import WitnessReport
from talekeeper.storage.db import LOCK_ATTEMPTS, read_scope, session_scope
from talekeeper.storage.models import InsightSnapshot

__all__ = ["Pending", "TurnEvent", "TurnEventKind", "TurnRunner"]

log = logging.getLogger(__name__)

SAVE_ATTEMPTS = 2 * LOCK_ATTEMPTS  # a finished reply waits twice as long as a request


@dataclass
class Plan:
    inputs: ContextInputs
    built: BuiltContext  # the context built from ``inputs``: the request and Insights read it
    retrieval: Retrieval  # as it went into the context (``build``'s fitted copy)
    timings: dict[str, float]
    knowledge: KnowledgeResult = field(default_factory=KnowledgeResult)  # the same
    prefix: PrefixUse | None = None  # what the narrator had to evaluate of the prompt
    witness: WitnessReport | None = None  # who the input addressed, what they did not see


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)


class TurnRunner:
    def __init__(
        self,
        sessions: sessionmaker[Session],
        memory: MemoryService,
        knowledge: KnowledgeSearch | None = None,
        prefixes: PromptPrefixes | None = None,
        indexer: LibraryIndexer | None = None,
    ) -> None:
        self.sessions = sessions
        self.memory = memory
        self.knowledge = knowledge or KnowledgeSearch(sessions)
        self.prefixes = prefixes or PromptPrefixes()
        self.indexer = indexer  # none: no background work to ask for a failed source's retry
        self.tickets = queue.Tickets(sessions)

    # -- 1. the player's action ------------------------------------------------------------

    def begin(
        self,
        adventure_id: int,
        user_id: int,
        type_: str,
        text: str,
        models: ModelSet,
        author: Author | None = None,
    ) -> Pending:
        """Take the turn's ticket and, when no other turn is ahead, save the player's action
        with it and commit (a waiting action is saved when its turn comes: ``run``). A
        continue saves nothing and reads the turn's context instead, so an unknown
        adventure is refused before any stream. ``user_id`` is the adventure's host;
        ``author``, who wrote the action (none in single play)."""
        clean = player_text(type_, text, required=True)
        pending = Pending(adventure_id, user_id)
        if not clean:
            return self._queue_read(pending, models, author.user_id if author else user_id)
        with session_scope(self.sessions) as session:
            story = Story.load(session, adventure_id, user_id, self.memory)
            asker = author.user_id if author else user_id
            rounds.check(story, asker)  # round-robin play: is it this player's round?
            pending.ticket, pending.holding = queue.take(session, adventure_id, asker)
            pending.shared = sharing.is_shared(session, adventure_id)
            if pending.holding:
                self._save_action(story, pending, (type_, clean, author))
            else:
                story.make_room(2)  # a full adventure is refused now, not after the wait
                pending.unsaved = (type_, clean, author)
        return pending

    def begin_retry(
        self, adventure_id: int, user_id: int, models: ModelSet, asker: int | None = None
    ) -> Pending:
        """Take the retry's ticket, check there is something to retry and read the retry's
        context (writes nothing of the story). ``asker``: who retries (the host if none)."""
        pending = Pending(adventure_id, user_id, retry=True)
        return self._queue_read(pending, models, asker or user_id)

    def _queue_read(self, pending: Pending, models: ModelSet, asker: int) -> Pending:
        """A continue's or a retry's ticket, then its context read ahead: as it will be when
        the ticket holds the turn, or only to refuse now what cannot be done (it is read
        again when its turn comes). A refusal gives the ticket back."""
        with session_scope(self.sessions) as session:
            Story.load(session, pending.adventure_id, pending.user_id, self.memory)
            pending.ticket, pending.holding = queue.take(session, pending.adventure_id, asker)
            pending.shared = sharing.is_shared(session, pending.adventure_id)
            pending.asker = asker
        try:
            return self._read_ahead(pending, models)
        except BaseException:
            with contextlib.suppress(DatabaseBusy):  # the refusal matters; a ticket dies anyway
                self.tickets.release(pending.ticket)
            raise

    def _read_ahead(self, pending: Pending, models: ModelSet) -> Pending:
        started = time.perf_counter()
        pending.inputs = self._gather(pending, models, None, continuing=not pending.retry)
        pending.read_ms = _ms(started)
        return pending

    def _save_action(
        self, story: Story, pending: Pending, action: tuple[str, str, Author | None]
    ) -> None:
        type_, text, author = action
        row = story.append(type_, text, author=author)
        world.record(story, row)  # what it states of the world, with it
        pending.action = ActionView.of(row)
        pending.unsaved = None

    def _claim(self, pending: Pending, models: ModelSet) -> bool:
        """In one write unit: whether the waiting turn's ticket holds the turn now and, if
        so, its action saved. A continue or a retry reads its context again: the turns
        before it moved the story."""
        assert pending.ticket is not None
        with session_scope(self.sessions) as session:
            if not queue.holds(session, pending.adventure_id, pending.ticket):
                return False
            if pending.unsaved is not None:
                story = Story.load(session, pending.adventure_id, pending.user_id, self.memory)
                self._save_action(story, pending, pending.unsaved)
            if pending.retry and pending.asker is not None:  # the newest reply may be another's now
                sharing.may_change(session, pending.adventure_id, pending.asker, None)
            pending.holding = True
        if pending.action is None:
            self._read_ahead(pending, models)
        return True

    # -- 2. context -------------------------------------------------------------------------

    async def plan(
        self,
        pending: Pending,
        models: ModelSet,
        *,
        hypothetical: tuple[str, str] | None = None,
    ) -> Plan:
        inputs = pending.inputs
        timings: dict[str, float] = {"read_ms": pending.read_ms}
        if inputs is None:
            started = time.perf_counter()
            inputs = await asyncio.to_thread(self._gather, pending, models, hypothetical)
            timings["read_ms"] = _ms(started)
        started = time.perf_counter()
        retrieval = await self.memory.retrieve(
            RetrievalQuery(
                adventure_id=pending.adventure_id,
                user_id=pending.user_id,
                branch_id=inputs.branch_id,
                lineage=inputs.lineage,
                input_text=inputs.query_input,
                context_text=inputs.query_context,
                top_k=inputs.top_k,
                bank=inputs.bank,
                exclude_action_ids=(inputs.retry_of,) if inputs.retry_of else (),
            ),
            models,
        )
        timings["retrieve_ms"] = _ms(started)
        started = time.perf_counter()
        knowledge = await self.knowledge.search(
            pending.user_id,
            list(inputs.knowledge_sources),
            inputs.query_input,
            inputs.query_context,
            inputs.knowledge_top_k,
            models,
            adventure_id=pending.adventure_id,
        )
        timings["knowledge_ms"] = _ms(started)
        started = time.perf_counter()
        built = build(inputs, retrieval, knowledge)  # counts come from the counter's cache
        timings["build_ms"] = _ms(started)
        assert built.knowledge is not None  # fitted from the one given
        return Plan(
            inputs, built.context, built.retrieval, timings, built.knowledge, witness=built.witness
        )

    def _gather(
        self,
        pending: Pending,
        models: ModelSet,
        hypothetical: tuple[str, str] | None,
        *,
        continuing: bool = False,
    ) -> ContextInputs:
        """The turn's context, read in a read unit. ``continuing``: a continue, whose reply
        is a new row, so a full adventure is refused before the model is called."""
        with read_scope(self.sessions) as session:
            story = Story.load(session, pending.adventure_id, pending.user_id, self.memory)
            if continuing:
                story.make_room(1)
            retry_of = story.check_retry() if pending.retry else None
            return gather(story, models, retry_of=retry_of, hypothetical=hypothetical)

    # -- 3 and 4. generate and save --------------------------------------------------------

    async def run(self, pending: Pending, models: ModelSet) -> AsyncIterator[TurnEvent]:
        """Events: "queued" (while other turns go first), "action" (once one is saved),
        "chunk"..., then "reply" or "error".

        Never raises for a failure: any exception becomes the "error" event, which says
        whether the player's action is saved and carries a complete reply that could not
        be saved; the turn's ticket is given back with it. Only cancellation (the app
        stopping: ``web/streaming.py``) ends it without one, and its ticket then dies.
        """
        if pending.action is not None:
            yield TurnEvent(TurnEventKind.ACTION, {"action": pending.action})
        keeper: asyncio.Task[None] | None = None
        written: list[str] = []  # the complete reply, once generation finished
        try:
            if pending.ticket is not None and not pending.holding:
                claim = lambda: self._claim(pending, models)  # noqa: E731
                async for ahead in self.tickets.wait(pending.adventure_id, pending.ticket, claim):
                    yield TurnEvent(TurnEventKind.QUEUED, {"ahead": ahead})
                if pending.action is not None:
                    yield TurnEvent(TurnEventKind.ACTION, {"action": pending.action})
            if pending.ticket is not None:
                keeper = asyncio.get_running_loop().create_task(self.tickets.keep(pending.ticket))
            async for event in self._narrate(pending, models, written):
                yield event
        except Exception as exc:  # noqa: BLE001 -- the turn's boundary: every failure is an event
            if pending.ticket is not None:
                await self.tickets.give_back(pending.ticket)
            text = "".join(written)
            error = as_ours(exc, pending, text)
            yield TurnEvent(TurnEventKind.ERROR, failure(pending, error, text), error)
        finally:
            if keeper is not None:
                keeper.cancel()

    async def _narrate(
        self, pending: Pending, models: ModelSet, written: list[str]
    ) -> AsyncIterator[TurnEvent]:
        """The reply's chunks as they come, then the saved reply; ``written`` receives the
        complete text once generation finished (for an error that follows)."""
        parts: list[str] = []
        plan = await self.plan(pending, models)
        sending = request(plan.built, models)
        sent = self.prefixes.sent(
            _model_key(models), sending, plan.inputs.counter, owner=pending.user_id
        )
        plan.prefix = sent.use
        started = time.perf_counter()
        done = None
        mirror = None
        if pending.shared and pending.ticket is not None:  # the other pages watch it come
            mirror = self.tickets.mirror(pending.ticket)
        async for chunk in models.narrator.stream(
            sending, kind="narration", adventure_id=pending.adventure_id
        ):
            if chunk.text:
                if not parts:
                    plan.timings["first_token_ms"] = _ms(started)
                parts.append(chunk.text)
                if mirror is not None:
                    mirror.offer("".join(parts))
                yield TurnEvent(TurnEventKind.CHUNK, {"text": chunk.text})
            done = chunk.done or done
        plan.timings["generate_ms"] = _ms(started)
        if done is not None:  # the server's own count of what it evaluated, if it says
            plan.prefix = self.prefixes.settle(sent, done.tokens_evaluated)
        text = "".join(parts).strip()
        if not text:
            raise ProviderError(
                f"The narrator ({models.narrator.model}) returned an empty reply; retry."
            )
        written.append(text)
        started = time.perf_counter()
        reply, snapshot = await asyncio.to_thread(self.finish, pending, plan, models, text, done)
        snapshot = snapshot.with_timing("save_ms", _ms(started))
        result = {"action": pending.action, "reply": reply, "insights": snapshot.public()}
        yield TurnEvent(TurnEventKind.REPLY, result)

    def finish(
        self, pending: Pending, plan: Plan, models: ModelSet, text: str, done: Any
    ) -> tuple[ActionView, insights.Snapshot]:
        """The reply, its Insights and what its prompt leaves for the next turn, written in
        one transaction; the reply as clients see it and its Insights."""
        inputs = plan.inputs
        with session_scope(self.sessions, attempts=SAVE_ATTEMPTS) as session:
            story = Story.load(session, pending.adventure_id, pending.user_id, self.memory)
            head, has_redo = story.head_and_redo(inputs.branch_id)
            expected = inputs.retry_of or inputs.base_head_id
            if (head.id if head else None) != expected:
                raise Conflict(
                    "The story changed while the reply was being written (another turn, an "
                    "undo or an edit landed first), so this reply was not saved."
                )
            text = text[: limits.NARRATION_MAX]  # a runaway model cannot write an uneditable row
            if inputs.retry_of is not None:
                assert head is not None
                row = story.add_take(head, text)
                takes = len(story.repo.slot(row.branch_id, row.depth))
            else:
                row = story.append(
                    NARRATION,
                    text,
                    inputs.branch_id,
                    known=(head, has_redo),
                    touch=pending.action is None,  # a saved action touched it moments ago
                )
                takes = 1
            world.record(story, row)
            snapshot = insights.snapshot(
                inputs,
                plan.built,
                plan.retrieval,
                plan.timings,
                models,
                done,
                plan.knowledge,
                plan.prefix,
                witness=plan.witness,
            )
            snapshot = insights.with_author(snapshot, _author(pending))
            session.add(InsightSnapshot(action_id=row.id, data=insights.dumps(snapshot)))
            placement = plan.built.report.placement
            if placement is not None:  # ``cache``: where the next turn keeps things
                held = inputs.cards_held_in(plan.built)
                story.repo.add_placement(placement_record.record(row.id, placement, held))
            self.memory.record_use(session, plan.retrieval, row.id)
            if self.indexer is not None:  # a failed source the turn used is retried now
                self.indexer.catch_up(session, plan.knowledge.failed_source_ids)
            self.memory.schedule(session, pending.adventure_id, pending.user_id)
            if pending.ticket is not None:  # the next turn may go once this commits
                queue.done(session, pending.ticket)
            reply = ActionView.of(row, takes=takes)
        self.memory.kick(pending.adventure_id)
        return reply, snapshot.for_action(row.id)

    # -- dry run ----------------------------------------------------------------------------

    async def dry_run(
        self, adventure_id: int, user_id: int, models: ModelSet, type_: str, text: str
    ) -> insights.Snapshot:
        """The Insights of the next turn, as if ``type_``/``text`` were sent; nothing is
        generated and nothing is written."""
        clean = player_text(type_, text, required=False)
        hypothetical = (type_, clean) if clean else None
        plan = await self.plan(Pending(adventure_id, user_id), models, hypothetical=hypothetical)
        prefix = self.prefixes.measure(
            _model_key(models), request(plan.built, models), plan.inputs.counter, owner=user_id
        )
        return insights.snapshot(
            plan.inputs,
            plan.built,
            plan.retrieval,
            plan.timings,
            models,
            None,
            plan.knowledge,
            prefix,
            dry_run=True,
            witness=plan.witness,
        )


def _author(pending: Pending) -> tuple[int, str] | None:
    """Who wrote the action the reply answers, where a shared adventure recorded it."""
    author = pending.action.author if pending.action is not None else None
    return None if author is None else (author.user_id, author.persona_name)


def _model_key(models: ModelSet) -> tuple[str, str]:
    """Which model's cache a prompt meets: the narrator's endpoint and name."""
    return models.narrator.cache_key
