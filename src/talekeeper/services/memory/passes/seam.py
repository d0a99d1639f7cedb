"""The one seam every background pass goes through: read, generate, save.

A pass is three functions (``Pass``); ``run_pass`` is the only code that calls them,
and the only place the background opens units of work for a pass.

Invariants:

- ``read`` runs in one read-only unit of work (``read_scope``) and returns the pieces
  of work that are due, oldest first (none: nothing to do). A piece carries everything
  ``generate`` needs and everything ``save`` must re-check.
- ``generate`` runs with no unit of work of the pass open: the read session is closed
  before it starts and the save session opens after it ends, so no connection is held
  and no lock is taken while a model or an embedder runs. It gets no session at all.
- ``save`` runs in its own short write transaction, one per piece, and starts with the
  re-check: whatever it wrote was read from the story as it stood, so when the story
  moved meanwhile (a turn, an undo, an edit that landed during ``generate``) it writes
  nothing and returns False. Nothing marks a dropped piece done, so the next run reads
  it again from the story as it is then.
- The adventure is loaded by the seam in both units of work; one that is gone ends the
  pass (nothing is read) or drops the piece (nothing is saved).
- Pieces are generated and saved in order, each committed on its own: an error in one
  ends the pass with that error, and the pieces saved before it stay saved.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from sqlalchemy.orm import Session, sessionmaker

from talekeeper.storage.db import read_scope, session_scope
from talekeeper.storage.models import Adventure

log = logging.getLogger(__name__)

Piece = TypeVar("Piece")
Result = TypeVar("Result")


class Pass(Protocol[Piece, Result]):
    """One kind of derived work, as three steps (see the module's invariants)."""

    name: str

    def read(self, session: Session, adventure: Adventure) -> Sequence[Piece]:
        """The pieces due now, read in a read-only unit of work."""
        ...

    async def generate(self, piece: Piece) -> Result:
        """The piece's result: a model or embedder call, or pure work; no session."""
        ...

    def save(self, session: Session, adventure: Adventure, piece: Piece, result: Result) -> bool:
        """Re-check that ``piece`` is still the story, then write ``result``; False (and
        nothing written) when the story moved or there was nothing to write."""
        ...


@dataclass
class Outcome:
    """What one pass did in one run."""

    name: str
    due: int = 0  # pieces the read found
    saved: int = 0
    dropped: int = 0  # the story moved (or the piece had nothing to write): left for later

    @property
    def did_work(self) -> bool:
        return self.saved > 0


async def run_pass(
    sessions: sessionmaker[Session], adventure_id: int, step: Pass[Piece, Result]
) -> Outcome:
    """Run ``step`` once for an adventure: read, then per piece generate and save."""
    pieces = await asyncio.to_thread(_read, sessions, adventure_id, step)
    outcome = Outcome(step.name, due=len(pieces))
    for piece in pieces:
        result = await step.generate(piece)
        if await asyncio.to_thread(_save, sessions, adventure_id, step, piece, result):
            outcome.saved += 1
        else:
            outcome.dropped += 1
    if outcome.dropped:  # routine (a turn landed meanwhile): never in the player's terminal
        log.debug(
            "%s pass for adventure %s: %d saved, %d not (the story moved, or nothing was left"
            " to write): the next run reads them again",
            step.name,
            adventure_id,
            outcome.saved,
            outcome.dropped,
        )
    return outcome


def _read(
    sessions: sessionmaker[Session], adventure_id: int, step: Pass[Piece, Result]
) -> list[Piece]:
    with read_scope(sessions) as session:
        adventure = session.get(Adventure, adventure_id)
        return [] if adventure is None else list(step.read(session, adventure))


def _save(
    sessions: sessionmaker[Session],
    adventure_id: int,
    step: Pass[Piece, Result],
    piece: Piece,
    result: Result,
) -> bool:
    with session_scope(sessions) as session:
        adventure = session.get(Adventure, adventure_id)
        return adventure is not None and step.save(session, adventure, piece, result)
