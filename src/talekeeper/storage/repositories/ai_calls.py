"""The AI call log. Rows are only ever added; listing is newest first."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from talekeeper.storage.models import AiCall


class AiCallRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def add(self, call: AiCall) -> AiCall:
        self.session.add(call)
        self.session.flush()
        return call

    def newest(
        self,
        user_id: int,
        *,
        limit: int = 100,
        before_id: int | None = None,
        kind: str | None = None,
        status: str | None = None,
        adventure_id: int | None = None,
    ) -> Sequence[AiCall]:
        query = select(AiCall).where(AiCall.user_id == user_id)
        if before_id is not None:
            query = query.where(AiCall.id < before_id)
        if kind is not None:
            query = query.where(AiCall.kind == kind)
        if status is not None:
            query = query.where(AiCall.status == status)
        if adventure_id is not None:
            query = query.where(AiCall.adventure_id == adventure_id)
        return self.session.scalars(query.order_by(AiCall.id.desc()).limit(limit)).all()
