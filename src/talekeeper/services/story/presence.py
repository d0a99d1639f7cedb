"""Who is here and who is writing in a shared adventure (docs/sharing.md, "Who is here").

Invariants:

- One of the adventure's people is *here* while a page of theirs follows its feed: the
  stream touches their row (``touch``) at least every ``TOUCH_S``; a row not touched for
  ``HERE_S`` (a closed tab, a process that died) is no one here.
- One is *writing* while here and their action box was typed in within ``WRITING_S``:
  their page says so (``writing``) at most every few seconds while they type, and says
  they stopped when the box is emptied or the action sent.
- Only the adventure's people now are listed, each by the persona they play: the row of
  someone removed is never read as theirs again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from sqlalchemy.orm import Session

from talekeeper.core.clock import utcnow
from talekeeper.services.story import sharing
from talekeeper.services.story.access import load_adventure
from talekeeper.services.story.sharing import Asker, needs_accounts
from talekeeper.services.story.view import Author
from talekeeper.storage.models import Adventure
from talekeeper.storage.repositories.presence import PresenceRepository
from talekeeper.storage.vocabulary import MemberRole

TOUCH_S: Final = 10.0  # how often an open feed stream says its reader is here
HERE_S: Final = 30.0  # not touched this long: gone
WRITING_S: Final = 8.0  # typed this long ago: still writing


@dataclass(frozen=True)
class PresenceView:
    here: list[Author]  # the people with the adventure open, in the order they first came
    writing: list[Author]  # those of them typing an action now


def touch(session: Session, adventure_id: int, uid: int, writing: bool | None = None) -> None:
    """``uid`` is here now (and, when ``writing`` is given, is or is no longer writing).
    Call inside a write unit."""
    row = PresenceRepository(session).row(adventure_id, uid)
    now = utcnow()
    row.seen_at = now
    if writing is not None:
        row.writing_at = now if writing else None


def now(session: Session, adventure: Adventure) -> PresenceView:
    """Who is here and who is writing, by the persona each plays."""
    named = sharing.people(session, adventure)
    moment = utcnow()
    rows = PresenceRepository(session).seen_since(adventure.id, moment - timedelta(seconds=HERE_S))
    present = [r for r in rows if r.user_id in named]
    typing_since = moment - timedelta(seconds=WRITING_S)
    return PresenceView(
        here=[Author(r.user_id, named[r.user_id]) for r in present],
        writing=[
            Author(r.user_id, named[r.user_id])
            for r in present
            if r.writing_at is not None and r.writing_at >= typing_since
        ],
    )


def writing(session: Session, adventure_id: int, who: Asker, typing: bool) -> PresenceView:
    """A player's page says they are typing an action (``typing``) or stopped; who is
    here and writing now."""
    adventure = load_adventure(session, adventure_id, who.uid, MemberRole.PLAYER)
    needs_accounts(who)
    touch(session, adventure_id, who.uid, typing)
    session.flush()
    return now(session, adventure)
