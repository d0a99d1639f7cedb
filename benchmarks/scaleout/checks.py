"""What a run left in the database, read after its background work was done.

- Lost actions: an action a player was answered 2xx for that the story does not hold;
  doubled: one the story holds more than once (a resend of an action already saved).
- Lost memories: blocks of the story a memory pass would still write now
  (``passes.blocks.due_blocks``), once no work is pending: a job that vanished leaves
  them. Duplicated memories: two automatic memories on the path covering one action
  (a pass run twice over one block, or two runs at once).
- Overlapping passes: two background model calls (memory or summary writing) for one
  adventure whose times overlap, from the AI call log. One run makes those calls one
  after another, so an overlap is two runs for one adventure at the same time.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta

from benchmarks.scaleout.players import Player
from sqlalchemy import select
from sqlalchemy.orm import Session

from talekeeper.services.memory.passes.blocks import due_blocks
from talekeeper.services.memory.source import path_of
from talekeeper.storage.db import make_engine, make_session_factory, read_scope
from talekeeper.storage.models import Action, Adventure, AiCall, Memory
from talekeeper.storage.repositories.memory import MemoryRepository

WRITING = ("memory", "summary")  # background calls of one run come one after another


@dataclass
class Left:
    acknowledged: int = 0
    lost_actions: int = 0
    doubled_actions: int = 0
    memories: int = 0
    lost_memories: int = 0  # blocks still due
    duplicated_memories: int = 0  # actions covered twice on the path
    background_calls: int = 0
    overlapping_passes: int = 0


def check(database_url: str, players: list[Player]) -> Left:
    engine = make_engine(database_url)
    sessions = make_session_factory(engine)
    left = Left()
    try:
        with read_scope(sessions) as session:
            for player in players:
                _one(session, player, left)
    finally:
        engine.dispose()
    return left


def _one(session: Session, player: Player, left: Left) -> None:
    aid = player.adventure
    adventure = session.get(Adventure, aid)
    assert adventure is not None
    texts = Counter(
        session.scalars(
            select(Action.text).where(Action.adventure_id == aid, Action.state == "active")
        )
    )
    left.acknowledged += len(player.acknowledged)
    left.lost_actions += sum(1 for t in player.acknowledged if texts[t] == 0)
    left.doubled_actions += sum(1 for t in player.acknowledged if texts[t] > 1)
    left.memories += len(list(session.scalars(select(Memory.id).where(Memory.adventure_id == aid))))
    left.lost_memories += len(due_blocks(session, adventure))
    covered = Counter[int]()
    lineage = path_of(session, adventure).lineage
    for first, last in MemoryRepository(session).coverage(aid, lineage):
        covered.update(range(first, last + 1))
    left.duplicated_memories += sum(1 for n in covered.values() if n > 1)
    calls = session.execute(
        select(AiCall.started_at, AiCall.duration_ms)
        .where(AiCall.adventure_id == aid, AiCall.kind.in_(WRITING))
        .order_by(AiCall.started_at)
    ).all()
    left.background_calls += len(calls)
    left.overlapping_passes += overlaps(
        [(started, started + timedelta(milliseconds=float(ms))) for started, ms in calls]
    )


def overlaps(calls: list[tuple[datetime, datetime]]) -> int:
    """How many calls (start, end) began before an earlier-started one had ended."""
    count = 0
    last_end: datetime | None = None
    for started, ended in sorted(calls):
        if last_end is not None and started < last_end:
            count += 1
        if last_end is None or ended > last_end:
            last_end = ended
    return count
