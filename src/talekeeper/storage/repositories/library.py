"""The knowledge library: sources with their passages, full-text rows and attachments
(``LibraryRepository``), and the indexer's work on them (``IndexingRepository``). Never
commits (the caller's unit of work does).

Invariants:

- A source's passages and their full-text rows are written together (``add``,
  ``index``) and removed together (``delete``); the dialect-specific SQL of the index is
  ``storage.fulltext``'s, called from here only.
- Passages come back in reading order wherever order matters (``next_batch``); sources
  and attachments in id order.
- A claim names its owner (an indexer's token). Claiming is one conditional UPDATE
  (``claim``), so of two indexers racing for a source, in one process or several sharing
  the database, exactly one wins; a claim is free again only when released or when it
  was taken before the staleness cutoff (its process died). ``due`` only proposes: it
  runs in a read unit and takes no lock, and only ``claim``'s rowcount decides.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import delete, func, insert, or_, select, update
from sqlalchemy.orm import Session

from talekeeper.storage import fulltext
from talekeeper.storage.models import AdventureKnowledge, LibraryPassage, LibrarySource
from talekeeper.storage.vocabulary import SourceState


class LibrarySize(NamedTuple):
    """What a user's library holds."""

    sources: int
    passages: int


class NewPassage(NamedTuple):
    """A passage to store (``heading_path``: the JSON list of its headings)."""

    position: int
    heading_path: str
    page: int | None
    text: str
    tokens: int
    terms: str


class PassageText(NamedTuple):
    id: int
    text: str


class PassageTerms(NamedTuple):
    id: int
    terms: str


class PassageVector(NamedTuple):
    id: int
    vector: bytes | None


class SourceModel(NamedTuple):
    """What the model sync compares of a source."""

    user_id: int
    vector_model: str | None
    state: str


class WantingSource(NamedTuple):
    id: int
    retry_at: datetime | None  # a failed source's next try


class LibraryRepository:
    """A user's sources, their passages and full-text rows, and their attachments."""

    def __init__(self, session: Session) -> None:
        self.session = session

    # -- sources -------------------------------------------------------------------------

    def size(self, user_id: int) -> LibrarySize:
        row = self.session.execute(
            select(func.count(), func.coalesce(func.sum(LibrarySource.passage_count), 0)).where(
                LibrarySource.user_id == user_id
            )
        ).one()
        return LibrarySize(int(row[0]), int(row[1]))

    def get(self, source_id: int) -> LibrarySource | None:
        return self.session.get(LibrarySource, source_id)

    def sources(self, user_id: int, among: Collection[int] | None = None) -> list[LibrarySource]:
        """The user's sources (only those of ``among`` when given), in id order."""
        query = select(LibrarySource).where(LibrarySource.user_id == user_id)
        if among is not None:
            query = query.where(LibrarySource.id.in_(among))
        return list(self.session.scalars(query.order_by(LibrarySource.id)))

    def add(self, source: LibrarySource, passages: Sequence[NewPassage]) -> None:
        """Write a new source, its passages (one bulk insert) and their full-text rows."""
        self.session.add(source)
        self.session.flush()
        self.session.execute(
            insert(LibraryPassage),
            [{"source_id": source.id, **p._asdict()} for p in passages],
        )
        self.index(source.id)

    def delete(self, source: LibrarySource) -> None:
        """Delete a source with its full-text rows, passages and attachments."""
        fulltext.remove_source(self.session, source.id)
        self.session.execute(delete(LibraryPassage).where(LibraryPassage.source_id == source.id))
        self.session.execute(
            delete(AdventureKnowledge).where(AdventureKnowledge.source_id == source.id)
        )
        self.session.delete(source)

    # -- passages and the full-text index ------------------------------------------------

    def passage_texts(self, source_id: int) -> list[PassageText]:
        rows = self.session.execute(
            select(LibraryPassage.id, LibraryPassage.text).where(
                LibraryPassage.source_id == source_id
            )
        ).all()
        return [PassageText(int(i), str(t)) for i, t in rows]

    def replace_terms(self, rows: Sequence[PassageTerms]) -> None:
        """New terms for these passages, their vectors dropped (one bulk UPDATE by id)."""
        if rows:
            self.session.execute(
                update(LibraryPassage),
                [
                    {"id": pid, "terms": terms, "vector": None, "vector_model": None}
                    for pid, terms in rows
                ],
            )

    def unindex(self, source_id: int) -> None:
        """Drop a source's full-text rows (before its passages or their terms change)."""
        fulltext.remove_source(self.session, source_id)

    def index(self, source_id: int) -> None:
        """Write the full-text rows of a source's passages from their ``terms``."""
        rows = self.session.execute(
            select(LibraryPassage.id, LibraryPassage.terms).where(
                LibraryPassage.source_id == source_id
            )
        ).all()
        fulltext.add(self.session, [(pid, source_id, t) for pid, t in rows])

    def holding(self, terms: Sequence[str], source_ids: Sequence[int]) -> list[list[int]]:
        """For each term, the ids of the passages of ``source_ids`` that hold it."""
        return fulltext.holding(self.session, terms, source_ids)

    def vectors(self, source_id: int, model: str) -> list[PassageVector]:
        """The source's passages that have a vector of ``model``, with it."""
        rows = self.session.execute(
            select(LibraryPassage.id, LibraryPassage.vector).where(
                LibraryPassage.source_id == source_id, LibraryPassage.vector_model == model
            )
        ).all()
        return [PassageVector(r[0], r[1]) for r in rows]

    def passages(self, passage_ids: Collection[int]) -> list[LibraryPassage]:
        return list(
            self.session.scalars(
                select(LibraryPassage).where(LibraryPassage.id.in_(passage_ids))
            ).all()
        )

    # -- attachments ---------------------------------------------------------------------

    def attachment_counts(self, source_ids: Collection[int]) -> dict[int, int]:
        """How many adventures each source is attached to (those attached to none: absent)."""
        if not source_ids:
            return {}
        rows = self.session.execute(
            select(AdventureKnowledge.source_id, func.count())
            .where(AdventureKnowledge.source_id.in_(source_ids))
            .group_by(AdventureKnowledge.source_id)
        ).all()
        return {int(s): int(n) for s, n in rows}

    def attached(self, adventure_id: int) -> list[LibrarySource]:
        return list(
            self.session.scalars(
                select(LibrarySource)
                .join(AdventureKnowledge, AdventureKnowledge.source_id == LibrarySource.id)
                .where(AdventureKnowledge.adventure_id == adventure_id)
                .order_by(LibrarySource.id)
            )
        )

    def attached_ids(self, adventure_id: int) -> list[int]:
        return list(
            self.session.scalars(
                select(AdventureKnowledge.source_id)
                .where(AdventureKnowledge.adventure_id == adventure_id)
                .order_by(AdventureKnowledge.source_id)
            )
        )

    def detach(self, adventure_id: int, source_ids: Collection[int]) -> None:
        self.session.execute(
            delete(AdventureKnowledge).where(
                AdventureKnowledge.adventure_id == adventure_id,
                AdventureKnowledge.source_id.in_(source_ids),
            )
        )

    def attach(self, adventure_id: int, source_ids: Sequence[int]) -> None:
        """Attach these sources (none attached already), flushed."""
        self.session.add_all(
            AdventureKnowledge(adventure_id=adventure_id, source_id=s) for s in source_ids
        )
        self.session.flush()


class IndexingRepository:
    """The library indexer's work: sources that want vectors, batches of passages, vectors."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def get(self, source_id: int) -> LibrarySource | None:
        return self.session.get(LibrarySource, source_id)

    def source_models(self) -> list[SourceModel]:
        """Every source's owner, vector model and state (what the model sync compares)."""
        rows = self.session.execute(
            select(LibrarySource.user_id, LibrarySource.vector_model, LibrarySource.state)
        ).all()
        return [SourceModel(int(u), v, s) for u, v, s in rows]

    def retry_failed(self, source_ids: Collection[int], at: datetime) -> list[int]:
        """Failed sources among ``source_ids`` are retried from ``at`` (others untouched);
        returns their ids."""
        failed = list(
            self.session.scalars(
                select(LibrarySource.id).where(
                    LibrarySource.id.in_(source_ids), LibrarySource.state == SourceState.FAILED
                )
            )
        )
        if failed:
            self.session.execute(
                update(LibrarySource)
                .where(LibrarySource.id.in_(failed))
                .values(retry_at=at)
                .execution_options(synchronize_session=False)
            )
        return [int(i) for i in failed]

    def wanting(self, user_id: int | None = None) -> list[WantingSource]:
        """The sources (of ``user_id``, or everyone's) that want vectors: indexing, or failed
        and waiting for their retry (``retry_at``)."""
        query = select(LibrarySource.id, LibrarySource.retry_at).where(
            or_(
                LibrarySource.state == SourceState.INDEXING,
                LibrarySource.state == SourceState.FAILED,
            ),
            LibrarySource.vector_model.is_not(None),
        )
        if user_id is not None:
            query = query.where(LibrarySource.user_id == user_id)
        return [WantingSource(int(i), at) for i, at in self.session.execute(query).all()]

    def next_batch(self, source_id: int, model: str, limit: int) -> list[PassageText]:
        """The first ``limit`` passages, in reading order, without a vector of ``model``."""
        rows = self.session.execute(
            select(LibraryPassage.id, LibraryPassage.text)
            .where(
                LibraryPassage.source_id == source_id,
                or_(
                    LibraryPassage.vector_model.is_(None),
                    LibraryPassage.vector_model != model,
                ),
            )
            .order_by(LibraryPassage.position)
            .limit(limit)
        ).all()
        return [PassageText(int(i), str(t)) for i, t in rows]

    def write_vectors(self, model: str, vectors: Sequence[tuple[int, bytes]]) -> None:
        """Each passage's vector of ``model`` (one bulk UPDATE by id)."""
        self.session.execute(
            update(LibraryPassage),
            [{"id": pid, "vector": v, "vector_model": model} for pid, v in vectors],
        )

    def embedded(self, source_id: int, model: str) -> int:
        """How many of the source's passages have a vector of ``model``."""
        done = self.session.scalar(
            select(func.count()).where(
                LibraryPassage.source_id == source_id, LibraryPassage.vector_model == model
            )
        )
        return int(done or 0)
