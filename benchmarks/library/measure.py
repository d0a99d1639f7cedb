"""Measuring the knowledge library through the product's own code, on a real runtime
(``benchmarks.kit.runtime.Player``). Invariants:

- **The product's path.** A book is read and split by ``store.prepare``, written by
  ``store.store`` in one unit, its vectors made by the runtime's ``LibraryIndexer``
  (``step()`` called back to back, as its loop does while work is due; the loop itself is
  stopped so nothing else embeds meanwhile), and searched by ``KnowledgeSearch.search``.
  Nothing here scores a passage.
- **Baselines without copies.** Full-text alone and vectors alone are the product's
  search with its two module weights set for the duration of a call (``weighted``) and
  put back after.
- **One answer.** A question's answer is the one passage holding its fact's sentence
  verbatim; a sentence in no passage or in two stops the run.
- **Synthetic vectors are said to be.** The latency libraries' vectors are random unit
  vectors of the embedder's width written straight into ``library_passages.vector`` (the
  source marked ready): embedding 50,000 passages on a small CPU takes longer than the
  rest of the run. Their text, terms and full-text index are the product's, and every
  query is embedded by the real embedder.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from benchmarks.kit.runtime import Player
from benchmarks.library.book import Book, Fact, generate, questions
from sqlalchemy import select, text, update

from talekeeper.core.tokens import BpeCounter
from talekeeper.services.library import ranking, store
from talekeeper.services.library.indexer import Outcome
from talekeeper.services.library.search import KnowledgeSearch
from talekeeper.storage.db import read_scope, session_scope
from talekeeper.storage.models import LibraryPassage, LibrarySource
from talekeeper.storage.vocabulary import SourceState

Weights = tuple[float, float]  # (semantic, lexical)
IN_USE: Weights = (ranking.SEMANTIC_WEIGHT, ranking.LEXICAL_WEIGHT)
SEMANTIC_ONLY: Weights = (1.0, 0.0)
LEXICAL_ONLY: Weights = (0.0, 1.0)
SIGNALS: tuple[Weights, ...] = (IN_USE, LEXICAL_ONLY, SEMANTIC_ONLY)  # hybrid, then each alone
TOP_K = 3  # the product's default knowledge_top_k


def weights_name(w: Weights) -> str:
    return f"{w[0]:.1f}/{w[1]:.1f}"


@contextmanager
def weighted(w: Weights) -> Iterator[None]:
    """The product's search with its semantic and lexical weights set to ``w`` meanwhile."""
    saved = ranking.SEMANTIC_WEIGHT, ranking.LEXICAL_WEIGHT
    ranking.SEMANTIC_WEIGHT, ranking.LEXICAL_WEIGHT = w
    try:
        yield
    finally:
        ranking.SEMANTIC_WEIGHT, ranking.LEXICAL_WEIGHT = saved


def embedding_model(p: Player) -> str:
    assert p.models.embedding is not None, "the benchmark needs an embedder"
    return p.models.embedding.model


# -- import ------------------------------------------------------------------------------


@dataclass
class Imported:
    source_id: int
    size_bytes: int
    passages: int
    tokens: int
    prepare_s: float  # read and split (``store.prepare``)
    store_s: float  # written in one unit (``store.store``)
    index_s: float  # every vector made (``LibraryIndexer.step`` after step)
    batches: int


def _store_book(p: Player, book: Book) -> tuple[int, store.Prepared, float, float]:
    """``book`` read and split, then written, by the product: its source id, what was
    prepared, and the seconds of each stage."""
    began = time.perf_counter()
    prepared = store.prepare(book.filename, book.data, BpeCounter())
    prepared_at = time.perf_counter()
    with session_scope(p.rt.sessions) as session:
        source_id = store.store(session, p.uid, prepared, embedding_model(p)).id
    return source_id, prepared, prepared_at - began, time.perf_counter() - prepared_at


async def import_book(p: Player, book: Book) -> Imported:
    """Prepare, store and index ``book``, each stage timed; the book is then searchable."""
    source_id, prepared, prepare_s, store_s = _store_book(p, book)
    assert p.rt.indexer is not None
    began, batches = time.perf_counter(), 0
    while True:  # the source's run, a batch at a time, here (its run was never asked for)
        outcome = await p.rt.indexer.step(source_id)
        batches += outcome in (Outcome.EMBEDDED, Outcome.DONE)
        if outcome is not Outcome.EMBEDDED:
            break
    index_s = time.perf_counter() - began
    with read_scope(p.rt.sessions) as session:
        row = session.get(LibrarySource, source_id)
        assert row is not None
        if row.state != SourceState.READY or row.embedded != len(prepared.passages):
            raise RuntimeError(f"{book.filename}: indexing ended {row.state} at {row.embedded}")
    passages = len(prepared.passages)
    return Imported(
        source_id, len(book.data), passages, prepared.tokens, prepare_s, store_s, index_s, batches
    )


# -- recall ------------------------------------------------------------------------------


@dataclass
class Asked:
    key: str  # the fact's key
    kind: str
    question: str
    answer: int  # the passage that answers
    returned: dict[Weights, list[int]] = field(default_factory=dict)  # floor off, by weights
    floored: list[int] = field(default_factory=list)  # the product's search, floor on


def answers(p: Player, source_id: int, facts: list[Fact]) -> dict[str, int]:
    """The one passage holding each fact's sentence, by the fact's key."""
    with read_scope(p.rt.sessions) as session:
        rows = session.execute(
            select(LibraryPassage.id, LibraryPassage.text).where(
                LibraryPassage.source_id == source_id
            )
        ).all()
    out: dict[str, int] = {}
    for fact in facts:
        holding = [int(pid) for pid, body in rows if fact.sentence in body]
        if len(holding) != 1:
            raise RuntimeError(f"{fact.key}: its sentence is in {len(holding)} passages")
        out[fact.key] = holding[0]
    return out


async def recall(p: Player, book: Book, source_id: int, count: int) -> list[Asked]:
    """``count`` paraphrased questions about the book's facts, each searched under every
    weights of ``SIGNALS`` (floor off), then as a turn searches (floor on)."""
    knowledge = p.rt.knowledge
    assert knowledge is not None
    facts = questions(book, count)
    found = answers(p, source_id, facts)
    asked = [Asked(f.key, f.kind, f.question, found[f.key]) for f in facts]
    for item in asked:
        for w in SIGNALS:
            with weighted(w):
                got = await knowledge.search(
                    p.uid, [source_id], item.question, "", TOP_K, p.models, floor=False
                )
            item.returned[w] = [h.passage_id for h in got.used]
        turn = await knowledge.search(p.uid, [source_id], item.question, "", TOP_K, p.models)
        item.floored = [h.passage_id for h in turn.used]
    return asked


# -- latency -----------------------------------------------------------------------------


@dataclass
class Latency:
    passages: int
    sources: int
    cold_ms: list[float]
    warm_ms: list[float]
    db_bytes: int
    tables: dict[str, int]  # bytes of pages by table or index (SQLite's dbstat), the library's
    payloads: dict[str, int]  # bytes of the rows themselves, by the same names


@dataclass
class Library:
    """The latency library as it grows, and what building it took."""

    books: list[Book] = field(default_factory=list)
    source_ids: list[int] = field(default_factory=list)
    passages: int = 0
    size_bytes: int = 0
    prepare_s: float = 0.0
    store_s: float = 0.0
    base_db_bytes: int = 0  # the database before any book


def db_size(p: Player) -> tuple[int, dict[str, int], dict[str, int]]:
    """The SQLite database's size (its pages, the write-ahead log's included), and the
    library's tables' and indexes' share of it: pages, then payloads (SQLite's ``dbstat``)."""
    with p.rt.engine.connect() as connection:
        pages = connection.exec_driver_sql("PRAGMA page_count").scalar_one()
        page = connection.exec_driver_sql("PRAGMA page_size").scalar_one()
        rows = connection.execute(
            text("SELECT name, SUM(pgsize), SUM(payload) FROM dbstat GROUP BY name")
        ).all()
    ours = [(str(n), int(b), int(x)) for n, b, x in rows if "library" in str(n)]
    return int(pages) * int(page), {n: b for n, b, _ in ours}, {n: x for n, _, x in ours}


def _random_vectors(p: Player, source_id: int, width: int, rng: np.random.Generator) -> None:
    model = embedding_model(p)
    with session_scope(p.rt.sessions) as session:
        ids = list(
            session.scalars(select(LibraryPassage.id).where(LibraryPassage.source_id == source_id))
        )
        vectors = rng.standard_normal((len(ids), width)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        session.execute(
            update(LibraryPassage),
            [
                {"id": pid, "vector": v.tobytes(), "vector_model": model}
                for pid, v in zip(ids, vectors, strict=True)
            ],
        )
        row = session.get(LibrarySource, source_id)
        assert row is not None
        row.embedded = len(ids)
        row.state = SourceState.READY
        row.revision += 1


async def grow(p: Player, library: Library, target: int, per_book_bytes: int, width: int) -> None:
    """Add books (prepared and stored by the product, random vectors) until the library
    holds at least ``target`` passages."""
    rng = np.random.default_rng(len(library.books))
    while library.passages < target:
        book = generate(9000 + len(library.books), per_book_bytes)
        source_id, prepared, prepare_s, store_s = _store_book(p, book)
        _random_vectors(p, source_id, width, rng)
        library.prepare_s += prepare_s
        library.store_s += store_s
        library.books.append(book)
        library.source_ids.append(source_id)
        library.passages += len(prepared.passages)
        library.size_bytes += len(book.data)


def latency_questions(books: list[Book], count: int, seed: int) -> list[str]:
    pool = [f.question for b in books for f in questions(b, count)]
    return random.Random(f"latency/{seed}").sample(pool, min(count, len(pool)))


async def _timed(p: Player, knowledge: KnowledgeSearch, ids: list[int], q: str) -> float:
    began = time.perf_counter()
    await knowledge.search(p.uid, ids, q, "", TOP_K, p.models)
    return (time.perf_counter() - began) * 1000


async def latency(p: Player, library: Library, queries: list[str], cold: int) -> Latency:
    """Cold: ``cold`` searches, each the first of a new ``KnowledgeSearch`` (its vector
    cache empty: it reads every vector of the sources). Warm: every query on one search
    whose cache is filled."""
    ids = list(library.source_ids)
    cold_ms = [await _timed(p, KnowledgeSearch(p.rt.sessions), ids, q) for q in queries[:cold]]
    warm = KnowledgeSearch(p.rt.sessions)
    await warm.search(p.uid, ids, queries[0], "", TOP_K, p.models)
    warm_ms = [await _timed(p, warm, ids, q) for q in queries]
    size, tables, payloads = db_size(p)
    return Latency(library.passages, len(ids), cold_ms, warm_ms, size, tables, payloads)


async def embed_ms(p: Player, queries: list[str]) -> list[float]:
    """The query embedding alone (the part of a search that is the model's)."""
    assert p.models.embedding is not None
    out = []
    for q in queries:
        began = time.perf_counter()
        await p.models.embedding.embed([q])
        out.append((time.perf_counter() - began) * 1000)
    return out
