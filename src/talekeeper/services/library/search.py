"""Searching the knowledge library: the best passages for a query, and why (Insights).

Invariants:

- The query is the turn's two-part query (the player's input and the scene context, as
  for the memories), or the words typed in the Library's search box. Its lexical terms
  are ``services.memory.terms`` of the input (of the context when there is no input), the
  same terms the full-text index holds.
- Every passage of the searched sources is considered. Its lexical score is the share of
  the query terms' weight it holds, a term weighing ``log(1 + (N - df + 0.5) / (df + 0.5))``
  over the N passages considered (BM25's idf): the rarer the heavier, and never zero, so a
  term that every passage holds still counts (a one-passage source is found by its words;
  the memories' ``log((N + 1) / (df + 1))`` would weigh its every term 0); its semantic
  score is the cosine with the weighted query vector (``INPUT_WEIGHT`` /
  ``CONTEXT_WEIGHT``), for passages that have a vector of the current embedding model,
  else none. The final score is
  ``SEMANTIC_WEIGHT * max(semantic, 0) + LEXICAL_WEIGHT * lexical``; the best ``top_k``
  whose final score reaches ``MIN_SCORE`` and ``RELATIVE_FLOOR`` of the best one's are
  chosen (the search box: the best ``top_k`` with any score above 0). The next
  ``RUNNERS_UP`` are kept for Insights ("what was considered").
- The scoring is computed here in NumPy, identically on SQLite and PostgreSQL: the
  database only says which passages hold each term (``storage.fulltext``, through
  ``storage.repositories.library``).
- Passages still without a vector (a source being indexed, or failed) are ranked by
  words; an embedding failure of the query never fails the turn (ranked by words, the
  note says so). Nothing is written here.
- Vectors are read once per source and kept (``VectorCache``) until the source's
  ``revision`` or model changes, or the id names another source (SQLite gives a new row
  the id of the last one deleted: the source's ``created_at`` tells them apart).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy.orm import Session, sessionmaker

from talekeeper.core.errors import TalekeeperError
from talekeeper.core.tokens import TokenCounter
from talekeeper.services.endpoints.models import ModelSet
from talekeeper.services.memory.terms import terms
from talekeeper.storage.db import read_scope
from talekeeper.storage.models import LibraryPassage, LibrarySource
from talekeeper.storage.repositories.library import LibraryRepository
from talekeeper.storage.vocabulary import SourceState

INPUT_WEIGHT = 0.7  # the player's words say what they ask about
CONTEXT_WEIGHT = 0.3  # the scene resolves "there" and "it"
SEMANTIC_WEIGHT = 0.6
LEXICAL_WEIGHT = 0.4
# Below this a passage is noise, not knowledge: better nothing than filler. Set on the library
# benchmark's tune seed (docs/benchmarks.md, "Knowledge library"): at 0.2 almost no question
# about a place the book never names came back empty; at 0.25, 40% of them on held-out seeds,
# for one point of recall@3.
MIN_SCORE = 0.25
# A passage under this share of the best one's score rides on the query's loose words (a
# middling cosine, no shared term) while a real answer was found: left out as well.
RELATIVE_FLOOR = 0.5
RUNNERS_UP = 3
SLOT_OVERHEAD = 40  # tokens of a passage's heading line in the Knowledge section
CACHED_SOURCES = 64

FloatArray = npt.NDArray[np.float32]
IdArray = npt.NDArray[np.int64]


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


@dataclass
class KnowledgeResult:
    used: list[Hit] = field(default_factory=list)
    runners_up: list[Hit] = field(default_factory=list)
    considered: int = 0
    sources: list[dict[str, Any]] = field(default_factory=list)
    query: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    top_k: int = 0

    @property
    def source_ids(self) -> list[int]:
        return [int(s["id"]) for s in self.sources]

    @property
    def failed_source_ids(self) -> list[int]:
        return [int(s["id"]) for s in self.sources if s["state"] == SourceState.FAILED]

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
class _Vectors:
    model: str
    revision: int
    ids: IdArray
    matrix: FloatArray  # unit rows
    born: datetime | None = None


class VectorCache:
    """Each source's passage vectors of one model, as one unit-row matrix (thread-safe)."""

    def __init__(self, capacity: int = CACHED_SOURCES) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[int, _Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def get(
        self,
        session: Session,
        source_id: int,
        model: str,
        revision: int,
        born: datetime | None = None,
    ) -> _Vectors:
        """``born``: the source's ``created_at``, which tells a source from an earlier one
        that had its id."""
        with self._lock:
            entry = self._entries.get(source_id)
            if entry is not None and (entry.model, entry.revision, entry.born) == (
                model,
                revision,
                born,
            ):
                self._entries.move_to_end(source_id)
                return entry
        rows = LibraryRepository(session).vectors(source_id, model)
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        widths = {len(r[1]) for r in rows if r[1] is not None}
        if len(widths) != 1:
            matrix = np.zeros((0, 0), dtype=np.float32)
            ids = ids[:0]
        else:
            matrix = np.frombuffer(b"".join(bytes(r[1] or b"") for r in rows), dtype=np.float32)
            matrix = matrix.reshape(len(rows), -1).copy()
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            matrix /= np.where(norms == 0, 1, norms).astype(np.float32)
        entry = _Vectors(model, revision, ids, matrix, born)
        with self._lock:
            self._entries[source_id] = entry
            self._entries.move_to_end(source_id)
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        return entry


@dataclass
class _Read:
    sources: list[LibrarySource]
    postings: list[list[int]]
    vectors: list[_Vectors]


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
        result.sources = [_source_brief(s) for s in read.sources]
        if not read.sources:
            empty = "the library is empty"
            result.note = "no library attached" if source_ids is not None else empty
            return result
        result.considered = sum(s.passage_count for s in read.sources)
        if top_k <= 0:
            result.note = "the knowledge top-K setting is 0"
            return result
        query_vector, note = None, ""
        if model is not None and any(v.ids.size for v in read.vectors) and models.embedding:
            query_vector, note = await _query_vector(models, input_text, context_text, adventure_id)
        ranked = _rank(read, query_terms, query_vector, result.considered, top_k + RUNNERS_UP)
        result.query["term_weights"] = ranked.term_weights
        best = float(ranked.final[ranked.order[0]]) if ranked.order else 0.0
        least = max(MIN_SCORE, RELATIVE_FLOOR * best) if floor else 0.0
        chosen = [i for i in ranked.order if ranked.final[i] > 0 and ranked.final[i] >= least]
        chosen = chosen[:top_k]
        taken = set(chosen)
        rest = list(itertools.islice((i for i in ranked.order if i not in taken), RUNNERS_UP))
        details = await asyncio.to_thread(
            self._details, [int(ranked.ids[i]) for i in [*chosen, *rest]]
        )
        titles = {s.id: s.title for s in read.sources}
        # A passage deleted since it was ranked (its source removed meanwhile) is left out.
        result.used = [
            _hit(ranked, i, details, titles) for i in chosen if _known(ranked, i, details)
        ]
        result.runners_up = [
            _hit(ranked, i, details, titles) for i in rest if _known(ranked, i, details)
        ]
        waiting = [s for s in read.sources if s.state != SourceState.READY]
        if not note and waiting and model is not None:
            note = (
                f"{len(waiting)} source(s) not fully indexed yet: their passages without a "
                "vector were ranked by words"
            )
        if not note and model is None:
            note = "no embedding model: ranked by words only"
        if not result.used and not note:
            note = "no library passage scored high enough"
        result.note = note
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
    vectors = [np.asarray(v, dtype=np.float32) for v in result.vectors]
    units = [v / n for v in vectors if (n := float(np.linalg.norm(v))) > 0]
    if not units:
        return None, ""
    if len(units) == 2 and input_text.strip() and context_text.strip():
        query = INPUT_WEIGHT * units[0] + CONTEXT_WEIGHT * units[1]
    else:
        query = units[0]
    norm = float(np.linalg.norm(query))
    return (query / norm).astype(np.float32) if norm else None, ""


@dataclass
class _Ranked:
    ids: IdArray
    semantic: npt.NDArray[np.float64]  # nan: no vector
    lexical: npt.NDArray[np.float64]
    final: npt.NDArray[np.float64]
    order: list[int]  # the best rows, best first: as many as can be chosen or runners-up
    term_weights: dict[str, float]

    def semantic_rank(self, row: int) -> int | None:
        return _place(self.ids, self.semantic, row)

    def lexical_rank(self, row: int) -> int | None:
        return _place(self.ids, np.where(self.lexical > 0, self.lexical, np.nan), row)


def _rank(
    read: _Read, query_terms: list[str], query: FloatArray | None, n: int, keep: int
) -> _Ranked:
    """The scores of every passage considered, and the ``keep`` best rows in order."""
    weights = {t: _idf(n, len(p)) for t, p in zip(query_terms, read.postings, strict=True)}
    total = sum(weights.values())
    lex_ids = np.zeros(0, dtype=np.int64)
    lex_scores = np.zeros(0, dtype=np.float64)
    postings = [np.asarray(p, dtype=np.int64) for p in read.postings]
    if postings and total > 0:
        all_ids = np.concatenate(postings)
        all_w = np.concatenate(
            [np.full(p.size, weights[t]) for t, p in zip(query_terms, postings, strict=True)]
        )
        if all_ids.size:
            lex_ids, inverse = np.unique(all_ids, return_inverse=True)
            lex_scores = np.minimum(np.bincount(inverse, weights=all_w) / total, 1.0)
    sem_ids = np.zeros(0, dtype=np.int64)
    sem_scores = np.zeros(0, dtype=np.float64)
    usable = [v for v in read.vectors if v.ids.size and query is not None]
    usable = [v for v in usable if v.matrix.shape[1] == query.shape[0]]  # type: ignore[union-attr]
    if usable and query is not None:
        sem_ids = np.concatenate([v.ids for v in usable])
        sem_scores = np.concatenate([(v.matrix @ query).astype(np.float64) for v in usable])
    ids = np.union1d(lex_ids, sem_ids)
    lexical = np.zeros(ids.size, dtype=np.float64)
    semantic = np.full(ids.size, np.nan, dtype=np.float64)
    if lex_ids.size:
        lexical[np.searchsorted(ids, lex_ids)] = lex_scores
    if sem_ids.size:
        semantic[np.searchsorted(ids, sem_ids)] = sem_scores
    final = SEMANTIC_WEIGHT * np.maximum(np.nan_to_num(semantic, nan=0.0), 0.0)
    final += LEXICAL_WEIGHT * lexical
    return _Ranked(
        ids=ids,
        semantic=semantic,
        lexical=lexical,
        final=final,
        order=_best(ids, final, keep),
        term_weights={t: round(w, 4) for t, w in weights.items()},
    )


def _best(ids: IdArray, final: npt.NDArray[np.float64], keep: int) -> list[int]:
    """The ``keep`` best rows, best first; equal scores go to the earlier passage (reading
    order is the stable tiebreak). Only the rows that can make the cut are sorted: every
    row scoring at least the ``keep``-th best score, ties at that score included."""
    if keep <= 0 or final.size == 0:
        return []
    if final.size > keep:
        threshold = np.partition(final, final.size - keep)[final.size - keep]
        rows = np.flatnonzero(final >= threshold)
    else:
        rows = np.arange(final.size)
    order = rows[np.lexsort((ids[rows], -final[rows]))]
    return [int(r) for r in order[:keep]]


def _idf(n: int, df: int) -> float:
    """A term's weight over ``n`` passages, ``df`` of which hold it: never zero."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def _place(ids: IdArray, scores: npt.NDArray[np.float64], row: int) -> int | None:
    """The 1-based rank of ``row`` among the rows with a score (nan: unranked), best first,
    ties to the earlier passage; None when ``row`` has no score."""
    score = scores[row]
    if np.isnan(score):
        return None
    ahead = np.count_nonzero(scores > score)  # nan compares false: unranked rows never count
    tied = np.count_nonzero((scores == score) & (ids < ids[row]))
    return int(ahead + tied) + 1


def _known(ranked: _Ranked, i: int, details: dict[int, LibraryPassage]) -> bool:
    return int(ranked.ids[i]) in details


def _hit(
    ranked: _Ranked, i: int, details: dict[int, LibraryPassage], titles: dict[int, str]
) -> Hit:
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


def _source_brief(row: LibrarySource) -> dict[str, Any]:
    return {
        "id": row.id,
        "title": row.title,
        "state": SourceState(row.state).value,
        "passage_count": row.passage_count,
        "embedded": row.embedded,
        "error": row.error,
    }
