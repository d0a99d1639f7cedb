"""Members and invites of shared adventures (``models.AdventureMember``,
``models.AdventureInvite``). Never commits.

Invariants: members come in the order they joined (by id); an invite is found only by the
SHA-256 of its code; a feed is read in the order it was written (by id).

An adventure's members are read once a transaction: saving an action asks whether its
adventure is shared, who plays it and whether to write a feed event, and one player alone
asks it on every turn. The list read is kept in the session until the transaction ends or
this repository adds or removes a member (a member's fields changed in place are the same
objects the list holds).
"""

from __future__ import annotations

from sqlalchemy import delete, event, select
from sqlalchemy.orm import Session, SessionTransaction

from talekeeper.storage.models import (
    Adventure,
    AdventureInvite,
    AdventureMember,
    FeedEvent,
    User,
)

_MEMBERS = "sharing.members"  # ``Session.info``: adventure id -> its members, this transaction


@event.listens_for(Session, "after_transaction_end")
def _forget_members(session: Session, transaction: SessionTransaction) -> None:
    # The transaction, or a savepoint (its rollback may undo a member); not the inner
    # spans every flush opens and closes.
    if transaction.parent is None or transaction.nested:
        session.info.pop(_MEMBERS, None)


class SharingRepository:
    def __init__(self, session: Session) -> None:
        self.session = session

    def member(self, adventure_id: int, user_id: int) -> AdventureMember | None:
        query = select(AdventureMember).where(
            AdventureMember.adventure_id == adventure_id, AdventureMember.user_id == user_id
        )
        return self.session.scalars(query).first()

    def members(self, adventure_id: int) -> list[tuple[AdventureMember, str]]:
        """Each member with its account's name, in the order they joined."""
        known: dict[int, list[tuple[AdventureMember, str]]]
        known = self.session.info.setdefault(_MEMBERS, {})
        if adventure_id not in known:
            query = (
                select(AdventureMember, User.name)
                .join(User, User.id == AdventureMember.user_id)
                .where(AdventureMember.adventure_id == adventure_id)
                .order_by(AdventureMember.id)
            )
            known[adventure_id] = [(row, name) for row, name in self.session.execute(query)]
        return list(known[adventure_id])

    def count(self, adventure_id: int) -> int:
        return len(self.members(adventure_id))

    def shared_with(self, user_id: int) -> list[tuple[Adventure, str]]:
        """The adventures ``user_id`` is a member of (not the host of), each with the role,
        the most recently played first."""
        query = (
            select(Adventure, AdventureMember.role)
            .join(AdventureMember, AdventureMember.adventure_id == Adventure.id)
            .where(AdventureMember.user_id == user_id)
            .order_by(Adventure.updated_at.desc())
        )
        return [(adventure, role) for adventure, role in self.session.execute(query)]

    def invite(self, invite_id: int) -> AdventureInvite | None:
        return self.session.get(AdventureInvite, invite_id)

    def invite_by_hash(self, code_hash: str) -> AdventureInvite | None:
        query = select(AdventureInvite).where(AdventureInvite.code_hash == code_hash)
        return self.session.scalars(query.with_for_update()).first()

    def invites(self, adventure_id: int) -> list[AdventureInvite]:
        query = select(AdventureInvite).where(AdventureInvite.adventure_id == adventure_id)
        return list(self.session.scalars(query.order_by(AdventureInvite.id)))

    def feed_since(self, adventure_id: int, after: int, limit: int) -> list[FeedEvent]:
        """The adventure's feed events after id ``after``, oldest first, at most ``limit``."""
        query = (
            select(FeedEvent)
            .where(FeedEvent.adventure_id == adventure_id, FeedEvent.id > after)
            .order_by(FeedEvent.id)
            .limit(limit)
        )
        return list(self.session.scalars(query))

    def add(self, row: AdventureMember | AdventureInvite | FeedEvent) -> None:
        self.session.add(row)
        self.session.flush()
        if isinstance(row, AdventureMember):
            self.session.info.pop(_MEMBERS, None)

    def remove(self, row: AdventureMember) -> None:
        self.session.delete(row)
        self.session.flush()
        self.session.info.pop(_MEMBERS, None)

    def end(self, adventure_id: int) -> None:
        """No member and no invite is left."""
        for table in (AdventureMember, AdventureInvite):
            self.session.execute(delete(table).where(table.adventure_id == adventure_id))
        self.session.info.pop(_MEMBERS, None)
