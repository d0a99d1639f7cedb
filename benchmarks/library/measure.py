"""Measuring the knowledge library through the product's own code, on a real runtime.

Everything runs against a ``benchmarks.recall.play.Player``: a real ``Runtime`` over a
migrated SQLite file in a temporary directory, with the embedder of the run (the embedded
MiniLM, or the loopback double's hashed words in tests). Invariants:

- **The product's path.** A book is read and split by ``store.prepare``, written by
  ``store.store`` in one unit, its vectors made by the runtime's ``LibraryIndexer``
  (``step()`` called back to back, which is what its loop does while work is due; the
  loop itself is stopped so nothing else embeds meanwhile), and searched by
  ``KnowledgeSearch.search``. Nothing here scores a passage.
- **Baselines without copies.** Lexical-only and semantic-only rankings, and every other
  point of the weight grid, are the product's search with its two module weights set for
  the duration of a call (``weighted``) and put back after; searches run one at a time.
- **One answer.** A question's answer is the one passage holding its fact's sentence
  verbatim (the generator states each fact once); a book where a sentence is in no passage
  or in two stops the run.
- **Synthetic vectors are said to be.** The latency libraries' vectors are random unit
  vectors of the embedder's width written straight into ``library_passages.vector`` (with
  the source marked ready, as the indexer would leave it): embedding 50,000 passages on a
  small CPU takes longer than the rest of the run. Their text, terms and full-text index
  are the product's, and every query is embedded by the real embedder.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np
from benchmarks.library.book import Book, Fact, generate, questions
from benchmarks.recall.play import Player
from sqlalchemy import func, select, text, update

from talekeeper.core.tokens import BpeCounter
from talekeeper.services.library import search, store
from talekeeper.services.library.search import KnowledgeSearch
from talekeeper.services.library.store import SourceState
from talekeeper.storage.db import read_scope, session_scope
from talekeeper.storage.models import LibraryPassage, LibrarySource

Weights = tuple[float, float]  # (semantic, lexical)
IN_USE: Weights = (search.SEMANTIC_WEIGHT, search.LEXICAL_WEIGHT)
SEMANTIC_ONLY: Weights = (1.0, 0.0)
LEXICAL_ONLY: Weights = (0.0, 1.0)
GRID: tuple[Weights, ...] = tuple(
    sorted({(s / 10, round(1 - s / 10, 1)) for s in range(11)} | {IN_USE})
)
TOP_K = 3  # the product's default knowledge_top_k


def weights_name(w: Weights) -> str:
    return f"{w[0]:.1f}/{w[1]:.1f}"


@contextmanager
def weighted(w: Weights) -> Iterator[None]:
    """The product's search with its semantic and lexical weights set to ``w`` meanwhile."""
    saved = search.SEMANTIC_WEIGHT, search.LEXICAL_WEIGHT
    search.SEMANTIC_WEIGHT, search.LEXICAL_WEIGHT = w
    try:
        yield
    finally:
        search.SEMANTIC_WEIGHT, search.LEXICAL_WEIGHT = saved


async def stop_indexer(p: Player) -> None:
    """The background loop stops; the benchmark calls its ``step`` itself."""
    assert p.rt.indexer is not None
    await p.rt.indexer.stop()


def embedding_model(p: Player) -> str:
    assert p.models.embedding is not None, "the benchmark needs an embedder"
    return p.models.embedding.model


# -- import ------------------------------------------------------------------------------


@dataclass
class Imported:
    source_id: int
    filename: str
    size_bytes: int
    passages: int
    tokens: int
    prepare_s: float
    store_s: float
    index_s: float  # the timed part of the indexing
    indexed: int  # passages embedded in that time
    batches: int
    complete: bool  # the whole book was embedded within the time limit
    rest_s: float = 0.0  # the untimed remainder, when not


def _embedded(p: Player, source_id: int) -> tuple[int, str]:
    with read_scope(p.rt.sessions) as session:
        row = session.get(LibrarySource, source_id)
        assert row is not None
        return row.embedded, str(row.state)


@dataclass
class _Stored:
    source_id: int
    prepared: store.Prepared
    prepare_s: float  # read and split (``store.prepare``)
    store_s: float  # written with its index (``store.store``)
    stored_at: float  # ``time.perf_counter()`` when it was written


def _store_book(p: Player, book: Book) -> _Stored:
    """``book`` read, split and written by the product, each stage timed."""
    began = time.perf_counter()
    prepared = store.prepare(book.filename, book.data, BpeCounter())
    prepared_at = time.perf_counter()
    with session_scope(p.rt.sessions) as session:
        source_id = store.store(session, p.uid, prepared, embedding_model(p)).id
    stored_at = time.perf_counter()
    return _Stored(source_id, prepared, prepared_at - began, stored_at - prepared_at, stored_at)


async def import_book(p: Player, book: Book, limit_s: float, *, finish: bool = True) -> Imported:
    """Prepare, store and index ``book``; the indexing is timed for at most ``limit_s``.
    Past it, ``finish``: the rest is embedded untimed (the book is then searchable); else
    the indexing stops there (the source stays ``indexing``)."""
    data = book.data
    written = _store_book(p, book)
    source_id, prepared, stored_at = written.source_id, written.prepared, written.stored_at
    indexer = p.rt.indexer
    assert indexer is not None
    batches, timed_s, timed_n, complete = 0, 0.0, 0, True
    while await indexer.step():
        batches += 1
        if complete and time.perf_counter() - stored_at > limit_s:
            timed_s = time.perf_counter() - stored_at
            timed_n, _ = _embedded(p, source_id)
            complete = False
            if not finish:
                break
    done_at = time.perf_counter()
    embedded, state = _embedded(p, source_id)
    if complete:
        timed_s, timed_n = done_at - stored_at, embedded
    if (complete or finish) and (state != SourceState.READY or embedded != len(prepared.passages)):
        raise RuntimeError(f"{book.filename}: indexing ended {state} at {embedded} passages")
    return Imported(
        source_id=source_id,
        filename=book.filename,
        size_bytes=len(data),
        passages=len(prepared.passages),
        tokens=prepared.tokens,
        prepare_s=written.prepare_s,
        store_s=written.store_s,
        index_s=timed_s,
        indexed=timed_n,
        batches=batches,
        complete=complete,
        rest_s=done_at - stored_at - timed_s if finish and not complete else 0.0,
    )


# -- recall ------------------------------------------------------------------------------


@dataclass
class Asked:
    key: str  # the fact's key, or "absent.N"
    kind: str
    question: str
    answer: int | None  # the passage that answers; None: an absent question
    returned: dict[str, list[tuple[int, float]]] = field(default_factory=dict)  # by weights
    floored: list[int] = field(default_factory=list)  # the product's search, floor on


def answers(p: Player, source_id: int, facts: list[Fact]) -> dict[str, int]:
    """The one passage holding each fact's sentence."""
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


async def _ask(
    p: Player, knowledge: KnowledgeSearch, source_id: int, question: str, grid: tuple[Weights, ...]
) -> tuple[dict[str, list[tuple[int, float]]], list[int]]:
    returned: dict[str, list[tuple[int, float]]] = {}
    for w in grid:
        with weighted(w):
            got = await knowledge.search(
                p.uid, [source_id], question, "", TOP_K, p.models, floor=False
            )
        returned[weights_name(w)] = [(h.passage_id, h.final_score) for h in got.used]
    floored = await knowledge.search(p.uid, [source_id], question, "", TOP_K, p.models)
    return returned, [h.passage_id for h in floored.used]


async def recall(
    p: Player, book: Book, source_id: int, count: int, grid: tuple[Weights, ...] = GRID
) -> list[Asked]:
    """``count`` paraphrased questions about the book's facts and a tenth as many about
    entities it never names, each searched under every weights of ``grid``."""
    assert p.rt.knowledge is not None
    facts = questions(book, count)
    found = answers(p, source_id, facts)
    asked = [Asked(f.key, f.kind, f.question, found[f.key]) for f in facts]
    rng = random.Random(f"absent/{book.seed}")
    absent = rng.sample(book.absent, min(len(book.absent), max(1, count // 10)))
    asked += [Asked(f"absent.{i}", a.kind, a.question, None) for i, a in enumerate(absent)]
    for item in asked:
        item.returned, item.floored = await _ask(p, p.rt.knowledge, source_id, item.question, grid)
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
    """The latency libraries as they grow: books of about ``per_book`` passages."""

    books: list[Book] = field(default_factory=list)
    source_ids: list[int] = field(default_factory=list)
    passages: int = 0
    prepare_s: float = 0.0
    store_s: float = 0.0
    vectors_s: float = 0.0
    bytes: int = 0
    base_db_bytes: int = 0  # the database before any book


def db_size(p: Player) -> tuple[int, dict[str, int], dict[str, int]]:
    """The SQLite database's size (its pages, the write-ahead log's included), and the
    library's tables' and indexes' share of it (SQLite's ``dbstat``)."""
    with p.rt.engine.connect() as connection:
        pages = connection.exec_driver_sql("PRAGMA page_count").scalar_one()
        page = connection.exec_driver_sql("PRAGMA page_size").scalar_one()
        rows = connection.execute(
            text("SELECT name, SUM(pgsize), SUM(payload) FROM dbstat GROUP BY name")
        ).all()
    tables = {str(n): int(b) for n, b, _ in rows if "library" in str(n)}
    payloads = {str(n): int(b) for n, _, b in rows if "library" in str(n)}
    return int(pages) * int(page), tables, payloads


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
        done = session.scalar(
            select(func.count()).where(
                LibraryPassage.source_id == source_id, LibraryPassage.vector_model == model
            )
        )
        row.embedded = int(done or 0)
        row.state = SourceState.READY
        row.revision += 1


async def grow(p: Player, library: Library, target: int, per_book_bytes: int, width: int) -> None:
    """Add books (prepared and stored by the product, random vectors) until the library
    holds at least ``target`` passages."""
    rng = np.random.default_rng(len(library.books))
    while library.passages < target:
        book = generate(9000 + len(library.books), per_book_bytes)
        written = _store_book(p, book)
        _random_vectors(p, written.source_id, width, rng)
        library.vectors_s += time.perf_counter() - written.stored_at
        library.prepare_s += written.prepare_s
        library.store_s += written.store_s
        library.books.append(book)
        library.source_ids.append(written.source_id)
        library.passages += len(written.prepared.passages)
        library.bytes += len(book.data)


def latency_questions(books: list[Book], count: int, seed: int) -> list[str]:
    pool = [f.question for b in books for f in questions(b, count)]
    return random.Random(f"latency/{seed}").sample(pool, min(count, len(pool)))


async def time_search(p: Player, knowledge: KnowledgeSearch, ids: list[int], q: str) -> float:
    began = time.perf_counter()
    await knowledge.search(p.uid, ids, q, "", TOP_K, p.models)
    return (time.perf_counter() - began) * 1000


async def latency(p: Player, library: Library, queries: list[str], cold: int) -> Latency:
    """Cold: ``cold`` searches, each the first of a new ``KnowledgeSearch`` (its vector
    cache empty: it reads every vector of the sources). Warm: every query on one search
    whose cache is filled."""
    ids = list(library.source_ids)
    cold_ms = [await time_search(p, KnowledgeSearch(p.rt.sessions), ids, q) for q in queries[:cold]]
    warm = KnowledgeSearch(p.rt.sessions)
    await warm.search(p.uid, ids, queries[0], "", TOP_K, p.models)
    warm_ms = [await time_search(p, warm, ids, q) for q in queries]
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
