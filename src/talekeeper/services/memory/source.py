"""Where memories come from: the player's path, the adventure's fixed material, a
memory's source block, and whether what was read is still the story.

Reads within the caller's session only (no unit of work of its own, no model): the
player's side (``manage``, ``changes``, ``summary``) and the background passes
(``passes``) read the story the same way.

Invariants:

- A memory's source block is read along the branch it was written on, up to
  the node it is attached to, whatever branch the player is on now.
- ``still_there`` is the re-check every background save starts with: each row
  read is still an active action with the text that was read, so a turn, an
  undo or an edit that landed meanwhile is never overwritten.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from talekeeper.core.errors import NotFound
from talekeeper.core.lineage import BranchLink, Lineage, lineage_of
from talekeeper.core.tokens import TokenCounter
from talekeeper.services.cards.rules import CardView
from talekeeper.services.common.rendering import is_player
from talekeeper.services.memory.cast import Persona, cast_brief
from talekeeper.services.memory.writer import block_lead, memory_lineage
from talekeeper.services.story import sharing
from talekeeper.storage.models import Adventure, Memory
from talekeeper.storage.repositories.memory import MemoryRepository, PathRow
from talekeeper.storage.repositories.story import StoryRepository
from talekeeper.storage.vocabulary import ActionState


@dataclass(frozen=True)
class PathInfo:
    """Where the player is: the current branch, its lineage, and every branch's links."""

    adventure_id: int
    branch_id: int
    lineage: Lineage
    links: dict[int, BranchLink]


def path_of(session: Session, adventure: Adventure) -> PathInfo:
    links = StoryRepository(session).links(adventure.id)
    if adventure.current_branch_id not in links:
        raise NotFound(f"Adventure {adventure.id} has no current branch.")
    branch = adventure.current_branch_id
    return PathInfo(adventure.id, branch, lineage_of(links, branch), links)


@dataclass(frozen=True)
class Material(PathInfo):
    """The fixed description of an adventure a memory or summary is written against."""

    persona: Persona
    cards: tuple[CardView, ...]
    plot_essentials: str
    # The host's character's name where several play: the story reads in the third person
    # (docs/sharing.md), and so do the actions a memory is written from. None: one player.
    lead: str | None = None

    @property
    def protagonist(self) -> str:
        return self.persona.name

    def salient(self) -> list[str]:
        names = [self.persona.name] if self.persona.name else []
        for card in self.cards:
            names.append(card.name)
            names.extend(card.keywords)
        return [n for n in names if n.strip()]

    def cast(self, block: str, counter: TokenCounter) -> str:
        return cast_brief(self.persona, self.cards, block, self.plot_essentials, counter)


def material(session: Session, adventure: Adventure) -> Material:
    path = path_of(session, adventure)
    return Material(
        adventure_id=path.adventure_id,
        branch_id=path.branch_id,
        lineage=path.lineage,
        links=path.links,
        persona=Persona(
            adventure.persona_name, adventure.persona_pronouns, adventure.persona_description
        ),
        cards=tuple(CardView.of(c) for c in StoryRepository(session).cards(adventure.id)),
        plot_essentials=adventure.plot_essentials,
        lead=lead_of(session, adventure),
    )


def lead_of(session: Session, adventure: Adventure) -> str | None:
    """The host's character's name when several play the adventure, else None."""
    cast = sharing.cast(session, adventure)
    return cast.host.name if cast is not None else None


def _source(session: Session, memory: Memory) -> tuple[Lineage, list[PathRow]]:
    if memory.source_start is None or memory.source_end is None:
        return (), []
    lineage = memory_lineage(StoryRepository(session).links(memory.adventure_id), memory)
    rows = MemoryRepository(session).path_rows(lineage, after_depth=memory.source_start - 1)
    return lineage, [r for r in rows if r.depth <= memory.source_end]


def source_rows(session: Session, memory: Memory) -> list[PathRow]:
    """The actions a memory was written from, read along its own branch."""
    return _source(session, memory)[1]


def source_block(
    session: Session, memory: Memory, lead: str | None = None
) -> tuple[list[PathRow], str]:
    """``source_rows`` and the lead its block was written with (``block_lead``; ``lead``:
    the host's character where several play, as ``Material.lead``)."""
    lineage, rows = _source(session, memory)
    if not rows or is_player(rows[0].type):
        return rows, ""
    previous = MemoryRepository(session).row_before(lineage, rows[0].depth)
    return rows, block_lead(previous, rows[0], lead)


def still_there(session: Session, rows: Sequence[PathRow]) -> bool:
    """Whether every row is still an active action with the text that was read."""
    current = MemoryRepository(session).rows_by_id([r.id for r in rows])
    return all(
        r.id in current
        and current[r.id].state == ActionState.ACTIVE
        and current[r.id].text == r.text
        for r in rows
    )
