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
- With a world model (``TALEKEEPER_WORLD_MODEL``), ``DraftCards`` asks it to write the
  entry of one new proposal a run, the oldest no model was asked about, from the path's
  sentences the story's own draft is made of; what it writes is kept only where it cites
  them and says nothing they do not (``card_drafting.kept``). A provider's failure is the
  pass's (recorded, asked again next run); an answer with nothing kept keeps the story's
  sentences and is not asked again.
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
from talekeeper.services.world import card_drafting, proposals
from talekeeper.services.world.clerk import Line
from talekeeper.storage.models import Adventure
from talekeeper.storage.vocabulary import ProposalKind, ProposalState


@dataclass(frozen=True)
class Head:
    action_id: int | None  # the path's head when read (what the run's record shows)


# Accepting a proposal (``story.adventures.accept_proposal``: it makes a card, a layer
# above this one), handed in by the composition root.
Accept = Callable[[Story, int, Mapping[str, object], Sequence[proposals.Match]], object]


class ClerkPass:
    name = "cards"

    def __init__(self, work: Work, accept: Accept | None = None) -> None:
        self.work = work
        self.accept = accept

    def read(self, session: Session, adventure: Adventure) -> Sequence[Head]:
        story = Story.load(session, adventure.id, adventure.user_id, NullMemory())
        found = proposals.matched(story)
        auto = adventure.auto_accept_cards and self.accept is not None
        if not proposals.pending(found) and not (auto and proposals.waiting(found)):
            return []
        head = story.head()
        return [Head(head.id if head else None)]

    async def generate(self, piece: Head) -> Head:
        return piece

    def save(self, session: Session, adventure: Adventure, piece: Head, result: Head) -> bool:
        story = Story.load(session, adventure.id, adventure.user_id, NullMemory())
        found = proposals.matched(story)
        wrote = proposals.record(story, found)
        if adventure.auto_accept_cards and self.accept is not None:
            found = proposals.matched(story)  # with the proposals just made
            for proposal_id in proposals.waiting(found):
                try:
                    with session.begin_nested():
                        self.accept(story, proposal_id, {}, found)
                    wrote = True
                except TalekeeperError:
                    pass  # past the card limit, say: it stays open for the player
        return wrote


@dataclass(frozen=True)
class Asked:
    """A new card's proposal a model is to write the entry of, from the path's sentences."""

    proposal_id: int
    name: str
    names: tuple[str, ...]
    sources: tuple[Line, ...]


class DraftCards:
    """A model writes a new proposal's entry (``card_drafting``): one call a run, for the
    oldest open proposal no model was asked about; only with a world model."""

    name = "cards-model"

    def __init__(self, work: Work) -> None:
        self.work = work

    def read(self, session: Session, adventure: Adventure) -> Sequence[Asked]:
        if self.work.models.world is None:
            return []
        story = Story.load(session, adventure.id, adventure.user_id, NullMemory())
        for m in proposals.matched(story):
            row = m.row
            if row is None or m.kind is not ProposalKind.NEW or not m.made.evidence:
                continue
            if row.drafter is None and row.state == ProposalState.OPEN:
                names = (m.made.name, *m.made.keys)
                return [Asked(row.id, m.made.name, names, m.made.evidence)]
        return []

    async def generate(self, piece: Asked) -> card_drafting.Written:
        model = self.work.models.world
        assert model is not None
        ask = card_drafting.request(
            piece.name, piece.sources, model=model.model, mode=self.work.models.mode
        )
        answer = await model.complete(ask, kind="world", adventure_id=self.work.adventure_id)
        return card_drafting.kept(answer.text, piece.sources, piece.names)

    def save(
        self, session: Session, adventure: Adventure, piece: Asked, result: card_drafting.Written
    ) -> bool:
        story = Story.load(session, adventure.id, adventure.user_id, NullMemory())
        model = self.work.models.world
        for m in proposals.matched(story):
            if m.row is not None and m.row.id == piece.proposal_id:
                if m.row.drafter is not None or m.made.evidence != piece.sources:
                    return False  # the story moved, or another run wrote it
                proposals.written_by(m.row, model.model if model else "", result)
                return True
        return False  # no longer supported by the path, or no longer open


def clerk_passes(work: Work, accept: Accept | None = None) -> Kinds:
    """The lore clerk's passes, for every run (``accept``: how an adventure that accepts
    proposals without asking makes them cards): the proposals, then a model's entry for one
    of them when the owner has a world model."""
    return [(Kind.CARDS, (ClerkPass(work, accept), DraftCards(work)))]
