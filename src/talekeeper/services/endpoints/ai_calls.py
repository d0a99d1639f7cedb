"""Every model call is logged: narration, memory, summary, embedding, test.

``LoggedModel`` wraps a provider and a model name for one purpose and writes
one ``CallRecord`` per call to a sink, success or failure, with duration and
token counts. The sink writes in its own short transaction (a failed turn
rolls back, but the record of why it failed must stay), and it is called off
the event loop. A sink that fails is logged and never breaks the call it
describes.

Every call but narration is also told to ``on_call`` as it starts (the model's
``cache_key`` and the user): the server's prompt cache now holds that call's
prompt, which ``services.prompt.prefix`` must know so that a turn's prompt is never
measured against another user's. A turn's narration tells it itself, with the
prompt's tokens.

``newest`` reads the log back as ``LoggedCall``s, durations rounded to a tenth of a
millisecond.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy.orm import Session

from talekeeper.core.clock import utcnow
from talekeeper.core.errors import TalekeeperError
from talekeeper.providers.base import Chunk, Completion, CompletionRequest, Embeddings, Provider
from talekeeper.storage.models import AiCall
from talekeeper.storage.repositories.ai_calls import AiCallRepository
from talekeeper.storage.vocabulary import CallStatus

log = logging.getLogger(__name__)

CallKind = Literal["narration", "memory", "summary", "embedding", "world", "test"]
CALL_KINDS: tuple[str, ...] = ("narration", "memory", "summary", "embedding", "world", "test")


@dataclass(frozen=True)
class CallRecord:
    kind: str
    provider: str
    model: str
    started_at: datetime
    duration_ms: float
    status: CallStatus
    tokens_in: int | None = None
    tokens_out: int | None = None
    error: str | None = None
    user_id: int | None = None
    adventure_id: int | None = None


@dataclass(frozen=True)
class LoggedCall:
    """A ``CallRecord`` as the log holds it, with its id (the user is the reader)."""

    id: int
    kind: str
    adventure_id: int | None
    provider: str
    model: str
    started_at: datetime
    duration_ms: float
    tokens_in: int | None
    tokens_out: int | None
    status: str  # a CallStatus value
    error: str | None


CallSink = Callable[[CallRecord], None]
CallSeen = Callable[[tuple[str, str], int | None], None]  # (cache key, user) as a call starts


class LoggedModel:
    """One provider + one model name, with every call recorded."""

    def __init__(
        self,
        provider: Provider,
        model: str,
        sink: CallSink,
        *,
        user_id: int | None = None,
        on_call: CallSeen | None = None,
    ) -> None:
        self.provider = provider
        self.model = model
        self.sink = sink
        self.user_id = user_id
        self.on_call = on_call

    @property
    def provider_name(self) -> str:
        return self.provider.info.name

    @property
    def cache_key(self) -> tuple[str, str]:
        """Whose prompt cache a call meets: the endpoint's and the model's."""
        return (self.provider_name, self.model)

    def _seen(self, kind: str) -> None:
        if self.on_call is not None and kind != "narration":
            self.on_call(self.cache_key, self.user_id)

    async def complete(
        self, request: CompletionRequest, *, kind: CallKind, adventure_id: int | None = None
    ) -> Completion:
        self._seen(kind)
        started, clock = utcnow(), time.perf_counter()
        try:
            result = await self.provider.complete(request)
        except TalekeeperError as exc:
            await self._record(kind, started, clock, adventure_id, error=exc.message)
            raise
        await self._record(
            kind, started, clock, adventure_id, result.tokens_in, self._tokens_out(result)
        )
        return result

    async def stream(
        self, request: CompletionRequest, *, kind: CallKind, adventure_id: int | None = None
    ) -> AsyncIterator[Chunk]:
        self._seen(kind)
        started, clock = utcnow(), time.perf_counter()
        finished = False
        try:
            async for chunk in self.provider.stream(request):
                if chunk.done is not None:
                    finished = True
                    done = chunk.done
                    await self._record(
                        kind, started, clock, adventure_id, done.tokens_in, self._tokens_out(done)
                    )
                yield chunk
        except TalekeeperError as exc:
            finished = True  # recorded here as the error it is, not again as a cancellation
            await self._record(kind, started, clock, adventure_id, error=exc.message)
            raise
        finally:
            if not finished:
                # The consumer stopped early (client went away): still leave a trace.
                await asyncio.shield(
                    self._record(kind, started, clock, adventure_id, status=CallStatus.CANCELLED)
                )

    async def embed(
        self, texts: list[str], *, kind: CallKind = "embedding", adventure_id: int | None = None
    ) -> Embeddings:
        self._seen(kind)
        started, clock = utcnow(), time.perf_counter()
        try:
            result = await self.provider.embed(texts, self.model)
        except TalekeeperError as exc:
            await self._record(kind, started, clock, adventure_id, error=exc.message)
            raise
        tokens = result.tokens_in
        if tokens is None:
            counter = self.provider.token_counter(self.model)
            tokens = sum(counter.count(t) for t in texts)
        await self._record(kind, started, clock, adventure_id, tokens, None)
        return result

    def _tokens_out(self, result: Completion) -> int:
        if result.tokens_out is not None:
            return result.tokens_out
        return self.provider.token_counter(self.model).count(result.text)

    async def _record(
        self,
        kind: str,
        started: datetime,
        clock: float,
        adventure_id: int | None,
        tokens_in: int | None = None,
        tokens_out: int | None = None,
        *,
        error: str | None = None,
        status: CallStatus | None = None,
    ) -> None:
        record = CallRecord(
            kind=kind,
            provider=self.provider_name,
            model=self.model,
            started_at=started,
            duration_ms=(time.perf_counter() - clock) * 1000,
            status=status or (CallStatus.ERROR if error else CallStatus.OK),
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            error=error,
            user_id=self.user_id,
            adventure_id=adventure_id,
        )
        try:
            await asyncio.to_thread(self.sink, record)
        except Exception:  # noqa: BLE001 - logging a call must never break the call
            log.exception("could not record an AI call (%s, %s)", kind, self.model)


def newest(
    session: Session,
    user_id: int,
    *,
    limit: int,
    before_id: int | None,
    kind: str | None,
    status: str | None,
    adventure_id: int | None,
) -> list[LoggedCall]:
    """One page of the user's call log, newest first (the Debug page)."""
    rows = AiCallRepository(session).newest(
        user_id,
        limit=limit,
        before_id=before_id,
        kind=kind,
        status=status,
        adventure_id=adventure_id,
    )
    return [_logged(row) for row in rows]


def _logged(row: AiCall) -> LoggedCall:
    return LoggedCall(
        id=row.id,
        kind=row.kind,
        adventure_id=row.adventure_id,
        provider=row.provider,
        model=row.model,
        started_at=row.started_at,
        duration_ms=round(row.duration_ms, 1),
        tokens_in=row.tokens_in,
        tokens_out=row.tokens_out,
        status=row.status,
        error=row.error,
    )
