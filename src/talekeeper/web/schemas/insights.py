"""What the Insights routes answer: a reply's snapshot (``services.prompt.insights.Snapshot``), and
the next turn's as a dry run.

A snapshot is a stored document, answered as it was stored: one written by an earlier
version lacks the keys added since, and a key that applies only sometimes (a section's
``passages``, a card's secondary keywords, the ``cache`` layout's placement, ``action_id``)
is absent where it does not. So every field has a default, the models are read from the
snapshot's ``public()`` keys (``InsightsOut.of``), and the routes write only the keys that
were set (``response_model_exclude_unset``): nothing is added as null. A key of another
version that these models do not declare is answered as stored (``extra="allow"``). A
snapshot written now carries ``version``; one written before has none.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field

from talekeeper.services.prompt.insights import Snapshot
from talekeeper.web.schemas.common import Out


class StoredOut(Out):
    """A part of a stored snapshot: its keys as stored, undeclared ones too."""

    model_config = ConfigDict(extra="allow")


class PassageOut(StoredOut):
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


class SectionOut(StoredOut):
    name: str = ""
    title: str = ""
    tokens: int = 0
    text: str = ""
    reason: str = ""
    cut: bool = False
    passages: list[PassageOut] | None = None  # the Knowledge section's only


class QueryOut(StoredOut):
    input: str = ""
    context: str = ""
    top_k: int = 0
    weights: dict[str, bool | int | float] = Field(default_factory=dict)
    input_terms: list[str] = Field(default_factory=list)
    term_weights: dict[str, float] = Field(default_factory=dict)
    embedding_model: str | None = None


class CarriedPassageOut(StoredOut):
    key: int = 0
    text: str = ""
    depth: int = 0
    score: float = 0.0
    stated: bool = False
    order: int | None = None


class MemorySourceOut(StoredOut):
    branch_id: int | None = None
    depth: int | None = None
    source_start: int | None = None
    source_end: int | None = None


class UsedMemoryOut(StoredOut):
    id: int = 0
    text: str = ""
    semantic_score: float = 0.0
    lexical_score: float = 0.0
    final_score: float = 0.0
    pinned: bool = False
    authority: str = ""
    source: MemorySourceOut = Field(default_factory=MemorySourceOut)
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
    passages: list[CarriedPassageOut] = Field(default_factory=list)
    evidence_in_context: bool = False
    evidence_stated: bool = False


class SuppressedOut(StoredOut):
    id: int = 0
    duplicate_of: int = 0


class MemoriesOut(StoredOut):
    budget: int | None = None
    used: list[UsedMemoryOut] = Field(default_factory=list)
    considered: int = 0
    suppressed: list[SuppressedOut] = Field(default_factory=list)
    query: QueryOut = Field(default_factory=QueryOut)
    note: str = ""


class SourceOut(StoredOut):
    id: int = 0
    title: str = ""
    state: str = ""
    passage_count: int = 0
    embedded: int = 0
    error: str | None = None


class WeightsOut(StoredOut):
    semantic: float = 0.0
    lexical: float = 0.0
    input: float = 0.0
    context: float = 0.0


class KnowledgeOut(StoredOut):
    note: str = ""
    sources: list[SourceOut] = Field(default_factory=list)
    considered: int = 0
    top_k: int = 0
    min_score: float = 0.0
    relative_floor: float = 0.0
    weights: WeightsOut = Field(default_factory=WeightsOut)
    query: QueryOut = Field(default_factory=QueryOut)
    used: list[PassageOut] = Field(default_factory=list)
    runners_up: list[PassageOut] = Field(default_factory=list)


class CardOut(StoredOut):
    id: int = 0
    name: str = ""
    type: str = ""
    keyword: str | None = None
    where: str | None = None
    always_on: bool = False
    secondary_rule: str | None = None  # these three: a fired card with secondary keywords
    secondary: list[str] | None = None
    secondary_keywords: list[str] | None = None


class HistoryOut(StoredOut):
    kept: int = 0
    dropped: int = 0
    unread_older: bool = False
    cut_action_id: int | None = None
    first_kept_action_id: int | None = None


class BudgetOut(StoredOut):
    context_tokens: int = 0
    reply_tokens: int = 0
    reserved: int = 0
    available: int = 0
    used: int = 0


class TokensOut(StoredOut):
    prompt: int = 0
    reply: int | None = None
    prompt_evaluated: int | None = None
    prompt_cached: int | None = None
    prompt_evaluated_by: str | None = None


class FloatingOut(StoredOut):
    at_depth: int = 0
    digest: str = ""
    actions_before_end: int | None = None


class LayoutOut(StoredOut):
    name: str = ""
    top_digest: str | None = None  # these four: the ``cache`` layout only
    history_start_depth: int | None = None
    floating: dict[str, FloatingOut] | None = None
    cards_held: list[int] | None = None


class RepairOut(StoredOut):
    kind: str = ""
    meaning: str = ""


class InsightsOut(StoredOut):
    version: int = 0
    sections: list[SectionOut] = Field(default_factory=list)
    memories: MemoriesOut = Field(default_factory=MemoriesOut)
    knowledge: KnowledgeOut = Field(default_factory=KnowledgeOut)
    cards: list[CardOut] = Field(default_factory=list)
    history: HistoryOut = Field(default_factory=HistoryOut)
    budget: BudgetOut = Field(default_factory=BudgetOut)
    model: str = ""
    mode: str = ""
    tokenizer: str = ""
    timings: dict[str, float] = Field(default_factory=dict)
    tokens: TokensOut = Field(default_factory=TokensOut)
    layout: LayoutOut = Field(default_factory=LayoutOut)
    repairs: list[RepairOut] = Field(default_factory=list)
    retry_of: int | None = None
    branch_id: int = 0
    dry_run: bool = False
    action_id: int | None = None  # a reply's; a dry run has none

    @classmethod
    def of(cls, snapshot: Snapshot) -> InsightsOut:
        """The answer for ``snapshot``, with only the keys it has."""
        return cls.model_validate(snapshot.public())
