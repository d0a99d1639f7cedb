"""What every background pass needs: the adventure, its path, its cast, its models.

Invariants:

- A pass reads in short units of work of its own and never holds a
  transaction open while a model runs; it writes each result in its own short
  transaction after checking that what it read is still the story (the
  actions still active, their text unchanged), so a turn, an undo or an edit
  that landed during the model call is never overwritten.
- A memory's source block is read along the branch it was written on, up to
  the node it is attached to, whatever branch the player is on now.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session, sessionmaker

from talekeeper.core.errors import NotFound, ProviderError
from talekeeper.core.lineage import BranchLink, Lineage, lineage_of
from talekeeper.core.tokens import CharCounter, TokenCounter
from talekeeper.providers.base import CompletionRequest
from talekeeper.services.ai_calls import CallKind
from talekeeper.services.cards import CardView
from talekeeper.services.memory.bank import BankCache
from talekeeper.services.memory.cast import Persona, cast_brief
from talekeeper.services.models import ModelSet
from talekeeper.services.rendering import is_player, render
from talekeeper.storage.models import Adventure, Memory
from talekeeper.storage.repositories.memory import MemoryRepository, PathRow
from talekeeper.storage.repositories.story import StoryRepository


@dataclass
class Work:
    """One background run for one adventure."""

    sessions: sessionmaker[Session]
    adventure_id: int
    models: ModelSet
    cache: BankCache

    @property
    def writer(self) -> str:
        return self.models.summary.model if self.models.summary else "extractive"

    def counter(self) -> TokenCounter:
        summary = self.models.summary
        if summary is None:
            return CharCounter()
        return summary.provider.token_counter(summary.model)


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
    )


async def ask(
    work: Work,
    request: CompletionRequest,
    kind: CallKind,
    clean: Callable[[str], str],
    what: str,
) -> str:
    """One call to the summary model, its answer cleaned; an empty answer is a failure of
    the pass (recorded, retried), never an empty memory or summary."""
    model = work.models.summary
    assert model is not None
    result = await model.complete(request, kind=kind, adventure_id=work.adventure_id)
    text = clean(result.text)
    if not text:
        raise ProviderError(f"The summary model ({model.model}) wrote an empty {what}.")
    return text


def upto(lineage: Lineage, depth: int) -> Lineage:
    """``lineage`` cut at ``depth``: the path up to and including that depth."""
    return tuple((b, depth if m is None else min(m, depth)) for b, m in lineage)


def memory_lineage(links: dict[int, BranchLink], memory: Memory) -> Lineage:
    """The path a memory was written on, up to the node it is attached to."""
    return upto(lineage_of(links, memory.branch_id), memory.depth)


def block_text(rows: Sequence[PathRow]) -> str:
    """The block as the player read it: each action rendered, blank lines between."""
    return "\n\n".join(render(r.type, r.text) for r in rows)


def block_lead(previous: PathRow | None, first: PathRow) -> str:
    """The player's action (``previous``, as the player read it) when the block starting
    at ``first`` opens on the reply to it, else "": the extractive writer weighs what came
    of that action."""
    if previous is None or is_player(first.type) or not is_player(previous.type):
        return ""
    return render(previous.type, previous.text)


def _source(session: Session, memory: Memory) -> tuple[Lineage, list[PathRow]]:
    if memory.source_start is None or memory.source_end is None:
        return (), []
    lineage = memory_lineage(StoryRepository(session).links(memory.adventure_id), memory)
    rows = MemoryRepository(session).path_rows(lineage, after_depth=memory.source_start - 1)
    return lineage, [r for r in rows if r.depth <= memory.source_end]


def source_rows(session: Session, memory: Memory) -> list[PathRow]:
    """The actions a memory was written from, read along its own branch."""
    return _source(session, memory)[1]


def source_block(session: Session, memory: Memory) -> tuple[list[PathRow], str]:
    """``source_rows`` and the lead its block was written with (``block_lead``)."""
    lineage, rows = _source(session, memory)
    if not rows or is_player(rows[0].type):
        return rows, ""
    previous = MemoryRepository(session).row_before(lineage, rows[0].depth)
    return rows, block_lead(previous, rows[0])


def still_there(session: Session, rows: Sequence[PathRow]) -> bool:
    """Whether every row is still an active action with the text that was read."""
    current = MemoryRepository(session).rows_by_id([r.id for r in rows])
    return all(
        r.id in current and current[r.id].state == "active" and current[r.id].text == r.text
        for r in rows
    )
