"""The AI call log. Rows are only ever added; listing is newest first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Engine, insert, select
from sqlalchemy.orm import Session

from talekeeper.storage.models import AiCall


def record(engine: Engine, fields: dict[str, Any]) -> None:
    """One call's row, on a connection of its own: a Core insert, since the record is
    written on every model call and the ORM's unit of work costs more than the insert."""
    with engine.begin() as connection:
        connection.execute(insert(AiCall), [fields])


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
