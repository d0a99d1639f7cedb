"""Lore files into stories: the confirm step of the two ways in (``services.lore`` reads).

A player sends a file twice: once for the preview (``dry_run``), once to confirm. Nothing
is kept between the two: the confirm reads the file again with the same options, so what
is made is what the preview showed.

Invariants:

- Reading and writing are apart: ``read_lore_file`` and ``read_scenario_file`` take bytes
  and never a session, so the entry points read a file (however slow or hostile) with no
  transaction open, and ``add_lore`` and ``adventure_from_file`` write what was read in
  one short unit of work. A preview writes nothing and needs no writer lock.
- Importing lore into an adventure adds the preview's cards in its order (disabled
  entries only when the player included them), all in the caller's transaction: a
  refusal part way (the adventure's card limit) adds none of them.
- Always-on entries that read as instructions are cards like the rest unless the player
  moves them to AI Instructions (``move_instructions``): then each is appended to the
  adventure's AI Instructions as a paragraph of its own, and no card is made of it.
- An adventure from a file takes the draft's title, AI Instructions, Plot Essentials,
  Author's Note and cards, and its opening, or the alternate greeting the player chose
  (``greeting``: 1 is the first alternate). A file holding lore only is refused here.
- Every limit of a hand-made adventure or card holds (``services.story.adventures``): a
  value past one is a 4xx naming it, never a cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from sqlalchemy.orm import Session

from talekeeper.core.errors import InvalidInput
from talekeeper.services.cards.rules import CardView
from talekeeper.services.common import limits
from talekeeper.services.lore import (
    CardDraft,
    LoreImport,
    Report,
    ReportItem,
    ReportLevel,
    ScenarioDraft,
    read_lore,
    read_scenario,
)
from talekeeper.services.memory.base import MemoryService
from talekeeper.services.story import adventures
from talekeeper.services.story.tree import Story
from talekeeper.storage.models import Adventure


@dataclass(frozen=True)
class ReadOptions:
    """How the player asked a file to be read; the preview and the confirm share them."""

    include_disabled: bool = False
    split_long: bool = False
    move_instructions: bool = False


@dataclass(frozen=True)
class Moved:
    """Cards of a file, less the entries moved to AI Instructions, and those entries."""

    cards: tuple[CardDraft, ...]
    instructions: tuple[str, ...]


MOVED = "{n} always-on entries that read as instructions go to AI Instructions, not cards"


def _move(cards: Sequence[CardDraft], options: ReadOptions) -> Moved:
    if not options.move_instructions:
        return Moved(tuple(cards), ())
    return Moved(
        tuple(c for c in cards if not c.instruction_like),
        tuple(c.entry for c in cards if c.instruction_like),
    )


def _noted(report: Report, moved: Moved) -> Report:
    if not moved.instructions:
        return report
    item = ReportItem(ReportLevel.INFO, MOVED.format(n=len(moved.instructions)))
    return Report((*report.items, item))


def read_lore_file(
    data: bytes, filename: str, options: ReadOptions
) -> tuple[LoreImport, tuple[str, ...]]:
    """The cards a lore file makes (the preview) and the entries moved to AI Instructions."""
    found = read_lore(
        data, filename, include_disabled=options.include_disabled, split_long=options.split_long
    )
    moved = _move(found.cards, options)
    return replace(found, cards=moved.cards, report=_noted(found.report, moved)), moved.instructions


def read_scenario_file(
    data: bytes, filename: str, options: ReadOptions, persona_name: str | None = None
) -> ScenarioDraft:
    """The adventure a file starts (the preview), with moved entries in its AI Instructions."""
    draft = read_scenario(
        data,
        filename,
        persona_name=persona_name,
        include_disabled=options.include_disabled,
        split_long=options.split_long,
    )
    moved = _move(draft.cards, options)
    return replace(
        draft,
        cards=moved.cards,
        report=_noted(draft.report, moved),
        ai_instructions=with_instructions(draft.ai_instructions, moved.instructions),
    )


def with_instructions(current: str, moved: Sequence[str]) -> str:
    """``current`` AI Instructions with ``moved`` appended, a paragraph each."""
    text = "\n\n".join(part for part in (current.strip(), *moved) if part)
    if len(text) > limits.COMPONENT_MAX:
        raise InvalidInput(
            f"Moving {len(moved)} entries to AI Instructions would make them "
            f"{len(text):,} characters, over the limit of {limits.COMPONENT_MAX:,}: "
            "import those entries as always-on cards instead (leave move_instructions off)."
        )
    return text


def add_lore(
    session: Session, adventure: Adventure, found: LoreImport, instructions: Sequence[str]
) -> list[CardView]:
    """Add a read file's cards and moved entries (``read_lore_file``) to ``adventure``, in
    the preview's order (see the invariants)."""
    if instructions:
        current = adventure.ai_instructions or ""
        adventure.ai_instructions = with_instructions(current, instructions)
    made = adventures.add_cards(session, adventure, found.cards)
    session.flush()
    return made


def opening_of(draft: ScenarioDraft, greeting: int) -> str:
    """The opening, or the ``greeting``-th alternate greeting (1-based; 0 is the opening)."""
    if greeting == 0:
        return draft.opening
    if not 1 <= greeting <= len(draft.alternate_greetings):
        offered = len(draft.alternate_greetings)
        raise InvalidInput(
            f"'greeting' {greeting} is not one of this file's greetings: give 0 for the "
            + (f"opening or 1 to {offered} for an alternate one." if offered else "opening.")
        )
    return draft.alternate_greetings[greeting - 1]


def adventure_from_file(
    session: Session,
    user_id: int,
    memory: MemoryService,
    draft: ScenarioDraft,
    greeting: int = 0,
) -> Story:
    """Start an adventure from a read file (``read_scenario_file``; see the invariants)."""
    opening = opening_of(draft, greeting)
    fields: dict[str, object] = {
        "title": draft.title,
        "ai_instructions": draft.ai_instructions,
        "plot_essentials": draft.plot_essentials,
        "authors_note": draft.authors_note,
    }
    if opening:
        fields["opening"] = opening
    story = adventures.create(session, user_id, fields, memory)
    adventures.add_cards(session, story.adventure, draft.cards)
    session.flush()
    return story
