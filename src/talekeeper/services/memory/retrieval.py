"""Retrieval: the few memories that matter this turn, and why (docs/memory.md §5).

Invariants:

- Candidates are the adventure's active memories with a vector of the current
  embedding model whose node lies on the current path's lineage (the whole
  lineage, not a window): a memory of a sibling branch is never a candidate.
- The two query texts are embedded in one call, with no transaction open. An
  embedding failure never breaks the turn: ranking falls back to the lexical
  score (and the pins), and the trace says so.
- Nothing is written here: use counts are written in the turn's commit
  (``MemorySystem.record_use``), never during retrieval or for a dry run.
- The trace (query texts, input terms, weights, scores, considered,
  suppressed) is what Insights shows; for each memory chosen, which key matched
  (its own text, or a passage of its source with that passage's text and action), what
  ranked it (``Stage``), and its best passages for the question, those that went in marked.
"""

from __future__ import annotations

import asyncio

import numpy as np
import numpy.typing as npt
from sqlalchemy.orm import Session, sessionmaker

from talekeeper.core.errors import TalekeeperError
from talekeeper.services.endpoints.models import ModelSet
from talekeeper.services.memory.arrays import Bank, lineage_mask
from talekeeper.services.memory.base import (
    CarriedPassage,
    MatchedKey,
    Retrieval,
    RetrievalQuery,
    UsedMemory,
)
from talekeeper.services.memory.cache import BankCache, Detail
from talekeeper.services.memory.evidence import said, stated
from talekeeper.services.memory.ranking import rank
from talekeeper.services.memory.scoring import DUPLICATE_COSINE, WEIGHTS, Ranking, Scored
from talekeeper.services.memory.terms import terms
from talekeeper.storage.db import read_scope
from talekeeper.storage.repositories.memory import MemoryRepository
from talekeeper.storage.repositories.memory_keys import KeyRepository


async def retrieve(
    query: RetrievalQuery, models: ModelSet, sessions: sessionmaker[Session], cache: BankCache
) -> Retrieval:
    if not query.bank:
        return Retrieval(note="the Memory Bank is off for this adventure", query=_trace(query))
    if models.embedding is None:
        return Retrieval(note="the Memory Bank is off (no embedding model)", query=_trace(query))
    model = models.embedding.model
    bank, mask = await asyncio.to_thread(_bank, query, model, sessions, cache)
    if not mask.any():
        # Nothing to rank on this path: no call to the embedder at all.
        return Retrieval(note="no memory in the bank on this path yet", query=_trace(query))
    note = ""
    vectors: list[np.ndarray | None] = [None, None]
    texts = [query.input_text, query.context_text]
    wanted = [i for i, text in enumerate(texts) if text.strip()]
    if wanted:
        try:
            result = await models.embedding.embed(
                [texts[i] for i in wanted], adventure_id=query.adventure_id
            )
            for i, vector in zip(wanted, result.vectors, strict=True):
                vectors[i] = np.asarray(vector, dtype=np.float32)
        except TalekeeperError as exc:
            note = f"the query could not be embedded ({exc.message}); ranked by words only"
    revision = cache.revision(query.adventure_id)
    ranking, note = _rank(query, bank, mask, vectors, note)  # NumPy only: well under a millisecond
    ids = [s.id for s in ranking.chosen]
    details = cache.details(query.adventure_id, ids)
    # A memory's passages lead with the key that won it its place (``Scored.passages``).
    key_ids = sorted({k for s in ranking.chosen for k, _, _ in s.passages})
    passages: dict[int, tuple[str, int]] = {}
    if len(details) < len(ids) or key_ids:
        missing = [i for i in ids if i not in details]
        found, passages = await asyncio.to_thread(_read_details, sessions, missing, key_ids)
        cache.keep_details(query.adventure_id, revision, found)
        details.update(found)
    return _result(query, model, ranking, details, passages, note)


def _bank(
    query: RetrievalQuery, model: str, sessions: sessionmaker[Session], cache: BankCache
) -> tuple[Bank, npt.NDArray[np.bool_]]:
    with read_scope(sessions) as session:
        bank = cache.bank(session, query.adventure_id, model)
    return bank, lineage_mask(bank, query.lineage)


def _rank(
    query: RetrievalQuery,
    bank: Bank,
    mask: npt.NDArray[np.bool_],
    vectors: list[np.ndarray | None],
    note: str,
) -> tuple[Ranking, str]:
    input_vec, context_vec = vectors
    if any(v is not None and v.shape[0] != bank.vectors.shape[1] for v in vectors):
        input_vec = context_vec = None
        note = "the query's vectors do not match the bank's; ranked by words only"
    input_terms = terms(query.input_text)
    return rank(bank, mask, input_vec, context_vec, input_terms, query.top_k), note


def _read_details(
    sessions: sessionmaker[Session], ids: list[int], key_ids: list[int]
) -> tuple[dict[int, Detail], dict[int, tuple[str, int]]]:
    """The chosen memories' details not cached yet, and the matched passages' texts."""
    with read_scope(sessions) as session:
        rows = MemoryRepository(session).texts(ids)
        keys = KeyRepository(session)
        own = keys.depth_terms(list(rows))
        details = {
            i: Detail(
                r.text,
                r.authority,
                r.branch_id,
                r.depth,
                r.source_start,
                r.source_end,
                said(r.text, own[i]),
            )
            for i, r in rows.items()
        }
        return details, keys.texts(key_ids)


def _result(
    query: RetrievalQuery,
    model: str,
    ranking: Ranking,
    details: dict[int, Detail],
    passages: dict[int, tuple[str, int]],
    note: str,
) -> Retrieval:
    used = [used_memory(s, details[s.id], passages) for s in ranking.chosen if s.id in details]
    if not used and not note:
        note = "no memory on this path yet" if not ranking.considered else ""
    return Retrieval(
        used=used,
        considered=ranking.considered,
        suppressed=[{"id": i, "duplicate_of": d} for i, d in ranking.suppressed],
        query=_trace(query, ranking, model),
        note=note,
    )


def used_memory(s: Scored, detail: Detail, passages: dict[int, tuple[str, int]]) -> UsedMemory:
    used = UsedMemory(
        id=s.id,
        text=detail.text,
        semantic_score=round(s.semantic, 4),
        lexical_score=round(s.lexical, 4),
        final_score=round(s.final, 4),
        pinned=s.pinned,
        authority=detail.authority,
        source={
            "branch_id": detail.branch_id,
            "depth": detail.depth,
            "source_start": detail.source_start,
            "source_end": detail.source_end,
        },
    )
    used.said = detail.said
    used.text_rank, used.passage_rank = s.text_rank or None, s.key_rank
    used.fused_score = round(s.fused, 4)
    if s.via is not None:
        used.via, used.via_names = s.via, list(s.names)
    used.stage = s.stage
    if s.key is not None and s.key in passages:  # a key dropped since ranking: the text only
        used.matched = MatchedKey.SOURCE
        used.text_score = round(s.own_final, 4) if s.own_final is not None else None
        used.evidence, used.evidence_depth = passages[s.key]
        used.evidence_key = s.key
    used.passages = [
        CarriedPassage(key, passages[key][0], depth, round(score, 4),
                       stated(passages[key][0], detail.text))
        for key, score, depth in s.passages
        if key in passages  # a key dropped since ranking is not offered
    ]  # fmt: skip
    return used


def _trace(
    query: RetrievalQuery, ranking: Ranking | None = None, model: str | None = None
) -> dict[str, object]:
    out: dict[str, object] = {
        "input": query.input_text,
        "context": query.context_text,
        "top_k": query.top_k,
        "weights": {**WEIGHTS._asdict(), "duplicate_cosine": DUPLICATE_COSINE},
    }
    if ranking is not None:
        out["input_terms"] = ranking.input_terms
        out["term_weights"] = {t: round(w, 4) for t, w in ranking.term_weights.items()}
    if model is not None:
        out["embedding_model"] = model
    return out
