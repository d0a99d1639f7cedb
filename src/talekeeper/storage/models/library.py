"""A user's knowledge library: documents, their passages, and the adventures they are
attached to.

Invariants:

- A source belongs to a user, and is attached only to that user's adventures.
- A source's passages are written with it, in one transaction: a file is either whole or
  absent.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from talekeeper.core.clock import utcnow
from talekeeper.storage.models.base import ID, Base, UtcDateTime


class LibrarySource(Base):
    """A document of a user's knowledge library (``services.library``): read and split into
    ``LibraryPassage`` rows when uploaded, in one transaction (a file is either whole or
    absent); its passages' vectors are made afterwards by the library indexer.

    ``state`` is a ``vocabulary.SourceState``: ``indexing`` (passages without a
    vector of ``vector_model`` remain), ``ready``, ``failed`` (``error`` says why;
    retried at ``retry_at``), ``words_only`` (no embedding model: searched by words).
    ``embedded`` counts the passages that have a vector of ``vector_model`` (the progress);
    ``revision`` grows with every write of vectors, so a cache of them knows it is stale.
    """

    __tablename__ = "library_sources"

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    user_id: Mapped[int] = mapped_column(ID, ForeignKey("users.id", ondelete="CASCADE"), index=True)
    title: Mapped[str] = mapped_column(String(300))
    filename: Mapped[str] = mapped_column(String(255))
    kind: Mapped[str] = mapped_column(String(8))
    size_bytes: Mapped[int] = mapped_column(Integer)
    characters: Mapped[int] = mapped_column(Integer)
    passage_count: Mapped[int] = mapped_column(Integer)
    token_count: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(12))
    vector_model: Mapped[str | None] = mapped_column(String(255), nullable=True)
    embedded: Mapped[int] = mapped_column(Integer, default=0)
    revision: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    failures: Mapped[int] = mapped_column(Integer, default=0)  # in a row
    retry_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, onupdate=utcnow)


class LibraryPassage(Base):
    """One passage of a source, in reading order (``position`` from 0), with where it came
    from (``heading_path``: a JSON list of headings; ``page`` for a PDF). ``terms``: its
    lexical terms (``services.memory.terms``), space-separated: what the full-text index
    holds, so the library and the memories agree on what a word is."""

    __tablename__ = "library_passages"
    __table_args__ = (
        Index("ix_library_passages_source_id_position", "source_id", "position", unique=True),
    )

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    source_id: Mapped[int] = mapped_column(ID, ForeignKey("library_sources.id", ondelete="CASCADE"))
    position: Mapped[int] = mapped_column(Integer)
    heading_path: Mapped[str] = mapped_column(Text, default="[]")
    page: Mapped[int | None] = mapped_column(Integer, nullable=True)
    text: Mapped[str] = mapped_column(Text)
    tokens: Mapped[int] = mapped_column(Integer)
    terms: Mapped[str] = mapped_column(Text, default="")
    vector: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    vector_model: Mapped[str | None] = mapped_column(String(255), nullable=True)


class AdventureKnowledge(Base):
    """A library source attached to an adventure (many to many); both belong to one user."""

    __tablename__ = "adventure_knowledge"

    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), primary_key=True
    )
    source_id: Mapped[int] = mapped_column(
        ID, ForeignKey("library_sources.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    attached_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
