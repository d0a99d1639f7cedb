"""The world of a story written before the world was kept (docs/world.md, "Upgrading from
a version before the world"): each adventure in the backlog (``WorldBacklog``: migration
0017 lists every one that had no world) has its whole story read by the rules once, at the
start of background work, exactly as an import of a file from before the world reads its
story (``world.derived``), and written as that import writes it (``store.write_world``).

Invariants:

- Only an adventure in the backlog is read. One made later is read action by action as it
  is written, and is never read again here, whatever its world holds.
- One that has a world when its turn comes (an entity or an event of any origin: it was
  played, or the player set an event, before it was read) is left as it is and leaves the
  backlog: its world was already begun, and rows derived here would clash with it.
- Every branch and every action (every take, undone and removed ones) is read, each
  event on its own action's node, with origin ``rules``: the path a player switches to
  projects its own state. Nothing here writes a player's event.
- The story is read in a read unit and its world derived with no transaction open (CPU
  only); the write unit then checks that the adventure is still in the backlog, still has
  no world, and that its story is still the one read (else it is read again, up to
  ``ATTEMPTS`` times), and holds only the inserts and the row's deletion. So two
  processes that start at once (PostgreSQL's ``serve`` and ``worker``) never both write
  one adventure's world: the second finds its row gone and writes nothing. Each reads
  the backlog in its own random order, so they seldom read the same one.
- A failure is one adventure's: logged, counted on its row with its error, and the next
  adventure is read; the next start reads it again.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from datetime import datetime
from enum import Enum, auto

from sqlalchemy.orm import Session, sessionmaker

from talekeeper.core.errors import Conflict, TalekeeperError
from talekeeper.services.exchange import world
from talekeeper.services.exchange.outbound import StoryEntries, story_entries
from talekeeper.services.exchange.store import write_world
from talekeeper.storage.db import read_scope, session_scope
from talekeeper.storage.models import Adventure
from talekeeper.storage.repositories.story import StoryRepository
from talekeeper.storage.repositories.world_backlog import WorldBacklogRepository

log = logging.getLogger(__name__)

ATTEMPTS = 3  # readings of one adventure whose story changed before its world was written


class Outcome(Enum):
    """How reading one adventure of the backlog ended (never stored)."""

    READ = auto()  # its world was derived and written; it left the backlog
    HAD_WORLD = auto()  # it had a world already: left as it was; it left the backlog
    GONE = auto()  # no longer in the backlog (another process read it, or it was deleted)
    FAILED = auto()  # counted on its row; read again at the next start


@dataclass(frozen=True)
class Reading:
    """What the rules read of one adventure: its tree as a file lists it, and when it
    began (an entity no action names is as old as the adventure)."""

    tree: StoryEntries
    since: datetime


def read_backlog(sessions: sessionmaker[Session]) -> dict[int, Outcome]:
    """Read every adventure of the backlog, each in its own units; how each ended."""
    with read_scope(sessions) as session:
        waiting = WorldBacklogRepository(session).waiting()
    if not waiting:
        return {}  # every start but the first after the upgrade: one query
    random.shuffle(waiting)  # see the module's invariants: two processes, seldom one story
    log.info(
        "Reading the world of %d adventure(s) written before the world was kept "
        "(once, after the upgrade).",
        len(waiting),
    )
    started = time.monotonic()
    outcomes = {adventure_id: read_one(sessions, adventure_id) for adventure_id in waiting}
    counted = {o: sum(1 for v in outcomes.values() if v is o) for o in Outcome}
    log.info(
        "Read the world of %d adventure(s) in %.1f s (%d had a world already, %d read "
        "elsewhere, %d failed and are read again at the next start).",
        counted[Outcome.READ],
        time.monotonic() - started,
        counted[Outcome.HAD_WORLD],
        counted[Outcome.GONE],
        counted[Outcome.FAILED],
    )
    return outcomes


def read_one(sessions: sessionmaker[Session], adventure_id: int) -> Outcome:
    """Read one adventure of the backlog; a failure is recorded, never raised."""
    try:
        for _ in range(ATTEMPTS):
            outcome = _attempt(sessions, adventure_id)
            if outcome is not None:
                return outcome
        raise Conflict(f"Its story changed each of the {ATTEMPTS} times it was read.")
    except TalekeeperError as exc:
        error = exc.message
        log.warning("Reading the world of adventure %s failed: %s", adventure_id, error)
    except Exception as exc:  # one story's failure must never stop the others
        error = f"{type(exc).__name__}: {exc}"
        log.exception("Reading the world of adventure %s failed", adventure_id)
    try:
        with session_scope(sessions) as session:
            WorldBacklogRepository(session).failed(adventure_id, error)
    except Exception:  # the failure stays in the log; the row, unchanged, is read again
        log.exception("Recording the failed reading of adventure %s failed", adventure_id)
    return Outcome.FAILED


def _attempt(sessions: sessionmaker[Session], adventure_id: int) -> Outcome | None:
    """One reading: the story read, its world derived, then written if nothing changed
    meanwhile. None: the story changed before the write (read it again)."""
    read = _read(sessions, adventure_id)
    if read is Outcome.GONE:
        return read
    found = None  # the CPU's part, with no transaction open
    if isinstance(read, Reading):
        found = world.derived(read.tree.branches, read.tree.actions, read.since)
    with session_scope(sessions) as session:
        backlog = WorldBacklogRepository(session)
        if backlog.row(adventure_id) is None:
            return Outcome.GONE
        if backlog.has_world(adventure_id):
            backlog.done(adventure_id)
            log.info(
                "Adventure %s was played before its story was read for the world: its world "
                "holds what was read since, and its older story is not read.",
                adventure_id,
            )
            return Outcome.HAD_WORLD
        if not isinstance(read, Reading) or found is None:
            return None  # it had a world when read, and has none now
        if story_entries(StoryRepository(session), adventure_id) != read.tree:
            return None  # a change since it was read: what was derived may not hold
        ids = {
            "branches": {key: row for row, key in read.tree.branch_key.items()},
            "actions": {key: row for row, key in read.tree.action_key.items()},
        }
        write_world(session, adventure_id, found, ids)
        backlog.done(adventure_id)
    return Outcome.READ


def _read(sessions: sessionmaker[Session], adventure_id: int) -> Reading | Outcome | None:
    """The adventure's story, as the rules read it; GONE when it left the backlog, None
    when it has a world already (the write unit takes it out of the backlog)."""
    with read_scope(sessions) as session:
        backlog = WorldBacklogRepository(session)
        adventure = session.get(Adventure, adventure_id)
        if adventure is None or backlog.row(adventure_id) is None:
            return Outcome.GONE
        if backlog.has_world(adventure_id):
            return None
        return Reading(story_entries(StoryRepository(session), adventure_id), adventure.created_at)
