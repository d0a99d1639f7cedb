"""The stored Insights format: a snapshot as pydantic models, so that one declaration both
writes what is stored and reads it back (snapshots are in users' databases and in export
files). This package is the one place in services that uses pydantic: the snapshot is a
stored data format, not a view.

Invariants:

- A snapshot carries ``version`` (``INSIGHTS_VERSION``); one written before there was a
  version has none and reads as version 0.
- Every field has a default, so a snapshot written before a field existed reads. Only the
  keys a snapshot was written or read with count as set, and ``public`` writes only those,
  so a stored snapshot reads back exactly as it was stored, keys this version does not
  declare (an older or newer writer's) included. A key that applies only sometimes is left
  unset where it does not: a section's ``passages`` (Knowledge only), a card's secondary
  keywords, the placement of a ``cache`` layout, the reply's ``action_id`` (a dry run has
  none; it is not stored, but added when read back).
- Parts are built from the services' own objects by attribute (``Retrieval``, ``Hit``,
  ``UsedMemory``) or by their ``of``, so what Insights shows of them is named here once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import Field

from talekeeper.services.library.ranking import (
    CONTEXT_WEIGHT,
    INPUT_WEIGHT,
    LEXICAL_WEIGHT,
    MIN_SCORE,
    RELATIVE_FLOOR,
    SEMANTIC_WEIGHT,
)
from talekeeper.services.library.search import KnowledgeResult
from talekeeper.services.prompt.insights.part import Part
from talekeeper.services.prompt.insights.world_parts import StatePart, WitnessPart

if TYPE_CHECKING:
    from talekeeper.services.cards.rules import FiredCard
    from talekeeper.services.prompt.built import ContextReport

INSIGHTS_VERSION = 1  # 1: the first to say so; before it, the same fields without a version


class PassagePart(Part):
    """A library passage (``services.library.search.Hit``)."""

    passage_id: int = 0
    source_id: int = 0
    source_title: str = ""
    position: int = 0
    heading_path: list[str] = Field(default_factory=list)
    page: int | None = None
    location: str = ""
    text: str = ""
    tokens: int = 0
    semantic_score: float | None = None
    lexical_score: float = 0.0
    final_score: float = 0.0
    semantic_rank: int | None = None
    lexical_rank: int | None = None
    in_context: bool = False


class SectionPart(Part):
    name: str = ""
    title: str = ""
    tokens: int = 0
    text: str = ""
    reason: str = ""
    cut: bool = False
    budget: int | None = None  # its own budget (Memories, Story Cards, Knowledge, Current state)
    passages: list[PassagePart] | None = None  # the Knowledge section's only


class QueryPart(Part):
    """What a search was asked, as it applies: the memories' query carries ``top_k`` and
    ``weights``, the library's not; the terms' weights once there were candidates."""

    input: str = ""
    context: str = ""
    top_k: int = 0
    weights: dict[str, bool | int | float] = Field(default_factory=dict)
    input_terms: list[str] = Field(default_factory=list)
    term_weights: dict[str, float] = Field(default_factory=dict)
    embedding_model: str | None = None


class CarriedPassagePart(Part):
    """A passage of a used memory's source (``services.memory.base.CarriedPassage``)."""

    key: int = 0
    text: str = ""
    depth: int = 0
    score: float = 0.0
    stated: bool = False
    order: int | None = None
    in_history: bool = False  # in the context by way of the history, not written again
    witness_label: str = ""  # what the section said after it for the addressed character


class MemorySourcePart(Part):
    branch_id: int | None = None
    depth: int | None = None
    source_start: int | None = None
    source_end: int | None = None


class UsedMemoryPart(Part):
    """A memory that went in (``services.memory.base.UsedMemory``)."""

    id: int = 0
    text: str = ""
    semantic_score: float = 0.0
    lexical_score: float = 0.0
    final_score: float = 0.0
    pinned: bool = False
    authority: str = ""
    source: MemorySourcePart = Field(default_factory=MemorySourcePart)
    matched: str = ""
    text_score: float | None = None
    evidence: str = ""
    evidence_key: int | None = None
    evidence_depth: int | None = None
    text_rank: int | None = None
    passage_rank: int | None = None
    fused_score: float | None = None
    via: int | None = None
    via_names: list[str] = Field(default_factory=list)
    stage: str = ""
    passages: list[CarriedPassagePart] = Field(default_factory=list)
    evidence_in_context: bool = False
    evidence_stated: bool = False
    witness_label: str = ""  # what the section said after it for the addressed character


class SuppressedPart(Part):
    id: int = 0
    duplicate_of: int = 0


class MemoriesPart(Part):
    """What retrieval chose and why (``services.memory.base.Retrieval``)."""

    budget: int | None = None
    used: list[UsedMemoryPart] = Field(default_factory=list)
    considered: int = 0
    suppressed: list[SuppressedPart] = Field(default_factory=list)
    left_for_room: list[UsedMemoryPart] = Field(default_factory=list)  # retrieved, no room
    query: QueryPart = Field(default_factory=QueryPart)
    note: str = ""


class SourcePart(Part):
    id: int = 0
    title: str = ""
    state: str = ""
    passage_count: int = 0
    embedded: int = 0
    error: str | None = None


class WeightsPart(Part):
    semantic: float = 0.0
    lexical: float = 0.0
    input: float = 0.0
    context: float = 0.0


class KnowledgePart(Part):
    """The library search behind the Knowledge section (``services.library.search``)."""

    note: str = ""
    sources: list[SourcePart] = Field(default_factory=list)
    considered: int = 0
    top_k: int = 0
    min_score: float = 0.0
    relative_floor: float = 0.0
    weights: WeightsPart = Field(default_factory=WeightsPart)
    query: QueryPart = Field(default_factory=QueryPart)
    used: list[PassagePart] = Field(default_factory=list)
    runners_up: list[PassagePart] = Field(default_factory=list)

    @classmethod
    def of(cls, result: KnowledgeResult) -> KnowledgePart:
        return cls(
            note=result.note,
            sources=[SourcePart.model_validate(s) for s in result.sources],
            considered=result.considered,
            top_k=result.top_k,
            min_score=MIN_SCORE,
            relative_floor=RELATIVE_FLOOR,
            weights=WeightsPart(
                semantic=SEMANTIC_WEIGHT,
                lexical=LEXICAL_WEIGHT,
                input=INPUT_WEIGHT,
                context=CONTEXT_WEIGHT,
            ),
            query=QueryPart.model_validate(result.query),
            used=[PassagePart.model_validate(h) for h in result.used],
            runners_up=[PassagePart.model_validate(h) for h in result.runners_up],
        )


class CardPart(Part):
    """A card in the Story Cards section: fired by ``keyword`` in ``where``, or always on.
    The secondary keys are there only for a fired card that has secondary keywords."""

    id: int = 0
    name: str = ""
    type: str = ""
    keyword: str | None = None
    where: str | None = None
    always_on: bool = False
    secondary_rule: str | None = None
    secondary: list[str] | None = None  # those that appeared (for NONE: none did)
    secondary_keywords: list[str] | None = None

    @classmethod
    def of(cls, fired: FiredCard) -> CardPart:
        card = fired.card
        part = cls(
            id=card.id,
            name=card.name,
            type=card.type,
            keyword=None if fired.always else fired.keyword,
            where=fired.where,
            always_on=fired.always,
        )
        if not card.secondary_keywords or fired.always:
            return part
        secondary = {
            "secondary_rule": card.secondary_rule.value,
            "secondary": list(fired.secondary),
            "secondary_keywords": list(card.secondary_keywords),
        }
        return part.model_copy(update=secondary)


class HistoryPart(Part):
    kept: int = 0
    dropped: int = 0
    unread_older: bool = False
    cut_action_id: int | None = None
    first_kept_action_id: int | None = None
    # The room kept for it ahead of the optional sections (docs/context.md, "The history's
    # reserve"): tokens.
    reserve: int = 0


class BudgetPart(Part):
    context_tokens: int = 0
    reply_tokens: int = 0
    reserved: int = 0
    available: int = 0
    used: int = 0


class TokensPart(Part):
    prompt: int = 0
    reply: int | None = None
    # What the model had to evaluate after the prefix it kept from the previous prompt
    # (``services.prompt.prefix``): the wait before the first word.
    prompt_evaluated: int | None = None
    prompt_cached: int | None = None
    prompt_evaluated_by: str | None = None


class FloatingPart(Part):
    at_depth: int = 0
    digest: str = ""
    actions_before_end: int | None = None


class LayoutPart(Part):
    """The context layout; for ``cache`` also where things went (every other key)."""

    name: str = ""
    top_digest: str | None = None
    history_start_depth: int | None = None
    floating: dict[str, FloatingPart] | None = None
    cards_held: list[int] | None = None  # the Story Cards section's (not the new ones)

    @classmethod
    def of(cls, report: ContextReport, cards_held: Sequence[int]) -> LayoutPart:
        placement = report.placement
        if placement is None:
            return cls(name=report.layout.value)
        return cls(
            name=report.layout.value,
            top_digest=placement.top,
            history_start_depth=placement.history_start,
            floating={
                name: FloatingPart(
                    at_depth=at, digest=digest, actions_before_end=report.actions_back(name)
                )
                for name, (at, digest) in placement.sections.items()
            },
            cards_held=list(cards_held),
        )


class RepairPart(Part):
    """What the embedded placeholder's reply needed (``providers.voice``)."""

    kind: str = ""
    meaning: str = ""


class AuthorPart(Part):
    """Who wrote the action a reply answers, in a shared adventure (docs/sharing.md)."""

    user_id: int = 0
    persona_name: str = ""


class Snapshot(Part):
    version: int = 0  # INSIGHTS_VERSION; 0: written before there was one
    sections: list[SectionPart] = Field(default_factory=list)
    memories: MemoriesPart = Field(default_factory=MemoriesPart)
    knowledge: KnowledgePart = Field(default_factory=KnowledgePart)
    cards: list[CardPart] = Field(default_factory=list)
    history: HistoryPart = Field(default_factory=HistoryPart)
    budget: BudgetPart = Field(default_factory=BudgetPart)
    model: str = ""
    mode: str = ""
    tokenizer: str = ""
    timings: dict[str, float] = Field(default_factory=dict)
    tokens: TokensPart = Field(default_factory=TokensPart)
    layout: LayoutPart = Field(default_factory=LayoutPart)
    repairs: list[RepairPart] = Field(default_factory=list)  # [] but for the placeholder
    retry_of: int | None = None
    branch_id: int = 0
    dry_run: bool = False
    state: StatePart = Field(default_factory=StatePart)  # the world (docs/world.md)
    witness: WitnessPart = Field(default_factory=WitnessPart)  # who was addressed
    author: AuthorPart | None = None  # a shared adventure's: whose action it answers
    action_id: int | None = None  # the reply's, when read back or answered with it

    def for_action(self, action_id: int) -> Snapshot:
        return self.model_copy(update={"action_id": action_id})

    def with_timing(self, name: str, ms: float) -> Snapshot:
        return self.model_copy(update={"timings": {**self.timings, name: ms}})
