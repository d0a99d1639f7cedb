"""What a turn that addresses someone changes of its build, beyond the Memories
(``knowing.apply`` marks those): the Story Summary, the Story Cards and the Current state
as that turn shows them (docs/world.md, "Who knows what").

Invariants:

- A turn that addresses no one, or whose mode is ``off``, is built from its inputs as
  they are: ``shown`` hands them back unchanged, with no note, and the report unchanged.
- ``strict`` leaves out of the inputs the Story Summary, the secret cards the addressed
  character is not in on (from the Story Cards sections and from the cards a rebuild
  brings in alike) and the Current state's entries they do not know.
- ``label`` keeps them all. The note heading the Memories section says that the Story
  Summary is the narrator's knowledge and names the secret cards; the Current state marks
  its entries. The Story Cards section itself is never changed in ``label``, so the
  ``cache`` layout's prefix stays where it was.
- The report lists what was marked or left out (``WitnessReport.cards`` and ``state``),
  from the same reading that made the inputs shown.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from talekeeper.services.cards.rules import FiredCard
from talekeeper.services.prompt.card_sections import card_sections
from talekeeper.services.prompt.inputs import ContextInputs
from talekeeper.services.prompt.sections import Section
from talekeeper.services.prompt.state import state_section
from talekeeper.services.world import knowing, knowing_world
from talekeeper.services.world.knowing import CardMark, EntryMark, WitnessReport
from talekeeper.storage.vocabulary import WitnessMode


@dataclass(frozen=True)
class Shown:
    """What a turn that addresses someone changes of its build: the inputs (see the
    invariants), the lines heading the Memories section (``label``), and the earliest
    action the history may hold (``strict`` left something out)."""

    inputs: ContextInputs
    note: str = ""
    floor: int | None = None


def shown(inputs: ContextInputs, report: WitnessReport) -> tuple[Shown, WitnessReport]:
    """The inputs as the turn shows them, and the report with the cards and the Current
    state's entries it marked or left out."""
    witness = inputs.witness
    if report.addressed is None or witness.mode is WitnessMode.OFF:
        return Shown(inputs), report
    cards, marks = knowing_world.cards_shown(inputs.cards, witness)
    rebuilt, more = knowing_world.cards_shown(inputs.cards_rebuilt, witness)
    card_marks = tuple({m.card_id: m for m in (*marks, *more)}.values())
    fixed = list(inputs.fixed)
    entries: tuple[EntryMark, ...] = ()
    if inputs.world is not None:
        state, entries = knowing_world.state_shown(inputs.world, witness)
        if entries:
            room = inputs.section_budgets.current_state.tokens(inputs.budget)
            section = state_section(state, inputs.counter, room)
            fixed = [section if s.name == "current_state" else s for s in fixed]
    if card_marks and witness.mode is WitnessMode.STRICT:
        fixed = _cards_left_out(inputs, fixed, cards)
        inputs = replace(inputs, cards=tuple(cards), cards_rebuilt=tuple(rebuilt))
    if report.summary == "withheld":
        fixed = [
            Section(s.name, "", "left out: strict witness mode") if s.name == "story_summary" else s
            for s in fixed
        ]
        inputs = replace(inputs, summary_rebuilt=None)
    report = replace(report, cards=card_marks, state=entries)
    return Shown(replace(inputs, fixed=tuple(fixed)), _note(report, card_marks)), report


def _cards_left_out(
    inputs: ContextInputs, fixed: list[Section], cards: list[FiredCard]
) -> list[Section]:
    """The fixed sections with the Story Cards sections of ``cards`` only: the held ones
    where they were, the newly fired ones in the section of their own."""
    held = set(inputs.cards_held)
    old, new = card_sections(
        [f for f in cards if f.card.id in held],
        [f for f in cards if f.card.id not in held],
        budget=inputs.cards_budget,
        left_out=inputs.cards_left_out,
    )
    by_name = {old.name: old, new.name: new}
    return [by_name.get(s.name, s) for s in fixed]


def _note(report: WitnessReport, cards: tuple[CardMark, ...]) -> str:
    """The lines heading the Memories section of a ``label`` turn."""
    name = report.addressed or ""
    lines = [
        knowing.summary_note(name) if report.summary == "labelled" else "",
        knowing_world.cards_note(name, cards),
    ]
    return "\n".join(line for line in lines if line)
