"""The composition root: builds the engine, the providers and the services, once.

Invariants:

- Nothing here runs at import; ``Runtime.build(settings)`` does the work and
  ``Runtime.aclose()`` undoes it.
- One ``httpx.AsyncClient`` and one ``EmbeddedProvider`` per process: every
  endpoint provider shares the client; the embedded models load lazily, once.
- A user's effective settings are the process settings with that user's rows
  applied; ``models_for`` turns them into a ``ModelSet``.
- The AI call sink writes each record in its own short transaction, so the
  record survives the rollback of the request that made the call.
- One memory service per process (``turns`` hands it to a stateless turn
  runner, so a memory service set after build is the one used); its
  background work runs on the event loop that called ``start`` and stops in
  ``aclose``. The adapter of its ``BackgroundWork`` port follows the database's
  queue (``storage.dialect.job_queue``): on SQLite the outbox and this process's
  worker (``Worker``), which always runs; on PostgreSQL procrastinate's queue
  (``QueuedWork``), which this process works only when ``start(queue_worker=True)``
  (``talekeeper play``, the tests), never in ``talekeeper serve``. The in-process
  ``Worker`` is never built on PostgreSQL. The scenarios are read and validated
  once, at build.
- Every process that starts background work (``start``; ``talekeeper worker``) first
  reads the world of each story from before the world was kept (``read_world_backlog``),
  before it serves or plays: one query when there is none.
- The bank cache keeps large banks in snapshot files under the data folder
  (``snapshot_folder``: one folder per database), so a restart does not build them
  again from every row; they are caches only (``services.memory.snapshot``).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from talekeeper.core.errors import NotFound
from talekeeper.providers.base import Provider
from talekeeper.providers.embedded import DEFAULT_N_CTX, EmbeddedProvider
from talekeeper.providers.openai_compat import OpenAICompatProvider, shared_client
from talekeeper.services.background.port import BackgroundWork, RunOf, WorkKind, dispatch
from talekeeper.services.background.queue import QueuedWork
from talekeeper.services.background.worker import Worker
from talekeeper.services.common.limits import quoted
from talekeeper.services.endpoints.ai_calls import CallRecord, LoggedModel
from talekeeper.services.endpoints.models import ModelSet
from talekeeper.services.exchange import backlog
from talekeeper.services.library.indexer import LibraryIndexer
from talekeeper.services.library.search import KnowledgeSearch
from talekeeper.services.memory.base import MemoryService, NullMemory
from talekeeper.services.memory.cache import BankCache
from talekeeper.services.memory.passes.runner import Kinds, Runner
from talekeeper.services.memory.passes.work import Work
from talekeeper.services.memory.service import MemorySystem
from talekeeper.services.memory.snapshot import Snapshots
from talekeeper.services.prompt.prefix import Belief, PromptPrefixes
from talekeeper.services.story import adventures
from talekeeper.services.story.scenarios import Scenario, load_scenarios
from talekeeper.services.story.turns import TurnRunner
from talekeeper.services.world.clerk_pass import clerk_passes
from talekeeper.services.world.reading import world_passes
from talekeeper.settings import (
    DEFAULT_CONTEXT_TOKENS,
    EMBEDDED,
    EXTRACTIVE,
    NO_EMBEDDINGS,
    RULES,
    SERVER_OWNED,
    AuthMode,
    Settings,
    UserEndpoints,
)
from talekeeper.storage import migrate
from talekeeper.storage.db import (
    make_engine,
    make_session_factory,
    ping,
    read_scope,
    session_scope,
)
from talekeeper.storage.dialect import JobQueue, job_queue
from talekeeper.storage.postgresql import conninfo
from talekeeper.storage.repositories.ai_calls import record as record_call
from talekeeper.storage.repositories.users import UserRepository

log = logging.getLogger(__name__)


def snapshot_folder(settings: Settings, engine: Engine) -> Path:
    """Where this database's bank snapshots live: a folder of the data folder per database
    (two databases served from one data folder never read each other's)."""
    where = engine.url.render_as_string(hide_password=True)
    digest = hashlib.sha256(where.encode("utf-8")).hexdigest()[:16]
    return Path(settings.data_dir) / "banks" / digest


@dataclass(frozen=True)
class Background:
    """The background work of one process: the two services whose runs its port's adapter
    dispatches (the memory system's passes, the library indexer's vectors); both hold the
    adapter (``MemorySystem.background``, ``LibraryIndexer.background``)."""

    memory: MemorySystem
    indexer: LibraryIndexer


def _more_passes(work: Work) -> Kinds:
    """What a run does after the memory's own passes: the world model's reading (when
    the owner has a world model), then the lore clerk's card proposals."""
    return [*world_passes(work), *clerk_passes(work, adventures.accept_proposal)]


def background_work(
    engine: Engine,
    sessions: sessionmaker[Session],
    models_for_user: Callable[[int], ModelSet],
    snapshots: Path | None = None,
) -> Background:
    """The adapter of the ``BackgroundWork`` port, by the database's queue (the
    ``background_jobs`` outbox and this process's worker, or procrastinate's queue shared
    by every process), running each subject's run: an adventure's goes to the memory
    passes' runner, a library source's to the indexer. ``snapshots``: the folder of the
    bank snapshots (none: every cold bank is built from the database)."""
    # One per process: retrieval and the passes see the same bank.
    cache = BankCache(snapshots=Snapshots(snapshots) if snapshots is not None else None)
    runner = Runner(sessions, models_for_user, cache, more=_more_passes)
    runs: dict[WorkKind, RunOf] = {WorkKind.ADVENTURE: runner.run}
    run = dispatch(runs)
    work: BackgroundWork
    match job_queue(engine):
        case JobQueue.OUTBOX:
            work = Worker(sessions, run)
        case JobQueue.SHARED:
            work = QueuedWork(sessions, run, conninfo=conninfo(engine.url))
    # The indexer asks for its runs through the adapter that runs them: it is made with the
    # adapter, then handed the kind it runs.
    indexer = LibraryIndexer(sessions, models_for_user, work)
    runs[WorkKind.LIBRARY_SOURCE] = indexer.run
    return Background(MemorySystem(sessions, cache, work), indexer)


def prefix_belief(settings: Settings, engine: Engine) -> Belief:
    """When a model server's own count of the prompt it kept is told to a player
    (``services.prompt.prefix``): it measures against whatever prompt the server saw last, so only
    where that can only be the same player's."""
    if settings.auth is AuthMode.NONE:
        return Belief.ALWAYS  # one local player
    match job_queue(engine):
        case JobQueue.OUTBOX:
            return Belief.OWN_CALLS  # this process serves alone and sees every call
        case JobQueue.SHARED:
            return Belief.NEVER  # other processes' calls reach the same models unseen


@dataclass
class Runtime:
    settings: Settings
    engine: Engine
    sessions: sessionmaker[Session]
    http: httpx.AsyncClient
    embedded: EmbeddedProvider
    schema_head: str | None = None  # read once from the migration scripts, for health checks
    memory: MemoryService = field(default_factory=NullMemory)
    scenarios: dict[str, Scenario] = field(default_factory=dict)
    knowledge: KnowledgeSearch = field(init=False)  # one per process (its vector cache)
    indexer: LibraryIndexer | None = None
    # The last prompt sent to each narrator: how much of the next one its cache keeps.
    prefixes: PromptPrefixes = field(default_factory=PromptPrefixes)
    _endpoints: dict[tuple[str, str, float], OpenAICompatProvider] = field(default_factory=dict)

    @classmethod
    def build(cls, settings: Settings, *, run_migrations: bool = True) -> Runtime:
        engine = make_engine(settings.resolved_database_url)
        if run_migrations:
            migrate.upgrade(engine)
        sessions = make_session_factory(engine)
        runtime = cls(
            settings=settings,
            engine=engine,
            sessions=sessions,
            http=shared_client(),
            embedded=EmbeddedProvider(
                n_ctx=settings.context_tokens or DEFAULT_N_CTX, threads=settings.threads
            ),
            schema_head=migrate.head_revision(engine),
            scenarios=load_scenarios(),
            prefixes=PromptPrefixes(belief=prefix_belief(settings, engine)),
        )
        background = background_work(
            engine,
            runtime.sessions,
            runtime.models_for_user,
            snapshots=snapshot_folder(settings, engine),
        )
        runtime.memory = background.memory
        runtime.indexer = background.indexer
        runtime.knowledge = KnowledgeSearch(sessions)
        return runtime

    async def start(self, *, queue_worker: bool = True) -> None:
        """Start background work on the running event loop: the outbox's worker, or where
        the database's queue is shared, a worker of that queue only with ``queue_worker``.
        First, in every process, the world of each story from before the world was kept is
        read (``read_world_backlog``). Wherever background work runs here, the library's
        sources are reconciled first (``LibraryIndexer.reconcile``: every source that
        wants vectors asked for)."""
        await asyncio.to_thread(self.read_world_backlog)
        if self.indexer is not None and (queue_worker or job_queue(self.engine) is JobQueue.OUTBOX):
            await asyncio.to_thread(self.indexer.reconcile)
        if isinstance(self.memory, MemorySystem):
            await self.memory.start(queue_worker=queue_worker)

    def read_world_backlog(self) -> None:
        """The world of every adventure the rules never read (``services.exchange.backlog``:
        once, after the upgrade that began keeping the world; later, one query). Every
        process that starts work does it before it serves or plays, even ``serve`` where a
        worker runs the queue: an adventure played before its story was read would keep
        only the world of its new turns."""
        backlog.read_backlog(self.sessions)

    @property
    def background(self) -> BackgroundWork | None:
        """The memory system's background work (None: no memory system, no work)."""
        return self.memory.background if isinstance(self.memory, MemorySystem) else None

    @property
    def turns(self) -> TurnRunner:
        return TurnRunner(
            self.sessions, self.memory, self.knowledge, self.prefixes, indexer=self.indexer
        )

    def scenario(self, scenario_id: str) -> Scenario:
        found = self.scenarios.get(scenario_id)
        if found is None:
            raise NotFound(
                f"There is no scenario {quoted(scenario_id)}; the scenarios are: "
                + ", ".join(sorted(self.scenarios))
                + "."
            )
        return found

    async def aclose(self) -> None:
        if isinstance(self.memory, MemorySystem):
            await self.memory.stop()
        await self.embedded.aclose()  # drops turns still waiting for the embedded narrator
        await self.http.aclose()
        self.engine.dispose()

    # -- users and settings -------------------------------------------------------------

    def local_user_id(self) -> int:
        with session_scope(self.sessions) as session:
            return UserRepository(session).local_user().id

    def endpoints_fixed(self) -> bool:
        """Accounts mode without ``TALEKEEPER_USER_ENDPOINTS=allow``: the endpoint and its
        key are the server's, whatever a user saved."""
        return (
            self.settings.auth == AuthMode.ACCOUNTS
            and self.settings.user_endpoints != UserEndpoints.ALLOW
        )

    def stored_overrides(self, session: Session, user_id: int) -> dict[str, Any]:
        """The user's setting overrides as saved (a key absent: the server's default)."""
        return UserRepository(session).settings(user_id)

    def save_overrides(self, session: Session, user_id: int, values: dict[str, Any]) -> None:
        """Upsert each value; ``None`` removes the override. The library follows the
        embedding model the saved settings give, in the same unit."""
        UserRepository(session).save_settings(user_id, values)
        if self.indexer is not None:
            embedding = self.models_for(self.user_settings(session, user_id), user_id).embedding
            model = embedding.model if embedding is not None else None
            self.indexer.models_changed(session, user_id, model)

    def effective(self, overrides: dict[str, Any]) -> Settings:
        """The server's settings under a user's saved overrides, without those a user may
        not set where the endpoint is the server's."""
        if self.endpoints_fixed():
            overrides = {k: v for k, v in overrides.items() if k not in SERVER_OWNED}
        return self.settings.with_overrides(overrides)

    def user_settings(self, session: Session, user_id: int) -> Settings:
        return self.effective(self.stored_overrides(session, user_id))

    def settings_for(self, user_id: int) -> Settings:
        """A user's effective settings, read in a short read unit of work of their own."""
        with read_scope(self.sessions) as session:
            return self.user_settings(session, user_id)

    # -- models -------------------------------------------------------------------------

    def provider_for(self, settings: Settings, model: str, *, saved: bool = True) -> Provider:
        if model == EMBEDDED:
            return self.embedded
        return self.endpoint_provider(settings, saved=saved)

    def endpoint_provider(self, settings: Settings, *, saved: bool = True) -> Provider:
        """The provider of the settings' endpoint, on the shared client.

        ``saved``: the endpoint is the user's saved one (one provider per URL, key and
        timeout, kept). A URL being tried before it is saved gets a provider of its own,
        not kept, that never repeats what the endpoint said (so no URL can be made to show
        the text of a page it was pointed at).
        """
        if not saved:
            return OpenAICompatProvider(
                self.http,
                settings.endpoint_url,
                api_key=settings.api_key,
                timeout=settings.timeout,
                echo_errors=False,
            )
        key = (settings.endpoint_url, settings.api_key, settings.timeout)
        provider = self._endpoints.get(key)
        if provider is None:
            provider = OpenAICompatProvider(
                self.http, settings.endpoint_url, api_key=settings.api_key, timeout=settings.timeout
            )
            self._endpoints[key] = provider
        return provider

    def models_for(
        self, settings: Settings, user_id: int | None = None, *, saved: bool = True
    ) -> ModelSet:
        """The models of ``settings``; ``saved=False`` when its endpoint is one being tried
        before it is saved (see ``endpoint_provider``)."""

        def logged(model: str, *, meets_narrator_cache: bool = True) -> LoggedModel:
            return LoggedModel(
                self.provider_for(settings, model, saved=saved),
                model,
                self.record_call,
                user_id=user_id,
                on_call=self.prefixes.called if meets_narrator_cache else None,
            )

        summary = settings.resolved_summary_model
        return ModelSet(
            narrator=logged(settings.model),
            summary=None if summary == EXTRACTIVE else logged(summary),
            # The in-process embedder (MiniLM on onnxruntime) is another model than the
            # in-process narrator, though both are named "embedded": its calls leave the
            # narrator's prompt cache as it was (services.prompt.prefix).
            embedding=None
            if settings.embedding_model == NO_EMBEDDINGS
            else logged(
                settings.embedding_model,
                meets_narrator_cache=settings.embedding_model != EMBEDDED,
            ),
            mode=settings.api_mode,
            context_tokens=settings.context_tokens or DEFAULT_CONTEXT_TOKENS,
            reply_tokens=settings.reply_tokens,
            temperature=settings.temperature,
            top_p=settings.top_p,
            memory_top_k=settings.memory_top_k,
            bank_capacity=settings.bank_capacity,
            knowledge_top_k=settings.knowledge_top_k,
            context_layout=settings.context_layout,
            world=None if settings.world_model == RULES else logged(settings.world_model),
        )

    def models_for_user(self, user_id: int) -> ModelSet:
        return self.models_for(self.settings_for(user_id), user_id)

    def ping_database(self) -> None:
        """One ``SELECT 1`` on a read-only connection; raises whatever reaching it raised."""
        ping(self.engine)

    def schema_revision(self) -> str | None:
        """The revision the database's schema is at (``None``: never migrated)."""
        return migrate.current_revision(self.engine)

    def record_call(self, record: CallRecord) -> None:
        fields: dict[str, Any] = dict(record.__dict__)
        if record.error and len(record.error) > 4000:
            fields["error"] = record.error[:4000]
        record_call(self.engine, fields)
