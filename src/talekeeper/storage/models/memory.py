"""The memory system's rows: memories and their evidence keys, which replies used them, and
the versions of the Story Summary.

Invariants:

- Memories and summary versions are attached to a node (branch, depth, action): "on the
  current path" is the same lineage clause as for actions, so a fork inherits exactly the
  derived work of its path and nothing is copied.
- A memory's ``revision`` comes from its adventure's ``memory_revision``; no two memories
  of an adventure share one.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Index, Integer, LargeBinary, String, Text, false
from sqlalchemy.orm import Mapped, mapped_column

from talekeeper.core.clock import utcnow
from talekeeper.storage.models.base import ID, Base, UtcDateTime
from talekeeper.storage.vocabulary import MemoryOrigin, MemoryStatus


class Memory(Base):
    """A memory: 1-2 sentences about one block of actions, attached to the node the block
    ends on (``branch_id``, ``depth``, ``action_id``), covering ``source_start``..
    ``source_end`` (depths). A hand-written memory has no source range and is attached just
    before the branch's own depths (``fork_depth - 1``): it is on that branch's path and on
    every branch forked from it, and no undo can withdraw it.

    ``status`` (a ``vocabulary.MemoryStatus``): ``active`` (in the bank), ``forgotten``
    (pushed out by capacity: kept and listed, never retrieved), ``withdrawn`` (its source
    left the story: undo, delete, retry), ``deleted`` (the player deleted it: hidden, but its
    source stays covered so it is not written again). ``origin`` (a
    ``vocabulary.MemoryOrigin``): ``auto`` (the memory pass) or ``user`` (the player).
    ``authority`` (a ``vocabulary.Authority``): ``accepted_story`` or ``heuristic`` (its
    text hedges). ``revision`` grows with every change that a cache of the bank must see
    (see ``services.memory.bank``); it comes from the adventure's ``memory_revision`` and
    no two memories of an adventure share one.
    """

    __tablename__ = "memories"
    __table_args__ = (
        # Unique: a cache that reads the rows past the revision it holds misses none.
        Index("ix_memories_adventure_id_revision", "adventure_id", "revision", unique=True),
        Index("ix_memories_branch_id_depth", "branch_id", "depth"),
    )

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), index=True
    )
    branch_id: Mapped[int] = mapped_column(ID, ForeignKey("branches.id", ondelete="CASCADE"))
    depth: Mapped[int] = mapped_column(Integer)
    action_id: Mapped[int | None] = mapped_column(
        ID, ForeignKey("actions.id", ondelete="SET NULL"), nullable=True
    )
    source_start: Mapped[int | None] = mapped_column(Integer, nullable=True)
    source_end: Mapped[int | None] = mapped_column(Integer, nullable=True)
    text: Mapped[str] = mapped_column(Text)
    authority: Mapped[str] = mapped_column(String(16))  # a ``vocabulary.Authority``
    origin: Mapped[str] = mapped_column(String(8), default=MemoryOrigin.AUTO.value)
    writer: Mapped[str] = mapped_column(String(255), default="")  # model name or "extractive"
    status: Mapped[str] = mapped_column(String(12), default=MemoryStatus.ACTIVE.value)
    pinned: Mapped[bool] = mapped_column(Boolean, default=False)
    # A secret of the characters named (a JSON list of names; ``services.world.secrets``);
    # None: no secret, who knows it is who witnessed it.
    known_by: Mapped[str | None] = mapped_column(Text, nullable=True)
    stale: Mapped[bool] = mapped_column(Boolean, default=False)
    use_count: Mapped[int] = mapped_column(Integer, default=0)
    last_used_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    vector: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    vector_model: Mapped[str | None] = mapped_column(String(255), nullable=True)
    terms: Mapped[str] = mapped_column(Text, default="")  # the lexical terms, space-separated
    # Whether ``keys`` were read from the source as it stands (cleared whenever the text or
    # the source changes; the embedding pass reads them again).
    keyed: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    revision: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, onupdate=utcnow)


class MemoryKey(Base):
    """One evidence passage of a memory: a sentence (or a few short ones) of one action of
    its source block, kept as an extra retrieval key (``services.memory.evidence``). Keys
    are derived: they change only together with their memory's ``revision`` and are read
    again from the source whenever the memory's text or source changes."""

    __tablename__ = "memory_keys"
    __table_args__ = (Index("ix_memory_keys_memory_id_position", "memory_id", "position"),)

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    memory_id: Mapped[int] = mapped_column(ID, ForeignKey("memories.id", ondelete="CASCADE"))
    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), index=True
    )
    position: Mapped[int] = mapped_column(Integer)  # story order within the memory
    depth: Mapped[int] = mapped_column(Integer)  # the action the passage comes from
    text: Mapped[str] = mapped_column(Text)
    terms: Mapped[str] = mapped_column(Text, default="")
    names: Mapped[str] = mapped_column(Text, default="", server_default="")  # capitalised terms
    vector: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    vector_model: Mapped[str | None] = mapped_column(String(255), nullable=True)


class MemoryUse(Base):
    """Which reply used which memory (the Memory Bank shows the turns that used it)."""

    __tablename__ = "memory_uses"

    memory_id: Mapped[int] = mapped_column(
        ID, ForeignKey("memories.id", ondelete="CASCADE"), primary_key=True
    )
    action_id: Mapped[int] = mapped_column(
        ID, ForeignKey("actions.id", ondelete="CASCADE"), primary_key=True
    )


class SummaryVersion(Base):
    """One version of the Story Summary, anchored to a node (``branch_id``, ``depth``,
    ``action_id``).

    The version in force is the deepest (then newest) one whose anchor is an active
    action on the current path (or, with no anchor, whose branch is on the path).
    ``covers_to`` is the summary cursor: the depth its content covers up to. An automatic
    version is anchored where it covers up to; the player's edit is anchored at the head
    it was made at (so it stays on that path) and covers what its base covered.
    ``trigger`` (a ``vocabulary.SummaryTrigger``) is ``interval`` (the summary pass) or
    ``user`` (the player wrote it).
    """

    __tablename__ = "summary_versions"

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), index=True
    )
    branch_id: Mapped[int] = mapped_column(ID, ForeignKey("branches.id", ondelete="CASCADE"))
    depth: Mapped[int] = mapped_column(Integer)  # -1: before the first action
    action_id: Mapped[int | None] = mapped_column(
        ID, ForeignKey("actions.id", ondelete="SET NULL"), nullable=True
    )
    covers_to: Mapped[int] = mapped_column(Integer)  # the depth its content covers up to
    text: Mapped[str] = mapped_column(Text)
    trigger: Mapped[str] = mapped_column(String(12))  # a ``vocabulary.SummaryTrigger``
    writer: Mapped[str] = mapped_column(String(255), default="")
    base_id: Mapped[int | None] = mapped_column(ID, nullable=True)
    refreshes_id: Mapped[int | None] = mapped_column(ID, nullable=True)
    stale: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
