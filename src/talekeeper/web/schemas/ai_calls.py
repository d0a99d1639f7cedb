"""What the debug page reads: the AI call log and every adventure's background work.

A logged call reads ``services.endpoints.ai_calls.LoggedCall`` by attribute, every key always
present (``null`` where the call has no adventure, no token count or no error). An
adventure's background work is ``DerivedOut``, the answer of its own ``derived`` route.
"""

from __future__ import annotations

from talekeeper.web.schemas.common import Out, Timestamp
from talekeeper.web.schemas.memory import DerivedOut


class AiCallOut(Out):
    id: int
    kind: str
    adventure_id: int | None
    provider: str
    model: str
    started_at: Timestamp
    duration_ms: float  # to a tenth of a millisecond
    tokens_in: int | None
    tokens_out: int | None
    status: str  # ok, error or cancelled
    error: str | None


class AdventureWorkOut(Out):
    id: int
    title: str
    derived: DerivedOut


class DerivedListOut(Out):
    kinds: list[str]  # the kinds of background work, in run order
    adventures: list[AdventureWorkOut]  # newest first
