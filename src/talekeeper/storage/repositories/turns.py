"""The adventures' turn tickets (``models.TurnTicket``). Never commits.

Invariants: a ticket is live while its ``seen_at`` is at or after the cutoff the caller
gives; of an adventure's live tickets, those with lower ids came first.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ColumnElement, delete, func, select, update
from sqlalchemy.orm import Session

from talekeeper.storage.models import TurnTicket


class TurnTicketRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def add(self, adventure_id: int, user_id: int) -> int:
        ticket = TurnTicket(adventure_id=adventure_id, user_id=user_id)
        self.session.add(ticket)
        self.session.flush()
        return ticket.id

    def exists(self, ticket_id: int) -> bool:
        return self.session.get(TurnTicket, ticket_id) is not None

    def bury(self, adventure_id: int, cutoff: datetime) -> None:
        """Delete the adventure's tickets not touched since ``cutoff``."""
        self.session.execute(
            delete(TurnTicket).where(
                TurnTicket.adventure_id == adventure_id, TurnTicket.seen_at < cutoff
            )
        )

    def before(self, adventure_id: int, ticket_id: int, cutoff: datetime) -> int:
        """How many live tickets of the adventure came before ``ticket_id``."""
        query = select(func.count()).where(_live(adventure_id, cutoff), TurnTicket.id < ticket_id)
        return int(self.session.scalar(query) or 0)

    def touch(self, ticket_id: int, now: datetime) -> None:
        self.session.execute(
            update(TurnTicket).where(TurnTicket.id == ticket_id).values(seen_at=now)
        )

    def delete(self, ticket_id: int) -> None:
        self.session.execute(delete(TurnTicket).where(TurnTicket.id == ticket_id))

    def write_so_far(self, ticket_id: int, text: str) -> None:
        self.session.execute(
            update(TurnTicket).where(TurnTicket.id == ticket_id).values(reply_so_far=text)
        )

    def holder(self, adventure_id: int, cutoff: datetime) -> TurnTicket | None:
        """The adventure's first live ticket: the turn being answered."""
        query = select(TurnTicket).where(_live(adventure_id, cutoff)).order_by(TurnTicket.id)
        return self.session.scalars(query.limit(1)).first()

    def askers(self, adventure_id: int, cutoff: datetime) -> list[int]:
        """Who asked the adventure's live tickets, the first first."""
        query = (
            select(TurnTicket.user_id).where(_live(adventure_id, cutoff)).order_by(TurnTicket.id)
        )
        return list(self.session.scalars(query))


def _live(adventure_id: int, cutoff: datetime) -> ColumnElement[bool]:
    return (TurnTicket.adventure_id == adventure_id) & (TurnTicket.seen_at >= cutoff)
