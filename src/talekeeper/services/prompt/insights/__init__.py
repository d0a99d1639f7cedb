"""Insights: the exact context a reply was generated from, and why each part is there.

A snapshot is written with the reply, in the same transaction, and never
changes afterwards (an edit of the story later does not rewrite what the model
was shown). Every section appears, with its tokens: an empty one says why it
is empty, so the player can see what the narrator did *not* get. Its cards are the
Story Cards section's, in its order: an always-on card says so (``always_on``, no
keyword), a fired one names its keyword, where it appeared and, when the card has
secondary keywords, its rule and those that held (``CardPart``). The
``knowledge`` section carries the library passages that went in (``passages``: source,
place, scores); ``knowledge`` at the top level adds the sources searched, the query, the
weights and the runners-up (``services.library.search``, its scoring in
``services.library.ranking``). ``tokens.prompt_evaluated`` is what the narrator had to
evaluate of the prompt after the prefix its cache kept from the previous prompt
(``prompt_cached``; ``services.prompt.prefix``), ``timings.first_token_ms`` the wait
before the first word. ``layout`` names the context layout in use and, for ``cache``, where the
floating sections went (``floating``: the depth of the action each went before, how many
actions before the end that is, and its text's digest), the history's first depth and the
cards the Story Cards section held. It is shown, never read back by a turn: the next turn
reads the same placement from its own record (``services.prompt.placement``).

The snapshot is a stored data format (in users' databases and in export files), declared
as pydantic models in ``insights.stored`` (``Snapshot``; its invariants are there):
``snapshot`` builds one, ``dumps`` writes it, ``loads`` reads one of any version back. A
stored text that is not a snapshot this version can read (not JSON, not an object, a value
of the wrong kind) reads as None: reading never raises.
"""

from __future__ import annotations

import json

from pydantic import ValidationError

from talekeeper.core.errors import NotFound
from talekeeper.providers.base import Completion
from talekeeper.providers.voice import EDIT_MEANINGS, Edit
from talekeeper.services.common.rendering import NARRATION
from talekeeper.services.endpoints.models import ContextLayout, ModelSet
from talekeeper.services.library.search import KnowledgeResult
from talekeeper.services.memory.base import Retrieval
from talekeeper.services.prompt.budgets import left_out_reason
from talekeeper.services.prompt.built import BuiltContext, ContextReport
from talekeeper.services.prompt.floating import FLOATING_ORDER
from talekeeper.services.prompt.inputs import ContextInputs
from talekeeper.services.prompt.insights.stored import (
    INSIGHTS_VERSION,
    AuthorPart,
    BudgetPart,
    CardPart,
    HistoryPart,
    KnowledgePart,
    LayoutPart,
    MemoriesPart,
    PassagePart,
    RepairPart,
    SectionPart,
    Snapshot,
    TokensPart,
)
from talekeeper.services.prompt.insights.world_parts import StatePart, WitnessPart
from talekeeper.services.prompt.prefix import PrefixUse
from talekeeper.services.prompt.sections import AUTHORS_NOTE_DEPTH, FIXED_ORDER, TITLES
from talekeeper.services.story.tree import Story
from talekeeper.services.world.addressed import AddressKind
from talekeeper.services.world.knowing import Handling, WitnessReport

__all__ = [
    "INSIGHTS_VERSION",
    "CardPart",
    "LayoutPart",
    "Snapshot",
    "dumps",
    "loads",
    "of_action",
    "snapshot",
]

SECTION_ORDER = (*FIXED_ORDER, "history", "authors_note", "player_action")
SECTION_TITLES = {
    **TITLES,
    "ai_instructions": "AI Instructions",
    "story_cards": "Story Cards",
    "story_cards_new": "Story Cards, newly fired",
    "history": "Recent history",
    "player_action": "Player's action",
}
PRESENT_REASONS = {
    "authors_note": f"the adventure's Author's Note, {AUTHORS_NOTE_DEPTH} actions before the end",
    "player_action": "the player's action this turn, last",
}
EMPTY_REASONS = {
    "ai_instructions": "no AI Instructions",
    "plot_essentials": "no Plot Essentials or persona",
    "story_summary": "no Story Summary yet",
    "current_state": "the story has said nothing yet of where the player is, who is here, "
    "what they carry, the time or a quest",
    "memories": "no memory retrieved",
    "story_cards": "no card is always on, and no card's keywords matched the recent story "
    "or the player's input",
    "knowledge": "no library attached",
    "story_cards_new": "no card fired that the Story Cards section before did not hold "
    "(the context layout 'cache' keeps that section as it was while no card leaves it)",
    "history": "no earlier action fits, or the story is empty",
    "authors_note": "no Author's Note",
    "player_action": "a continue: the narrator goes on with no player action",
}


def snapshot(
    inputs: ContextInputs,
    built: BuiltContext,
    retrieval: Retrieval,
    timings: dict[str, float],
    models: ModelSet,
    done: Completion | None,
    knowledge: KnowledgeResult | None = None,
    prefix: PrefixUse | None = None,
    *,
    dry_run: bool = False,
    witness: WitnessReport | None = None,
) -> Snapshot:
    """The snapshot of a reply (or a dry run's) whose prompt was ``built`` from ``inputs``
    (the cards a ``strict`` turn left out are not among its cards)."""
    report = built.report
    return Snapshot(
        version=INSIGHTS_VERSION,
        sections=_sections(report, knowledge, _left_out(inputs, built, witness)),
        memories=MemoriesPart.model_validate(retrieval),
        knowledge=KnowledgePart.of(knowledge or KnowledgeResult(note="no library attached")),
        cards=_cards(inputs, built, witness),
        history=HistoryPart(
            kept=len(report.history_kept),
            dropped=len(report.history_dropped),
            unread_older=inputs.more_history,
            cut_action_id=report.history_cut,
            first_kept_action_id=report.history_kept[0] if report.history_kept else None,
            reserve=report.history_reserve,
        ),
        budget=BudgetPart(
            context_tokens=models.context_tokens,
            reply_tokens=models.reply_tokens,
            reserved=inputs.reserved,
            available=inputs.budget,
            used=report.used,
        ),
        model=models.narrator.model,
        mode=models.mode,
        tokenizer=inputs.counter.name,
        timings=dict(timings),
        tokens=TokensPart(
            prompt=done.tokens_in if done and done.tokens_in is not None else report.used,
            reply=done.tokens_out if done else None,
            prompt_evaluated=prefix.evaluated if prefix else None,
            prompt_cached=prefix.cached if prefix else None,
            prompt_evaluated_by=prefix.by.value if prefix else None,
        ),
        layout=LayoutPart.of(report, inputs.cards_held_in(built)),
        repairs=[
            RepairPart(kind=kind, meaning=EDIT_MEANINGS[Edit(kind)])
            for kind in (done.repairs if done else ())
        ],
        retry_of=inputs.retry_of,
        branch_id=inputs.branch_id,
        dry_run=dry_run,
        state=StatePart.of(inputs.world, inputs.world_changes),
        witness=WitnessPart.of(witness),
    )


def with_author(snapshot: Snapshot, author: tuple[int, str] | None) -> Snapshot:
    """``snapshot`` naming who wrote the action it answers (a shared adventure's player);
    in single play (None) the key stays unset, as before sharing."""
    if author is None:
        return snapshot
    whose = AuthorPart(user_id=author[0], persona_name=author[1])
    return snapshot.model_copy(update={"author": whose})


def _cards(
    inputs: ContextInputs, built: BuiltContext, witness: WitnessReport | None
) -> list[CardPart]:
    """The cards of the Story Cards sections, but those a ``strict`` turn left out."""
    marks = witness.cards if witness else ()
    hidden = {m.card_id for m in marks if m.handling is Handling.WITHHELD}
    return [CardPart.of(f) for f in inputs.section_cards(built) if f.card.id not in hidden]


def _left_out(
    inputs: ContextInputs, built: BuiltContext, witness: WitnessReport | None
) -> dict[str, str]:
    """Why a section is empty when the turn left it out (not because there is none): a
    ``strict`` turn's Story Summary, Story Cards that all went over their budget."""
    reasons = {}
    if witness is not None and witness.summary == "withheld":
        whose = (
            f"the turn is {witness.addressed}'s, who missed part of the story"
            if witness.how == AddressKind.ACTING
            else f"the input addresses {witness.addressed}"
        )
        reasons["story_summary"] = (
            f"left out: {whose}, and the "
            "adventure's witness mode is strict (the summary tells what they may not know)"
        )
    cards = inputs.cards_rebuilt_left_out if built.report.rebuilt else inputs.cards_left_out
    if cards:
        reasons["story_cards"] = left_out_reason("", list(cards), inputs.cards_budget)
    return reasons


def _sections(
    report: ContextReport, knowledge: KnowledgeResult | None, left_out: dict[str, str]
) -> list[SectionPart]:
    by_name = {s.name: s for s in report.sections}
    dropped = len(report.history_dropped)
    sections = []
    for name in SECTION_ORDER:
        if name == "story_cards_new" and report.layout is not ContextLayout.CACHE:
            continue  # only the ``cache`` layout splits the Story Cards
        section = by_name.get(name)
        reason = left_out.get(name, EMPTY_REASONS[name])
        if name == "knowledge" and knowledge is not None and section is None:
            reason = knowledge.reason()
        if section is not None:
            reason = section.reason or PRESENT_REASONS.get(name, "")
            if name in FLOATING_ORDER and report.layout is ContextLayout.CACHE:
                reason = _floating_reason(name, reason, report)
            if name == "history":
                reason = f"the {len(report.history_kept)} newest actions that fit" + (
                    f"; {dropped} older ones dropped for budget" if dropped else ""
                )
                if any(s.cut for s in report.sections):
                    reason += (
                        f"; {report.history_reserve} tokens were kept for them ahead of the "
                        "sections cut"
                    )
        part = SectionPart(
            name=name,
            title=SECTION_TITLES[name],
            tokens=section.tokens if section else 0,
            text=section.text if section else "",
            reason=reason,
            cut=bool(section and section.cut),
        )
        if section is not None and section.budget is not None:  # written only when it has one
            part = part.model_copy(update={"budget": section.budget})
        if name == "knowledge":  # the passages themselves, with their sources and scores
            hits = knowledge.used if knowledge else []
            passages = [PassagePart.model_validate(h) for h in hits if h.in_context]
            part = part.model_copy(update={"passages": passages})
        sections.append(part)
    return sections


def _floating_reason(name: str, reason: str, report: ContextReport) -> str:
    back = report.actions_back(name)
    if name == "authors_note":
        reason = "the adventure's Author's Note"
    if back is None:
        return reason
    if back == 0:
        return f"{reason}; just before the player's action"
    where = f"{back} action{'' if back == 1 else 's'} before the end"
    if report.placement is not None and report.placement.sections[name][0] <= (
        report.placement.history_start or 0
    ):
        where += ", heading the history"
    return f"{reason}; {where}"


def dumps(data: Snapshot) -> str:
    """The stored text: compact JSON of the keys set (``Part.public``)."""
    return json.dumps(data.public(), ensure_ascii=False, separators=(",", ":"))


def loads(text: str) -> Snapshot | None:
    """A stored snapshot, whichever version wrote it; None for text that is not one this
    version can read."""
    try:
        return Snapshot.model_validate_json(text)
    except ValidationError:
        return None


def of_action(story: Story, action_id: int) -> Snapshot:
    """The Insights snapshot of a generated reply, as it was stored (any version)."""
    row = story.repo.insights(action_id)
    if row is None:
        kind = story.action(action_id).type  # an unknown action is "not found" first
        raise NotFound(
            f"Action {action_id} has no Insights: only narrations generated by the model "
            f"have them (this one is a {kind!r}"
            + (" written by hand)." if kind == NARRATION else ").")
        )
    snapshot = loads(row.data)
    if snapshot is None:  # an imported file's, say: kept, but not readable as Insights
        raise NotFound(
            f"Action {action_id} has no Insights this version can read: its snapshot is "
            "not in the Insights format."
        )
    return snapshot.for_action(action_id)
