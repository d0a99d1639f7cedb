"""What the debug page reads: the AI call log and the background work of every adventure.

``GET /api/ai-calls`` lists the log newest first, paged by id. Every filter is checked
before the query: ids are bounded like path ids (``MAX_ID``), ``kind`` is one of
``CALL_KINDS`` and ``status`` one of ``CALL_STATUSES``.

``GET /api/derived`` is ``GET /api/adventures/{id}/derived`` for each of the user's
adventures at once (newest first), so one request shows where background work failed.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query
from sqlalchemy.orm import Session

from talekeeper.bootstrap import Runtime
from talekeeper.core.errors import InvalidInput
from talekeeper.services.common.limits import MAX_ID, quoted
from talekeeper.services.common.vocabulary import CallStatus
from talekeeper.services.endpoints import ai_calls
from talekeeper.services.endpoints.ai_calls import CALL_KINDS, LoggedCall
from talekeeper.services.memory.service import KINDS, derived_view
from talekeeper.services.story.adventures import listing
from talekeeper.web.deps import DB, runtime, user_id
from talekeeper.web.schemas.ai_calls import AdventureWorkOut, AiCallOut, DerivedListOut
from talekeeper.web.schemas.memory import DerivedOut

router = APIRouter(tags=["ai-calls"])

MAX_PAGE = 500  # rows per page: a debug page, not an export
CALL_STATUSES = tuple(CallStatus)  # CallRecord.status: ok, error, cancelled


@router.get("/api/ai-calls", response_model=list[AiCallOut])
def list_calls(
    limit: int = Query(100, ge=1, le=MAX_PAGE),
    before: int | None = Query(None, ge=1, le=MAX_ID, description="only calls with a smaller id"),
    kind: str | None = Query(None),
    status: str | None = Query(None),
    adventure_id: int | None = Query(None, ge=1, le=MAX_ID),
    session: Session = DB,
    uid: int = Depends(user_id),
) -> list[LoggedCall]:
    if kind is not None and kind not in CALL_KINDS:
        raise InvalidInput(f"kind must be one of {', '.join(CALL_KINDS)}; got {quoted(kind)}.")
    if status is not None and status not in CALL_STATUSES:
        raise InvalidInput(
            f"status must be one of {', '.join(CALL_STATUSES)}; got {quoted(status)}."
        )
    return ai_calls.newest(
        session,
        uid,
        limit=limit,
        before_id=before,
        kind=kind,
        status=status,
        adventure_id=adventure_id,
    )


@router.get("/api/derived")
def list_derived(
    session: Session = DB, uid: int = Depends(user_id), rt: Runtime = Depends(runtime)
) -> DerivedListOut:
    """Every adventure's background work: per kind its state, last success, last failure
    with its error, and failures in a row; and whether work waits."""
    return DerivedListOut(
        kinds=list(KINDS),
        adventures=[
            AdventureWorkOut(
                id=a.id,
                title=a.title,
                derived=DerivedOut.model_validate(derived_view(session, a.id, rt.background)),
            )
            for a in listing(session, uid)
        ],
    )
