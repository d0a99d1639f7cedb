"""The seam between the story engine and the memory system.

The engine calls the memory service at four points of a turn and on every
change to the story tree:

1. ``retrieve`` before the context is built (no transaction is open: it may
   read in its own short session and call the embedding model);
2. ``record_use`` inside the turn's one write transaction, after the reply is
   saved (use counts are never written during retrieval or for a dry run);
3. ``schedule`` in that same transaction, so background work exists exactly
   when the turn committed;
4. ``kick`` after the commit, to wake the worker;

and ``story_changed`` inside the transaction of every undo, redo, retry, take
switch, edit, delete and fork, so derived work can be withdrawn or marked
stale in the same commit as the change.

``NullMemory`` does nothing and retrieves nothing: the engine works without a
memory system, and a disabled bank looks the same to it.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, Protocol

from sqlalchemy.orm import Session

from talekeeper.core.lineage import Lineage
from talekeeper.core.tokens import TokenCounter
from talekeeper.services.endpoints.models import ModelSet
from talekeeper.services.memory.scoring import Stage
from talekeeper.storage.vocabulary import Authority

ChangeKind = Literal[
    "append", "reply", "retry", "switch_take", "undo", "redo", "edit", "delete", "fork"
]


@dataclass(frozen=True)
class RetrievalQuery:
    adventure_id: int
    user_id: int
    branch_id: int
    lineage: Lineage
    input_text: str  # the player's own action this turn; empty on a continue
    context_text: str  # the scene, then the end of the newest narration
    top_k: int
    exclude_action_ids: tuple[int, ...] = ()  # a retry leaves out the action being retried
    bank: bool = True  # the adventure's Memory Bank toggle


class MatchedKey(StrEnum):
    TEXT = "text"  # the memory's own text won
    SOURCE = "source"  # a passage of its source block won (its evidence)


EVIDENCE_LEAD = "from the story:"
PASSAGE_INDENT = "  "  # a passage's line sits under its memory's


@dataclass
class CarriedPassage:
    """A passage of a used memory's source, offered for this question (``ranking``'s
    ``Scored.passages``)."""

    key: int
    text: str
    depth: int  # the action it comes from
    score: float  # its final score against the question
    stated: bool = False  # the memory's own text says it already: never carried
    order: int | None = None  # its place among the passages that went in (None: left out)
    # Its action is in the history the prompt keeps: it went in there, so the Memories
    # section does not say it again (``order`` still marks it as in the context).
    in_history: bool = False
    # Written after it: who of those the turn addresses was away at its action
    # ("— Tobin was not there": ``services.world.knowing``).
    witness_label: str = ""


@dataclass
class UsedMemory:
    id: int
    text: str
    semantic_score: float  # of the key that matched
    lexical_score: float
    final_score: float
    pinned: bool
    authority: str  # an Authority (storage.vocabulary)
    source: dict[str, Any] = field(default_factory=dict)
    matched: MatchedKey = MatchedKey.TEXT
    text_score: float | None = None  # the memory's own text's final score, when a passage won
    evidence: str = ""  # the passage that matched (``matched`` is SOURCE)
    evidence_key: int | None = None
    evidence_depth: int | None = None  # the action it comes from
    # Where it stood (``ranking``'s fused order): its place by its own text and by its best
    # key among the memories considered (None: keys unused), and the order's score.
    text_rank: int | None = None
    passage_rank: int | None = None
    fused_score: float | None = None
    # The hop: found by following names (``via_names``) that a passage of memory ``via``
    # gave; it holds the last slot.
    via: int | None = None
    via_names: list[str] = field(default_factory=list)
    stage: Stage = Stage.TEXT  # what ranked it: its text, its best passage, or the hop
    # Its best passages for the question, best first; those that went in have an ``order``.
    passages: list[CarriedPassage] = field(default_factory=list)
    # Its sentences, each with the actions it comes from (``evidence.said``; empty: not read).
    said: tuple[tuple[str, tuple[int, ...]], ...] = ()
    # What of its text the character the turn addresses did not witness, taken out of
    # ``text`` and written on a line of its own under it, with its label (``knowing``).
    missed: str = ""
    # Written after it in the section: who of those the turn addresses did not witness it
    # ("— Tobin was not there": ``services.world.knowing``).
    witness_label: str = ""

    def _evidence_passage(self) -> CarriedPassage | None:
        """The passage that won the memory its place, among those offered."""
        if self.matched is not MatchedKey.SOURCE:
            return None
        return next((p for p in self.passages if p.key == self.evidence_key), None)

    @property
    def evidence_in_context(self) -> bool:
        """The winning passage fitted the Memories budget and went in."""
        won = self._evidence_passage()
        return won is not None and won.order is not None

    @property
    def evidence_stated(self) -> bool:
        """The memory's text already says the winning passage: it is never carried."""
        won = self._evidence_passage()
        return won is not None and won.stated


@dataclass
class Retrieval:
    """What retrieval chose and why; Insights shows all of it."""

    used: list[UsedMemory] = field(default_factory=list)
    considered: int = 0
    suppressed: list[dict[str, Any]] = field(default_factory=list)
    query: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    budget: int | None = None  # the Memories section's token budget, once fitted
    # Retrieved, but left out of the context for room: the lowest ranked, whole, when even
    # the memories alone did not fit (``section_variants``); not in ``used``.
    left_for_room: list[UsedMemory] = field(default_factory=list)

    def section_text(self, evidence: int | None = None, memories: int | None = None) -> str:
        """The Memories section: each memory marked as established or as an inference,
        followed by those of its passages that went in, in story order (``evidence``: only
        the first that many passages to go in; ``memories``: only the first that many
        memories)."""
        lines = []
        for memory in self.used[:memories]:
            mark = "inference" if memory.authority == Authority.HEURISTIC else "established"
            label = f" {memory.witness_label}" if memory.witness_label else ""
            lines.append(f"- ({mark}) {memory.text}{label}")
            if memory.missed:
                lines.append(f"{PASSAGE_INDENT}{memory.missed}")
            shown = [
                p for p in memory.passages
                if p.order is not None and (evidence is None or p.order < evidence)
            ]  # fmt: skip
            for passage in sorted(shown, key=lambda p: (p.depth, p.key)):
                if passage.in_history:
                    continue
                label = f" {passage.witness_label}" if passage.witness_label else ""
                lines.append(f"{PASSAGE_INDENT}{EVIDENCE_LEAD} {passage.text}{label}")
        return "\n".join(lines)

    def carried(self) -> int:
        return sum(p.order is not None for m in self.used for p in m.passages)

    def section_variants(self) -> list[str]:
        """The section with fewer and fewer passages (the last to go in dropped first), then
        the memories alone, fewer and fewer (the last, lowest ranked, dropped first) down to
        one: what the context builder falls back to before cutting it mid-text."""
        passages = [self.section_text(n) for n in range(self.carried() - 1, -1, -1)]
        return passages + [self.section_text(0, n) for n in range(len(self.used) - 1, 0, -1)]

    def leave_for_room(self, count: int) -> None:
        """Only the first ``count`` memories stayed in the context (with none of their
        passages); the rest move to ``left_for_room``."""
        self.keep_evidence(0)
        self.used, self.left_for_room = self.used[:count], self.used[count:]

    def keep_evidence(self, count: int) -> None:
        """Only the first ``count`` passages to go in stayed in the context."""
        for memory in self.used:
            for passage in memory.passages:
                if passage.order is not None and passage.order >= count:
                    passage.order = None

    def fit_evidence(
        self,
        counter: TokenCounter,
        budget: int,
        fill: bool = True,
        history: Collection[int] = (),
    ) -> None:
        """Carry passages into the section while it stays within ``budget`` tokens: first
        the passage that won each memory its place (in rank order), then (``fill``) the rest
        of the memories' passages best first; a passage the memory states, or one already
        carried (the same sentence in two memories' sources), is passed over. The memories
        themselves always go in.

        ``history``: the depths of the actions the prompt's history holds whole. A passage
        from one of them is chosen as any other and charged its line, but marked
        ``in_history`` and not written again: the section carries the same passages it
        would without the history, in fewer tokens."""
        self.budget = budget
        offered: list[tuple[tuple[int, float, int], CarriedPassage]] = []
        for rank, memory in enumerate(self.used):
            for passage in memory.passages:
                passage.order, passage.in_history = None, passage.depth in history
                won = memory.matched is MatchedKey.SOURCE and passage.key == memory.evidence_key
                if won or fill:
                    offered.append(((0, rank, 0) if won else (1, -passage.score, rank), passage))
        offered.sort(key=lambda o: o[0])
        # Each passage is priced by its own line (counting the whole section again for each
        # of up to thirty passages cost about 6 ms a turn); the section is counted whole once
        # at the end, and the last passages in leave while the prices fell short of it.
        used = counter.count(self.section_text())
        carried: set[str] = set()
        taken: list[tuple[CarriedPassage, int]] = []
        for _, passage in offered:
            if passage.stated or passage.text in carried:
                continue
            # (the line break joins the indent's spaces: a line's own count is its price)
            cost = counter.count(f"{PASSAGE_INDENT}{EVIDENCE_LEAD} {passage.text}")
            if used + cost > budget:
                continue
            passage.order, used = len(taken), used + cost
            carried.add(passage.text)
            taken.append((passage, cost))
        unwritten = sum(cost for passage, cost in taken if passage.in_history)
        while taken and counter.count(self.section_text()) + unwritten > budget:
            passage, cost = taken.pop()
            passage.order = None
            unwritten -= cost if passage.in_history else 0

    def in_history_depths(self) -> set[int]:
        """The depths of the passages in the context by way of the history."""
        return {
            p.depth for m in self.used for p in m.passages if p.in_history and p.order is not None
        }


@dataclass(frozen=True)
class StoryChange:
    kind: ChangeKind
    adventure_id: int
    branch_id: int
    action_ids: tuple[int, ...] = ()
    depth: int | None = None


class MemoryService(Protocol):
    async def retrieve(self, query: RetrievalQuery, models: ModelSet) -> Retrieval: ...

    def record_use(self, session: Session, retrieval: Retrieval, reply_id: int) -> None: ...

    def schedule(self, session: Session, adventure_id: int, user_id: int) -> None: ...

    def story_changed(self, session: Session, change: StoryChange) -> None: ...

    def kick(self, adventure_id: int) -> None: ...


class NullMemory:
    """No memory system: retrieves nothing, records nothing, schedules nothing."""

    async def retrieve(self, query: RetrievalQuery, models: ModelSet) -> Retrieval:
        return Retrieval(note="the memory system is not active")

    def record_use(self, session: Session, retrieval: Retrieval, reply_id: int) -> None:
        return None

    def schedule(self, session: Session, adventure_id: int, user_id: int) -> None:
        return None

    def story_changed(self, session: Session, change: StoryChange) -> None:
        return None

    def kick(self, adventure_id: int) -> None:
        return None
