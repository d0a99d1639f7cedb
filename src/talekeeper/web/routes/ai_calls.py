"""``GET /api/ai-calls``: the AI call log, newest first, paged by id.

Every filter is checked before the query: ids are bounded like path ids (``MAX_ID``)
and ``kind`` is one of ``CALL_KINDS``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query
from sqlalchemy.orm import Session

from talekeeper.core.errors import InvalidInput
from talekeeper.services.ai_calls import CALL_KINDS
from talekeeper.services.limits import MAX_ID
from talekeeper.storage.repositories.ai_calls import AiCallRepository
from talekeeper.web.deps import db, user_id

router = APIRouter(tags=["ai-calls"])

MAX_PAGE = 500  # rows per page: a debug page, not an export


@router.get("/api/ai-calls")
def list_calls(
    limit: int = Query(100, ge=1, le=MAX_PAGE),
    before: int | None = Query(None, ge=1, le=MAX_ID, description="only calls with a smaller id"),
    kind: str | None = Query(None),
    adventure_id: int | None = Query(None, ge=1, le=MAX_ID),
    session: Session = Depends(db),
    uid: int = Depends(user_id),
) -> list[dict[str, Any]]:
    if kind is not None and kind not in CALL_KINDS:
        raise InvalidInput(f"kind must be one of {', '.join(CALL_KINDS)}; got {kind!r}.")
    rows = AiCallRepository(session).newest(
        uid, limit=limit, before_id=before, kind=kind, adventure_id=adventure_id
    )
    return [
        {
            "id": r.id,
            "kind": r.kind,
            "adventure_id": r.adventure_id,
            "provider": r.provider,
            "model": r.model,
            "started_at": r.started_at.isoformat(),
            "duration_ms": round(r.duration_ms, 1),
            "tokens_in": r.tokens_in,
            "tokens_out": r.tokens_out,
            "status": r.status,
            "error": r.error,
        }
        for r in rows
    ]
