"""What a run left in the database, read after its background work was done.

- Lost actions: an action a player was answered 2xx for that the story does not hold;
  doubled: one the story holds more than once (a resend of an action already saved).
- Behind: blocks of the story a memory pass would still write (``due_blocks``) when play
  ended and no work was pending (a run writes at most ``writer.MAX_PER_RUN`` memories, and
  a failed pass waits for the next run, which the next turn asks for).
- Lost memories: blocks still due after ``run.settle`` asked for those next runs until no
  more were written: a job that vanished, or a pass that cannot succeed, leaves them.
- Duplicated memories: two automatic memories on the path covering one action (a pass
  run twice over one block, or two runs at once).
- Overlapping passes: two background model calls (memory or summary writing) for one
  adventure whose times overlap, from the AI call log. One run makes those calls one
  after another, so an overlap is two runs for one adventure at the same time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from benchmarks.scaleout.deploy import Account
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from talekeeper.services.background.queue import QueuedWork
from talekeeper.services.memory.passes.blocks import due_blocks
from talekeeper.services.memory.source import path_of
from talekeeper.storage.db import make_engine, make_session_factory, read_scope, session_scope
from talekeeper.storage.dialect import JobQueue, job_queue
from talekeeper.storage.models import Action, Adventure, AiCall, Memory
from talekeeper.storage.postgresql import conninfo
from talekeeper.storage.repositories.jobs import JobRepository, Subject
from talekeeper.storage.repositories.memory import MemoryRepository

WRITING = ("memory", "summary")  # background calls of one run come one after another


@dataclass
class Left:
    acknowledged: int = 0
    lost_actions: int = 0
    doubled_actions: int = 0
    memories: int = 0
    behind: int = 0  # blocks due when play ended
    lost_memories: int = 0  # blocks still due after the catch-up runs
    catch_up_runs: int = 0  # rounds of catch-up runs asked for
    duplicated_memories: int = 0  # actions covered twice on the path
    background_calls: int = 0
    overlapping_passes: int = 0

    @property
    def clean(self) -> bool:
        lost = self.lost_actions + self.doubled_actions + self.lost_memories
        return lost + self.duplicated_memories + self.overlapping_passes == 0


@contextmanager
def _sessions(database_url: str) -> Iterator[tuple[Engine, sessionmaker[Session]]]:
    engine = make_engine(database_url)
    try:
        yield engine, make_session_factory(engine)
    finally:
        engine.dispose()


def check(database_url: str, players: list[Account]) -> Left:
    """What the run left (its ``lost_memories``: the blocks due now)."""
    left = Left()
    with _sessions(database_url) as (_, sessions), read_scope(sessions) as session:
        for player in players:
            _one(session, player, left)
    return left


def request_runs(database_url: str, players: list[Account]) -> None:
    """Ask for a background run of every player's adventure, through the port a turn asks
    through (the deployment's own processes run it)."""
    with _sessions(database_url) as (engine, sessions):
        request = _outbox  # the server's worker finds the row at its next poll
        if job_queue(engine) is JobQueue.SHARED:
            request = QueuedWork(sessions, _never, conninfo=conninfo(engine.url)).request
        for player in players:
            with session_scope(sessions) as session:
                request(session, Subject.adventure(player.adventure))


def _outbox(session: Session, subject: Subject, after: timedelta | None = None) -> None:
    JobRepository(session).request_work(subject)


async def _never(subject: Subject) -> None:
    raise AssertionError("this process only defers")


def _one(session: Session, player: Account, left: Left) -> None:
    aid = player.adventure
    adventure = session.get(Adventure, aid)
    assert adventure is not None
    active = select(Action.text).where(Action.adventure_id == aid, Action.state == "active")
    texts = Counter(session.scalars(active))
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
