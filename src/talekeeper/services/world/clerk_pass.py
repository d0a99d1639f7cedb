"""The lore clerk's background pass (docs/world.md, "The lore clerk"), through the seam every
background pass goes through (``memory.passes.seam``).

Invariants:

- It runs after every turn, whatever the models: on the embedded path the drafts are the
  story's own sentences (``clerk.draft``), so it makes no model call.
- ``read`` finds one piece, the current path's head, when the path has a candidate with
  no proposal or an open proposal whose draft changed (``proposals.pending``), or (with
  ``auto_accept_cards``) an open proposal waiting; none otherwise, so an idle run writes
  nothing.
- ``generate`` calls no model. ``save`` reads the path again in its own write
  transaction and writes what it says then (``proposals.record``): a turn, an undo or an
  edit that landed since ``read`` is what it writes from, so nothing stale is written.
- An adventure with ``auto_accept_cards`` on has each open proposal the path supports
  accepted in that same transaction, as the player's Accept would (a new card, or an
  update's lines added after its card's entry); one refused (the card limit) stays open.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from talekeeper.core.errors import TalekeeperError
from talekeeper.services.memory.base import NullMemory
from talekeeper.services.memory.passes.runner import Kinds
from talekeeper.services.memory.passes.work import Work
from talekeeper.services.memory.service import Kind
from talekeeper.services.story.tree import Story
from talekeeper.services.world import proposals
from talekeeper.storage.models import Adventure


@dataclass(frozen=True)
class Head:
    action_id: int | None  # the path's head when read (what the run's record shows)


# Accepting a proposal (``story.adventures.accept_proposal``: it makes a card, a layer
# above this one), handed in by the composition root.
Accept = Callable[[Story, int, Mapping[str, object]], object]


class ClerkPass:
    name = "cards"

    def __init__(self, work: Work, accept: Accept | None = None) -> None:
        self.work = work
        self.accept = accept

    def read(self, session: Session, adventure: Adventure) -> Sequence[Head]:
        story = Story.load(session, adventure.id, adventure.user_id, NullMemory())
        auto = adventure.auto_accept_cards and self.accept is not None
        if not proposals.pending(story) and not (auto and proposals.listed(story)):
            return []
        head = story.head()
        return [Head(head.id if head else None)]

    async def generate(self, piece: Head) -> Head:
        return piece

    def save(self, session: Session, adventure: Adventure, piece: Head, result: Head) -> bool:
        story = Story.load(session, adventure.id, adventure.user_id, NullMemory())
        wrote = proposals.record(story)
        if adventure.auto_accept_cards and self.accept is not None:
            for proposal in proposals.listed(story):
                try:
                    with session.begin_nested():
                        self.accept(story, proposal.id, {})
                    wrote = True
                except TalekeeperError:
                    pass  # past the card limit, say: it stays open for the player
        return wrote


def clerk_passes(work: Work, accept: Accept | None = None) -> Kinds:
    """The lore clerk's pass, for every run (``accept``: how an adventure that accepts
    proposals without asking makes them cards)."""
    return [(Kind.CARDS, (ClerkPass(work, accept),))]
