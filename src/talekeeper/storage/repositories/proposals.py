"""The lore clerk's card proposals (``models.CardProposal``). Never commits.

Invariants: an adventure's proposals come oldest first (by id), whatever their state.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from talekeeper.storage.models import CardProposal


class ProposalRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def proposals(self, adventure_id: int) -> list[CardProposal]:
        query = select(CardProposal).where(CardProposal.adventure_id == adventure_id)
        return list(self.session.scalars(query.order_by(CardProposal.id)))

    def proposal(self, proposal_id: int) -> CardProposal | None:
        return self.session.get(CardProposal, proposal_id)

    def add(self, row: CardProposal) -> CardProposal:
        """Add ``row`` and give it its id (the next candidate of a listing sees it)."""
        self.session.add(row)
        self.session.flush()
        return row
