"""Who may do what in an adventure (docs/sharing.md).

Invariants:

- The owner is its **host**; an account with a member row is a **co-host**, a
  **player** or a **viewer**; anyone else is no one to it, and is told the adventure does
  not exist.
- Roles are ordered viewer < player < co-host < host: what a role may do, every higher
  one may. What changes the story and what it is made of (plot, cards, memory, world,
  settings) needs a co-host, the default; the host alone shares it (invites, roles,
  removal), attaches its own library and deletes it (``need=MemberRole.HOST``).
- A member's role is read from the database on every request, so a change of role or a
  removal holds at once in every process.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from sqlalchemy.orm import Session

from talekeeper.core.errors import Forbidden, NotFound
from talekeeper.storage.models import Adventure
from talekeeper.storage.repositories.sharing import SharingRepository
from talekeeper.storage.repositories.story import StoryRepository
from talekeeper.storage.vocabulary import MemberRole

RANK = {MemberRole.VIEWER: 0, MemberRole.PLAYER: 1, MemberRole.COHOST: 2, MemberRole.HOST: 3}
WHO = {
    MemberRole.VIEWER: "its members",
    MemberRole.PLAYER: "its host, co-hosts and players",
    MemberRole.COHOST: "its host and co-hosts",
    MemberRole.HOST: "its host",
}


def role_of(session: Session, adventure: Adventure | None, user_id: int) -> MemberRole | None:
    """``user_id``'s role in ``adventure``; None: not one of its people."""
    if adventure is None:
        return None
    if adventure.user_id == user_id:
        return MemberRole.HOST
    member = SharingRepository(session).member(adventure.id, user_id)
    return None if member is None else MemberRole(member.role)


def require(role: MemberRole, need: MemberRole) -> None:
    if RANK[role] < RANK[need]:
        raise Forbidden(f"You are a {role} of this adventure: only {WHO[need]} may do this.")


def load_adventure(
    session: Session, adventure_id: int, user_id: int, need: MemberRole = MemberRole.COHOST
) -> Adventure:
    """The adventure, when ``user_id`` may do what needs ``need`` in it (its host or a
    co-host, by default: docs/sharing.md). Not a member at all: "no adventure", as for any
    other user's; a member whose role is short of ``need``: 403, saying who may."""
    adventure = StoryRepository(session).adventure(adventure_id, None)
    role = role_of(session, adventure, user_id)
    if adventure is None or role is None:
        raise NotFound(f"There is no adventure {adventure_id}.")
    require(role, need)
    return adventure


class _OfAdventure(Protocol):
    @property
    def adventure_id(self) -> int: ...


T = TypeVar("T", bound=_OfAdventure)


def owned(session: Session, row: T | None, user_id: int, missing: NotFound) -> T:
    """``row`` (a card, an event, a proposal, a memory: anything of one adventure) when it
    exists and the user may change its adventure (its host or a co-host); else
    ``missing``: someone else's reads as none at all, not as their adventure."""
    if row is None:
        raise missing
    try:
        load_adventure(session, row.adventure_id, user_id)
    except NotFound:
        raise missing from None
    return row
