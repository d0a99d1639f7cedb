"""Searching the knowledge library: the best passages for a query, and why (Insights).

Invariants:

- The query is the turn's two-part query (the player's input and the scene context, as
  for the memories), or the words typed in the Library's search box. Its lexical terms
  are ``services.memory.terms`` of the input (of the context when there is no input), the
  same terms the full-text index holds; its vector embeds the input and the context.
- Every passage of the searched sources is considered, and scored and chosen by
  ``services.library.ranking`` (the weights, the floors and the runners-up are there). The
  database only says which passages hold each term (``storage.fulltext``, through
  ``storage.repositories.library``) and holds the vectors, read through the shared
  ``services.library.vectors.VectorCache``.
- Passages still without a vector (a source being indexed, or failed) are ranked by
  words; an embedding failure of the query never fails the turn (ranked by words, the
  note says so). Nothing is written here.
- A passage deleted between its ranking and the reading of its text (its source removed
  meanwhile) is left out. ``KnowledgeResult.sources`` are the sources searched, as
  Insights shows them (``SourceBrief``).
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from talekeeper.core.errors import TalekeeperError
from talekeeper.core.tokens import TokenCounter
from talekeeper.services.endpoints.models import ModelSet
from talekeeper.services.library.ranking import RUNNERS_UP, Ranked, choose, query_vector, rank
from talekeeper.services.library.vectors import FloatArray, VectorCache, Vectors
from talekeeper.services.memory.terms import terms
from talekeeper.storage.db import read_scope
from talekeeper.storage.models import LibraryPassage, LibrarySource
from talekeeper.storage.repositories.library import LibraryRepository
from talekeeper.storage.vocabulary import SourceState

SLOT_OVERHEAD = 40  # tokens of a passage's heading line in the Knowledge section


@dataclass
class Hit:
    passage_id: int
    source_id: int
    source_title: str
    position: int
    heading_path: list[str]
    page: int | None
    location: str
    text: str
    tokens: int
    semantic_score: float | None
    lexical_score: float
    final_score: float
    semantic_rank: int | None
    lexical_rank: int | None
    in_context: bool = False


@dataclass(frozen=True)
class SourceBrief:
    """A searched source as Insights shows it (``KnowledgePart.sources``)."""

    id: int
    title: str
    state: SourceState
    passage_count: int
    embedded: int
    error: str | None

    @classmethod
    def of(cls, row: LibrarySource) -> SourceBrief:
        return cls(
            id=row.id,
            title=row.title,
            state=SourceState(row.state),
            passage_count=row.passage_count,
            embedded=row.embedded,
            error=row.error,
        )


@dataclass
class KnowledgeResult:
    used: list[Hit] = field(default_factory=list)
    runners_up: list[Hit] = field(default_factory=list)
    considered: int = 0
    sources: list[SourceBrief] = field(default_factory=list)
    query: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    top_k: int = 0

    @property
    def source_ids(self) -> list[int]:
        return [int(s.id) for s in self.sources]

    @property
    def failed_source_ids(self) -> list[int]:
        return [int(s.id) for s in self.sources if s.state == SourceState.FAILED]

    def fit(self, counter: TokenCounter, budget: int) -> None:
        """Mark the chosen passages that go into the Knowledge section, in rank order,
        while it stays within ``budget`` tokens."""
        used = 0
        for hit in self.used:
            cost = counter.count(render_hit(hit)) + 2
            hit.in_context = used + cost <= budget
            if hit.in_context:
                used += cost

    def section_text(self, count: int | None = None) -> str:
        shown = [h for h in self.used if h.in_context]
        return "\n\n".join(render_hit(h) for h in shown[:count])

    def section_variants(self) -> list[str]:
        shown = sum(h.in_context for h in self.used)
        return [self.section_text(n) for n in range(shown - 1, 0, -1)]

    def keep(self, count: int) -> None:
        """Only the first ``count`` passages in the context went in."""
        for hit in self.used:
            if hit.in_context:
                if count <= 0:
                    hit.in_context = False
                count -= 1

    def reason(self) -> str:
        if not any(h.in_context for h in self.used):
            return self.note or "no library passage scored high enough"
        shown = sum(h.in_context for h in self.used)
        return f"{shown} of {self.considered:,} library passages considered"


def render_hit(hit: Hit) -> str:
    where = f", {hit.location}" if hit.location else ""
    return f"From {hit.source_title}{where}:\n{hit.text}"


def location(heading_path: list[str], page: int | None) -> str:
    where = " › ".join(heading_path)
    if page is None:
        return where
    return f"{where}, p. {page}" if where else f"p. {page}"


@dataclass
class _Read:
    sources: list[LibrarySource]
    postings: list[list[int]]
    vectors: list[Vectors]


class KnowledgeSearch:
    """The library's search: one per process (its vector cache is shared)."""

    def __init__(self, sessions: sessionmaker[Session], cache: VectorCache | None = None) -> None:
        self.sessions = sessions
        self.cache = cache or VectorCache()

    async def search(
        self,
        user_id: int,
        source_ids: list[int] | None,
        input_text: str,
        context_text: str,
        top_k: int,
        models: ModelSet,
        *,
        adventure_id: int | None = None,
        floor: bool = True,
    ) -> KnowledgeResult:
        """``source_ids``: the sources to search (None: all of the user's). ``floor``: leave
        out passages under ``MIN_SCORE`` (a turn does; the Library's search box shows the
        best ones whatever their score)."""
        result = KnowledgeResult(top_k=top_k)
        query_terms = list(dict.fromkeys(terms(input_text) or terms(context_text)))
        model = models.embedding.model if models.embedding else None
        result.query = {
            "input": input_text,
            "context": context_text,
            "input_terms": query_terms,
            "embedding_model": model,
        }
        if source_ids is not None and not source_ids:
            result.note = "no library attached"
            return result
        read = await asyncio.to_thread(self._read, user_id, source_ids, query_terms, model)
        result.sources = [SourceBrief.of(s) for s in read.sources]
        if not read.sources:
            empty = "the library is empty"
            result.note = "no library attached" if source_ids is not None else empty
            return result
        result.considered = sum(s.passage_count for s in read.sources)
        if top_k <= 0:
            result.note = "the knowledge top-K setting is 0"
            return result
        query, note = None, ""
        if model is not None and any(v.ids.size for v in read.vectors) and models.embedding:
            query, note = await _query_vector(models, input_text, context_text, adventure_id)
        keep = top_k + RUNNERS_UP
        ranked = rank(query_terms, read.postings, read.vectors, query, result.considered, keep)
        result.query["term_weights"] = ranked.term_weights
        chosen, rest = choose(ranked, top_k, floor)
        result.used, result.runners_up = await self._hits(ranked, chosen, rest, read.sources)
        result.note = _note(note, read.sources, model, result.used)
        return result

    def _read(
        self, user_id: int, source_ids: list[int] | None, query_terms: list[str], model: str | None
    ) -> _Read:
        with read_scope(self.sessions) as session:
            library = LibraryRepository(session)
            sources = library.sources(user_id, among=source_ids)
            ids = [s.id for s in sources]
            postings = library.holding(query_terms, ids)
            vectors = []
            if model is not None:
                for s in sources:
                    if s.vector_model == model and s.embedded > 0:
                        vectors.append(
                            self.cache.get(session, s.id, model, s.revision, s.created_at)
                        )
            for s in sources:
                session.expunge(s)
        return _Read(sources, postings, vectors)

    async def _hits(
        self, ranked: Ranked, chosen: list[int], rest: list[int], sources: list[LibrarySource]
    ) -> tuple[list[Hit], list[Hit]]:
        """The chosen rows and the runners-up as passages, with their text and place."""
        details = await asyncio.to_thread(
            self._details, [int(ranked.ids[i]) for i in [*chosen, *rest]]
        )
        titles = {s.id: s.title for s in sources}
        # A passage deleted since it was ranked (its source removed meanwhile) is left out.
        used = [_hit(ranked, i, details, titles) for i in chosen if _known(ranked, i, details)]
        runners_up = [_hit(ranked, i, details, titles) for i in rest if _known(ranked, i, details)]
        return used, runners_up

    def _details(self, ids: list[int]) -> dict[int, LibraryPassage]:
        if not ids:
            return {}
        with read_scope(self.sessions) as session:
            rows = LibraryRepository(session).passages(ids)
            for row in rows:
                session.expunge(row)
        return {r.id: r for r in rows}


async def _query_vector(
    models: ModelSet, input_text: str, context_text: str, adventure_id: int | None
) -> tuple[FloatArray | None, str]:
    assert models.embedding is not None
    texts = [t for t in (input_text, context_text) if t.strip()]
    if not texts:
        return None, ""
    try:
        result = await models.embedding.embed(texts, adventure_id=adventure_id)
    except TalekeeperError as exc:
        return None, f"the query could not be embedded ({exc.message}); ranked by words only"
    return query_vector(result.vectors, input_text, context_text), ""


def _note(note: str, sources: list[LibrarySource], model: str | None, used: list[Hit]) -> str:
    """What the result's note says: the query's embedding failure (``note``), else why
    passages were ranked by words, else that none scored high enough (when none did)."""
    waiting = [s for s in sources if s.state != SourceState.READY]
    if not note and waiting and model is not None:
        note = (
            f"{len(waiting)} source(s) not fully indexed yet: their passages without a "
            "vector were ranked by words"
        )
    if not note and model is None:
        note = "no embedding model: ranked by words only"
    if not used and not note:
        note = "no library passage scored high enough"
    return note


def _known(ranked: Ranked, i: int, details: dict[int, LibraryPassage]) -> bool:
    return int(ranked.ids[i]) in details


def _hit(ranked: Ranked, i: int, details: dict[int, LibraryPassage], titles: dict[int, str]) -> Hit:
    pid = int(ranked.ids[i])
    row = details[pid]
    heading = [str(h) for h in json.loads(row.heading_path or "[]")]
    semantic = float(ranked.semantic[i])
    return Hit(
        passage_id=pid,
        source_id=row.source_id,
        source_title=titles.get(row.source_id, ""),
        position=row.position,
        heading_path=heading,
        page=row.page,
        location=location(heading, row.page),
        text=row.text,
        tokens=row.tokens,
        semantic_score=None if math.isnan(semantic) else round(semantic, 4),
        lexical_score=round(float(ranked.lexical[i]), 4),
        final_score=round(float(ranked.final[i]), 4),
        semantic_rank=ranked.semantic_rank(i),
        lexical_rank=ranked.lexical_rank(i),
    )
