"""One turn at a time per adventure, in the order they arrive (docs/sharing.md, "Turns").

Invariants:

- Every turn that will write a reply (an action, a continue, a retry) takes a ticket
  (``TurnTicket``) in a write unit before anything of it is written. Ticket ids only
  grow, so of an adventure's live tickets the lowest holds the turn; the others wait.
- A waiting action is not written: it is written in the write unit that finds its ticket
  lowest (``TurnRunner``'s claim), so no action ever lands between another action and its
  reply, and none is written twice. Writers take turns (the database's one writer lock),
  so two tickets can never both find themselves lowest.
- A ticket lives while its turn touches it (``seen_at``), at least every ``TOUCH_S``,
  whether it waits or holds the turn. A ticket untouched for ``DEAD_S`` belongs to a
  process that died or a turn that was dropped: the next ticket that looks deletes it,
  so a crash holds an adventure for at most ``DEAD_S``.
- The holder's ticket is deleted in its reply's own transaction, or right after any
  failure; a waiter's when it gives up (``MAX_WAIT_S``) or fails.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from sqlalchemy.orm import Session, sessionmaker

from talekeeper.core.clock import utcnow
from talekeeper.core.errors import Conflict, DatabaseBusy
from talekeeper.storage.db import read_scope, session_scope
from talekeeper.storage.repositories.turns import TurnTicketRepository

log = logging.getLogger(__name__)

POLL_S: Final = 0.25  # how often a waiting turn looks whether its turn has come
TOUCH_S: Final = 3.0  # how often a live ticket is touched
DEAD_S: Final = 15.0  # a ticket untouched this long is dead (five touches missed)
MAX_WAIT_S: Final = 900.0  # a turn waits at most this long for the turns ahead of it
MIRROR_S: Final = 0.5  # how often a shared adventure's reply so far is written for the others


@dataclass(frozen=True)
class Speaking:
    """The turn being answered, and its reply as far as it is written."""

    ticket: int
    user_id: int
    text: str


def _cutoff() -> datetime:
    return utcnow() - timedelta(seconds=DEAD_S)


def take(session: Session, adventure_id: int, user_id: int) -> tuple[int, bool]:
    """A new ticket for a turn asked by ``user_id``, and whether it holds the turn now
    (no live ticket before it). Call inside a write unit."""
    repo = TurnTicketRepository(session)
    repo.bury(adventure_id, _cutoff())
    ticket_id = repo.add(adventure_id, user_id)
    return ticket_id, repo.before(adventure_id, ticket_id, _cutoff()) == 0


def ahead(session: Session, adventure_id: int, ticket_id: int) -> int | None:
    """How many live tickets wait before ``ticket_id``; None when it is gone (it was
    found dead and deleted)."""
    repo = TurnTicketRepository(session)
    if not repo.exists(ticket_id):
        return None
    return repo.before(adventure_id, ticket_id, _cutoff())


def holds(session: Session, adventure_id: int, ticket_id: int) -> bool:
    """Whether ``ticket_id`` holds the turn now; touches it. Call inside a write unit."""
    repo = TurnTicketRepository(session)
    repo.bury(adventure_id, _cutoff())
    repo.touch(ticket_id, utcnow())
    return ahead(session, adventure_id, ticket_id) == 0


def done(session: Session, ticket_id: int) -> None:
    """The turn is over: its ticket goes. Call inside the unit that ends it."""
    TurnTicketRepository(session).delete(ticket_id)


def speaking(session: Session, adventure_id: int) -> Speaking | None:
    """The turn being answered and its reply so far; None when none is being written."""
    row = TurnTicketRepository(session).holder(adventure_id, _cutoff())
    if row is None or not row.reply_so_far:
        return None
    return Speaking(row.id, row.user_id, row.reply_so_far)


def askers(session: Session, adventure_id: int) -> list[int]:
    """The accounts whose turns are live on the adventure, the holder first."""
    return TurnTicketRepository(session).askers(adventure_id, _cutoff())


class Tickets:
    """The queue as a turn uses it: its own units of work, in threads."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions
        self._later: set[asyncio.Task[None]] = set()  # tickets still to give back

    def release(self, ticket_id: int) -> None:
        """Delete the ticket (a refusal before its turn began). Raises ``DatabaseBusy``."""
        with session_scope(self.sessions) as session:
            done(session, ticket_id)

    async def give_back(self, ticket_id: int) -> None:
        """Delete the ticket after a failure. A database too busy for it now (often the
        very reason the turn failed) is asked again every second in the background, so the
        next turn need not wait for the ticket to die."""
        try:
            await asyncio.to_thread(self.release, ticket_id)
        except DatabaseBusy:
            task = asyncio.get_running_loop().create_task(self._give_back_later(ticket_id))
            self._later.add(task)
            task.add_done_callback(self._later.discard)

    async def _give_back_later(self, ticket_id: int) -> None:
        deadline = time.monotonic() + DEAD_S
        while time.monotonic() < deadline:
            await asyncio.sleep(1.0)
            try:
                await asyncio.to_thread(self.release, ticket_id)
                return
            except DatabaseBusy:
                continue
        log.warning("turn ticket %s left to expire: the database stayed busy", ticket_id)

    def touch(self, ticket_id: int) -> None:
        with session_scope(self.sessions) as session:
            TurnTicketRepository(session).touch(ticket_id, utcnow())

    def write_so_far(self, ticket_id: int, text: str) -> None:
        with session_scope(self.sessions) as session:
            TurnTicketRepository(session).write_so_far(ticket_id, text)

    def mirror(self, ticket_id: int) -> Mirror:
        return Mirror(self, ticket_id)

    def _ahead(self, adventure_id: int, ticket_id: int) -> int | None:
        with read_scope(self.sessions) as session:
            return ahead(session, adventure_id, ticket_id)

    async def wait(
        self, adventure_id: int, ticket_id: int, claim: Callable[[], bool]
    ) -> AsyncIterator[int]:
        """Wait for the ticket's turn, yielding how many turns are ahead of it whenever that
        changes; ends once ``claim`` (a write unit that checks ``holds`` and writes what
        the turn holds) succeeds. Raises ``Conflict`` when the wait runs past
        ``MAX_WAIT_S`` or the ticket was found dead."""
        started = touched = time.monotonic()
        shown: int | None = None
        while True:
            count = await asyncio.to_thread(self._ahead, adventure_id, ticket_id)
            if count is None:
                raise Conflict(_GONE)
            if count == 0 and await asyncio.to_thread(claim):
                return
            if count != shown:
                shown = count
                yield count
            now = time.monotonic()
            if now - started > MAX_WAIT_S:
                raise Conflict(
                    f"Other turns of this adventure held it for {MAX_WAIT_S / 60:.0f} minutes, "
                    "so this one gave up waiting."
                )
            if now - touched >= TOUCH_S:
                await asyncio.to_thread(self.touch, ticket_id)
                touched = now
            await asyncio.sleep(POLL_S)

    async def keep(self, ticket_id: int) -> None:
        """Touch a held ticket every ``TOUCH_S`` until cancelled (the turn is generating)."""
        while True:
            await asyncio.sleep(TOUCH_S)
            try:
                await asyncio.to_thread(self.touch, ticket_id)
            except DatabaseBusy:  # the next touch tries again; DEAD_S allows several misses
                log.warning("turn ticket %s not touched: the database was busy", ticket_id)


_GONE = (
    "This turn waited without word from its server for too long and lost its place in the queue."
)


class Mirror:
    """A shared adventure's reply as it streams, written to its ticket at most every
    ``MIRROR_S`` for the other members' pages (``speaking``). A write never holds up the
    stream: while one is on its way, newer text waits for the next; one that fails (a
    busy database) is only logged, and the saved reply is what counts."""

    def __init__(self, tickets: Tickets, ticket_id: int) -> None:
        self.tickets, self.ticket_id = tickets, ticket_id
        self.task: asyncio.Task[None] | None = None
        self.last = 0.0

    def offer(self, text: str) -> None:
        now = time.monotonic()
        if (self.task is not None and not self.task.done()) or now - self.last < MIRROR_S:
            return
        self.last = now
        self.task = asyncio.get_running_loop().create_task(self._write(text))

    async def _write(self, text: str) -> None:
        try:
            await asyncio.to_thread(self.tickets.write_so_far, self.ticket_id, text)
        except DatabaseBusy:
            log.info("reply so far of ticket %s not written: the database was busy", self.ticket_id)
