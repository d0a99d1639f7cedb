"""The world model's pass: one extraction call a turn, in the background, through the seam
every background pass goes through (``memory.passes.seam``).

Invariants:

- Only when the adventure's owner has a world model (``ModelSet.world``; the setting
  ``TALEKEEPER_WORLD_MODEL``); else the rules alone read the story and this pass finds
  nothing to do.
- ``read`` finds at most one piece: the newest reply of the current path, when the model
  has not read it (``world_readings``). So a turn costs at most one extra call, and a
  long imported story costs none for its past.
- ``generate`` asks once (``extraction.request``) and keeps only what the turn bears out
  (``extraction.facts``); an answer that is garbage keeps nothing and is no error. A
  provider's failure is the pass's: recorded, and the next run asks again.
- ``save`` re-checks that the reply is still active and that it and the action it answers
  still say what was read (an edit in the meantime drops the piece), then replaces the
  model's events of the two actions with the facts kept (a rules event the same as a fact
  is not written twice), each on its own action's node with origin ``model``, and records
  the reading. The projection decides what a model's event may change (a player's fact
  only when its sentence names everything it names: ``projection.explicit``). Where
  several play, the model's "player" is whoever acted and the host's character named is
  the player's own, as for the rules (``derive.subjects_for``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from sqlalchemy.orm import Session

from talekeeper.core.errors import InvalidInput
from talekeeper.services.common.rendering import NARRATION
from talekeeper.services.memory.base import NullMemory
from talekeeper.services.memory.passes.runner import Kinds
from talekeeper.services.memory.passes.work import Work
from talekeeper.services.memory.service import Kind
from talekeeper.services.story.tree import Story
from talekeeper.services.world import extraction
from talekeeper.services.world.derive import followed, subjects_for
from talekeeper.services.world.events import Node, match_names, state_through, write_event
from talekeeper.services.world.party_view import seen_by
from talekeeper.storage.models import Action, Adventure, WorldEvent
from talekeeper.storage.repositories.world import WorldRepository
from talekeeper.storage.vocabulary import ActionState, EventOrigin


@dataclass(frozen=True)
class Piece:
    reply_id: int
    reply_text: str
    action_id: int | None  # the action the reply answers (None: it answers none)
    action_text: str
    turn: extraction.Turn


@dataclass(frozen=True)
class Reading:
    found: int
    facts: list[extraction.Fact]


def _key(event: WorldEvent) -> tuple[object, ...]:
    return (event.kind, event.subject_id, event.object_id, event.target_id, event.value)


class ReadWorld:
    name = "world"

    def __init__(self, work: Work) -> None:
        self.work = work

    def read(self, session: Session, adventure: Adventure) -> Sequence[Piece]:
        if self.work.models.world is None:
            return []
        story = Story.load(session, adventure.id, adventure.user_id, NullMemory())
        head = story.head()
        while head is not None and head.type != NARRATION:
            head = followed(story, head)
        if head is None or WorldRepository(session).reading(head.id) is not None:
            return []
        tried = followed(story, head)
        state = state_through(story, tried.depth - 1 if tried is not None else head.depth - 1)
        # Shown as the acting character stands: a member's own place and belongings.
        author = tried.author_name if tried is not None else None
        where, present, carrying = seen_by(state, author)
        turn = extraction.Turn(
            location=where,
            present=present,
            carrying=carrying,
            action=tried.text if tried is not None else "",
            reply=head.text,
        )
        return [
            Piece(head.id, head.text, tried.id if tried else None, turn.action, turn),
        ]

    async def generate(self, piece: Piece) -> Reading:
        model = self.work.models.world
        assert model is not None
        ask = extraction.request(piece.turn, model=model.model, mode=self.work.models.mode)
        answer = await model.complete(ask, kind="world", adventure_id=self.work.adventure_id)
        found, kept = extraction.facts(answer.text, piece.turn)
        return Reading(found, kept)

    def save(self, session: Session, adventure: Adventure, piece: Piece, result: Reading) -> bool:
        story = Story.load(session, adventure.id, adventure.user_id, NullMemory())
        reply = story.repo.action(piece.reply_id)
        tried = story.repo.action(piece.action_id) if piece.action_id is not None else None
        if (
            reply is None
            or reply.state != ActionState.ACTIVE
            or reply.text != piece.reply_text
            or (piece.action_id is not None and (tried is None or tried.text != piece.action_text))
        ):
            return False  # the story moved: the next run reads the newest reply again
        world = WorldRepository(session)
        rows = [r for r in (reply, tried) if r is not None]
        world.delete_origin([r.id for r in rows], EventOrigin.MODEL)
        # A model's "the player" is whoever acted: a member's character where several play.
        read = subjects_for(story, tried or reply)
        for fact in result.facts:
            if read is not None:
                fact = replace(fact, subject=read(fact.kind, fact.subject))
            row = reply if fact.on_reply or tried is None else tried
            self._write(story, row, fact)
        model = self.work.models.world
        world.add_reading(
            reply.id, adventure.id, model.model if model else "", result.found, len(result.facts)
        )
        return True

    def _write(self, story: Story, row: Action, fact: extraction.Fact) -> None:
        try:
            named, value = match_names(story, fact.kind, fact.subject, fact.object, fact.value)
        except InvalidInput:
            return  # a name no entity can carry, or one that could be several
        world = WorldRepository(story.session)
        said = {_key(e) for e in world.action_events(row.id)}
        ids = (
            named.subject.id if named.subject else None,
            named.object.id if named.object else None,
            named.target.id if named.target else None,
        )
        if (fact.kind, *ids, value) in said:
            return  # the rules read it too
        at = Node(row.id, row.branch_id, row.depth)
        write_event(story, at, fact.kind, named, value, EventOrigin.MODEL, fact.evidence)


def world_passes(work: Work) -> Kinds:
    """The world model's reading, for a run whose owner has a world model (``Runner``'s
    ``more``); none otherwise, so no state is recorded for a world the rules alone read."""
    if work.models.world is None:
        return []
    return [(Kind.WORLD, (ReadWorld(work),))]
