"""The feed of a shared adventure (docs/sharing.md): what changed in its story or among its
members, for every member's page to follow.

Invariants:

- An event is written in the transaction of the change it tells of (``tell``), and every
  writing unit of work holds the database's one writer lock, so ids grow in the order the
  changes were committed: a page that has seen event N has seen all of its adventure's
  events up to N, and resumes after N without a gap.
- Story changes are told only while the adventure has members (single play writes no
  feed); membership changes are always told, the last removal included.
- An event carries ids and places, never text: a page reads what it needs through the
  routes its role allows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from talekeeper.storage.models import FeedEvent
from talekeeper.storage.repositories.sharing import SharingRepository
from talekeeper.storage.vocabulary import FeedKind

PAGE = 200  # the most events one read of the feed returns


@dataclass(frozen=True)
class FeedView:
    id: int
    kind: FeedKind
    data: dict[str, Any]
    created_at: datetime


def tell(session: Session, adventure_id: int, kind: FeedKind, **data: Any) -> None:
    """Write the event, if anyone but the host is there to read it (always for ``members``)."""
    repo = SharingRepository(session)
    if kind is FeedKind.MEMBERS or repo.count(adventure_id):
        repo.add(FeedEvent(adventure_id=adventure_id, kind=kind, data=json.dumps(data)))


def since(session: Session, adventure_id: int, after: int) -> list[FeedView]:
    rows = SharingRepository(session).feed_since(adventure_id, after, PAGE)
    return [FeedView(r.id, FeedKind(r.kind), json.loads(r.data), r.created_at) for r in rows]
