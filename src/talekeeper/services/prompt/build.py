"""A turn's prompt: its inputs, the memories retrieved and the library's passages built into
a context (``build``), and the request that context makes (``request``).

Invariants:

- The build reads its inputs, the retrieval and the knowledge and leaves them as they
  were: it fits copies of the last two (``BuiltTurn``). The ``BuiltContext`` it makes is
  frozen, and the request and the Insights snapshot are both read from what it made.
- The Memories section gets its budget for the memories retrieved (or asked for,
  whichever is more), the Knowledge section its budget for the passages asked for: the
  adventure's shares of the prompt (``budgets.SectionBudgets``); each offers shorter
  forms of itself, without some of its passages, for a context that overflows.
- What the fitted retrieval and knowledge mark as in the context is what went in: when the
  context overflowed and the Memories or the Knowledge fell back to a shorter form or
  were cut, only the passages still whole in the prompt stay marked (Insights tells the
  truth).
- ``cache``: the Story Cards section keeps the cards it held, and the Story Summary a new
  automatic version waits, until the whole history is evaluated again anyway; then the
  cards are those that fire now and the summary the one in force.
- Chat mode sends the built messages; completion mode the built prompt, then a blank
  line, and stops before the model writes the player's next move (``COMPLETION_STOP``).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace

from talekeeper.providers.base import CompletionRequest, Message
from talekeeper.services.endpoints.models import ContextLayout, ModelSet
from talekeeper.services.library.search import KnowledgeResult
from talekeeper.services.memory.base import Retrieval
from talekeeper.services.prompt import budgets, witnessed
from talekeeper.services.prompt.built import BuiltContext, SectionReport
from talekeeper.services.prompt.card_sections import card_sections
from talekeeper.services.prompt.context import build_context
from talekeeper.services.prompt.inputs import (
    CHAT_MESSAGE_OVERHEAD,
    ContextInputs,
    fills,
)
from talekeeper.services.prompt.sections import Section, render_fixed
from talekeeper.services.world import knowing
from talekeeper.services.world.knowing import Handling, WitnessReport

COMPLETION_STOP = ("\n>",)  # in completion mode the model must not write the player's next move


@dataclass(frozen=True)
class BuiltTurn:
    """What ``build`` makes: the context, and the retrieval and the knowledge as they went
    into it (copies fitted to their sections' budgets, marked with what went in)."""

    context: BuiltContext
    retrieval: Retrieval
    knowledge: KnowledgeResult | None
    witness: WitnessReport | None = None  # who the turn addressed, and what they did not see


def build(
    inputs: ContextInputs, retrieval: Retrieval, knowledge: KnowledgeResult | None = None
) -> BuiltTurn:
    """The turn's context from what was gathered, the retrieval and the knowledge, none of
    which it changes.

    The Memories section does not write again a passage whose action the history holds
    whole (``Retrieval.fit_evidence``): built once with every passage, the context says
    which actions its history keeps; built again with those passages left to the history,
    it has more room, so its history keeps at least those actions (checked: else the first
    build stands).

    A turn that addresses someone (``knowing``) labels or withholds what they did not see;
    what it withholds (``strict``) leaves room, and the history may not take it further
    back than it would have gone with nothing withheld (else it could bring back the very
    story the memories left out said)."""
    unfiltered = _own_retrieval(retrieval)
    retrieval, witness = knowing.apply(_own_retrieval(retrieval), inputs.witness)
    witness = knowing.for_summary(witness, _summary_text(inputs), inputs.witness.saw_all)
    shown, witness = witnessed.shown(inputs, witness)
    if witness.withheld or witness.summary == "withheld" or _left_out(witness):
        first = _assemble(inputs, unfiltered, _own_knowledge(knowledge), ())[0].history
        shown = replace(shown, floor=first[0].depth if first else None)
    knowledge = _own_knowledge(knowledge)
    built, variants, passages = _assemble(shown.inputs, retrieval, knowledge, (), shown)
    held = _whole_history(built)
    carried = {p.depth for m in retrieval.used for p in m.passages if p.order is not None}
    if carried & held:
        again = _assemble(shown.inputs, retrieval, knowledge, held, shown)
        if retrieval.in_history_depths() <= _whole_history(again[0]):
            built, variants, passages = again
        else:
            built, variants, passages = _assemble(shown.inputs, retrieval, knowledge, (), shown)
    built = _note_dropped_evidence(retrieval, built, variants)
    if knowledge is not None:
        _note_dropped_passages(knowledge, built, passages)
    return BuiltTurn(built, retrieval, knowledge, witness)


def _left_out(witness: WitnessReport) -> bool:
    """Whether a ``strict`` turn left out a card or an entry of the Current state."""
    marks = [m.handling for m in witness.cards] + [m.handling for m in witness.state]
    return Handling.WITHHELD in marks


def _summary_text(inputs: ContextInputs) -> str:
    """The Story Summary the turn would show (the one a rebuild brings in, when newer)."""
    held = next((s.text for s in inputs.fixed if s.name == "story_summary"), "")
    return held or (inputs.summary_rebuilt.text if inputs.summary_rebuilt else "")


def _assemble(
    inputs: ContextInputs,
    retrieval: Retrieval,
    knowledge: KnowledgeResult | None,
    history: Collection[int],
    shown: witnessed.Shown | None = None,
) -> tuple[BuiltContext, list[str], list[str]]:
    """The context with the retrieval and the knowledge fitted to their budgets (the
    memories' passages from the actions at ``history`` left to the history), and the
    shorter forms of the Memories and the Knowledge it was offered; ``shown``: the note
    heading the Memories and the history's floor of a turn addressing someone."""
    slots = max(inputs.top_k, len(retrieval.used))
    budget = inputs.section_budgets.memories(slots).tokens(inputs.budget)
    retrieval.fit_evidence(inputs.counter, budget, fill=fills(budget, slots), history=history)
    note = shown.note if shown else ""
    variants = [_headed(note, text) for text in retrieval.section_variants()]
    text = _headed(note, retrieval.section_text())
    memories = Section("memories", text, _memory_reason(retrieval), tuple(variants), budget)
    fixed = [*inputs.fixed, memories]
    passages: list[str] = []
    if knowledge is not None:
        room = inputs.section_budgets.knowledge(knowledge.top_k).tokens(inputs.budget)
        knowledge.fit(inputs.counter, room)
        passages = knowledge.section_variants()
        left = [h.source_title for h in knowledge.used if not h.in_context]
        reason = budgets.left_out_reason(knowledge.reason(), left, room)
        fixed.append(Section("knowledge", knowledge.section_text(), reason, tuple(passages), room))
    built = build_context(
        fixed,
        inputs.history,
        inputs.authors_note,
        inputs.player_action,
        budget=inputs.budget,
        counter=inputs.counter,
        entry_overhead=CHAT_MESSAGE_OVERHEAD if inputs.mode == "chat" else 0,
        layout=inputs.layout,
        previous=inputs.previous,
        rebuilt=_rebuilt(inputs),
        history_floor=shown.floor if shown else None,
    )
    return built, variants, passages


def _headed(note: str, text: str) -> str:
    return f"{note}\n{text}" if note and text else note or text


def _whole_history(built: BuiltContext) -> set[int]:
    """The depths of the actions ``built``'s history holds whole (not the one it cut)."""
    cut = built.report.history_cut
    return {e.depth for e in built.history if e.depth is not None and e.id != cut}


def _own_retrieval(retrieval: Retrieval) -> Retrieval:
    """A copy whose fitting leaves ``retrieval`` as it was: fitting marks the passages
    (``order``) and the section's budget, so those are the parts copied."""
    used = [replace(m, passages=[replace(p) for p in m.passages]) for m in retrieval.used]
    return replace(retrieval, used=used)


def _own_knowledge(knowledge: KnowledgeResult | None) -> KnowledgeResult | None:
    """A copy whose fitting (``in_context`` on each hit) leaves ``knowledge`` as it was."""
    if knowledge is None:
        return None
    return replace(knowledge, used=[replace(hit) for hit in knowledge.used])


def _rebuilt(inputs: ContextInputs) -> list[Section] | None:
    """``cache``: the Story Cards as they fire now and the Story Summary in force, for a turn
    whose whole history is evaluated again anyway (until then the cards section keeps the
    cards it held, and a new automatic summary waits)."""
    if inputs.layout is not ContextLayout.CACHE:
        return None
    cards, _ = card_sections(
        list(inputs.cards_rebuilt),
        budget=inputs.cards_budget,
        left_out=inputs.cards_rebuilt_left_out,
    )
    sections = [cards, Section("story_cards_new", "")]
    if inputs.summary_rebuilt is not None:
        sections.append(inputs.summary_rebuilt)
    return sections


def request(built: BuiltContext, models: ModelSet) -> CompletionRequest:
    """What the narrator is sent for ``built``, in the models' mode."""
    common = {
        "model": models.narrator.model,
        "max_tokens": models.reply_tokens,
        "temperature": models.temperature,
        "top_p": models.top_p,
    }
    if models.mode == "completion":
        return CompletionRequest(
            mode="completion",
            prompt=built.prompt() + "\n\n",
            stop=COMPLETION_STOP,
            narration=True,
            **common,  # type: ignore[arg-type]
        )
    messages = tuple(Message(m["role"], m["content"]) for m in built.messages())  # type: ignore[arg-type]
    return CompletionRequest(mode="chat", messages=messages, narration=True, **common)  # type: ignore[arg-type]


def _note_dropped_evidence(
    retrieval: Retrieval, built: BuiltContext, variants: list[str]
) -> BuiltContext:
    """When the whole context overflowed and the Memories fell back to a shorter form
    (``variants``: ``Retrieval.section_variants``), the passages left out are no longer
    marked as in the context and the memories left out move to ``left_for_room``
    (Insights tells the truth; only those in it count as used). ``built``, with the
    section's reason saying so when memories were left out."""
    section = next((s for s in built.report.sections if s.name == "memories"), None)
    if section is None or not section.cut:
        return built
    shown = [render_fixed(Section("memories", text)) for text in variants]
    if section.text not in shown:
        retrieval.keep_evidence(0)  # cut mid-text: no passage is whole
        return built
    carried, index = retrieval.carried(), shown.index(section.text)
    if index < carried:  # fewer passages: the last to go in dropped first
        retrieval.keep_evidence(carried - 1 - index)
        return built
    retrieval.leave_for_room(len(retrieval.used) - 1 - (index - carried))
    reason = f"{_memory_reason(retrieval)}; {len(retrieval.left_for_room)} left out for room"
    sections = [replace(s, reason=reason) if s is section else s for s in built.report.sections]
    return replace(built, report=replace(built.report, sections=sections))


def _note_dropped_passages(
    knowledge: KnowledgeResult, built: BuiltContext, variants: list[str]
) -> None:
    """When the context overflowed and the Knowledge section was cut, only the passages
    still whole in it are marked as in the context."""
    section: SectionReport | None = next(
        (s for s in built.report.sections if s.name == "knowledge"), None
    )
    if section is None:
        knowledge.keep(0)
        return
    if not section.cut:
        return
    for kept, text in zip(range(len(variants), 0, -1), variants, strict=True):
        if section.text == render_fixed(Section("knowledge", text)):
            knowledge.keep(kept)
            return
    knowledge.keep(0)  # cut mid-text: no passage is whole


def _memory_reason(retrieval: Retrieval) -> str:
    if not retrieval.used:
        return retrieval.note or f"no memory retrieved ({retrieval.considered} considered)"
    return f"{len(retrieval.used)} of {retrieval.considered} memories considered"
