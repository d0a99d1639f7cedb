"""The lore clerk's background pass (docs/world.md, "The lore clerk"), through the seam every
background pass goes through (``memory.passes.seam``).

Invariants:

- It runs after every turn, whatever the models: on the embedded path the drafts are the
  story's own sentences (``clerk.draft``), so it makes no model call.
- ``read`` finds one piece, the current path's head, when the path has a candidate with
  no proposal or an open proposal whose draft changed (``proposals.pending``); none
  otherwise, so an idle run writes nothing.
- ``generate`` calls no model. ``save`` reads the path again in its own write
  transaction and writes what it says then (``proposals.record``): a turn, an undo or an
  edit that landed since ``read`` is what it writes from, so nothing stale is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

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


class ClerkPass:
    name = "cards"

    def __init__(self, work: Work) -> None:
        self.work = work

    def read(self, session: Session, adventure: Adventure) -> Sequence[Head]:
        story = Story.load(session, adventure.id, adventure.user_id, NullMemory())
        if not proposals.pending(story):
            return []
        head = story.head()
        return [Head(head.id if head else None)]

    async def generate(self, piece: Head) -> Head:
        return piece

    def save(self, session: Session, adventure: Adventure, piece: Head, result: Head) -> bool:
        story = Story.load(session, adventure.id, adventure.user_id, NullMemory())
        return proposals.record(story)


def clerk_passes(work: Work) -> Kinds:
    """The lore clerk's pass, for every run."""
    return [(Kind.CARDS, (ClerkPass(work),))]
