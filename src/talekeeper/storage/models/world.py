"""The world as the story states it (docs/world.md): the named things of an adventure and
the changes its actions say happened to them.

Invariants:

- An event belongs to one action (``action_id``) and sits on a node (``branch_id``,
  ``depth``): its action's own node, or for a player's event the current branch at its
  head's depth (so an event the player adds on a fork, whose head is an action it
  inherited, is the fork's alone). It is on a path exactly when its node is and its
  action is active, so retry, undo, redo, delete and fork need no repair: a take, an
  undone action or another branch's node takes its events out of the path with it.
  Deleting an action or a branch deletes its events.
- An entity is one per (adventure, kind, ``key``), ``key`` being its normalised name
  (``services.world.names``): every event naming it, on any branch, points at one row.
  The story card of the same name is found when the world is read, never stored, so a
  card made, renamed or deleted later is followed at once.
- ``dismissed``: the player dismissed a derived event; it stays as evidence and never
  counts.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint, false
from sqlalchemy.orm import Mapped, mapped_column

from talekeeper.core.clock import utcnow
from talekeeper.storage.models.base import ID, Base, UtcDateTime

NAME_MAX = 120
VALUE_MAX = 300
ALIASES_MAX = 32  # other names one entity goes by


class WorldEntity(Base):
    """A named thing of one adventure. ``kind`` is a ``vocabulary.EntityKind``: ``person``,
    ``place``, ``item``, ``faction`` or ``quest``; ``aliases`` a JSON list of other names
    it goes by."""

    __tablename__ = "world_entities"
    __table_args__ = (UniqueConstraint("adventure_id", "kind", "key"),)

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), index=True
    )
    kind: Mapped[str] = mapped_column(String(8))
    name: Mapped[str] = mapped_column(String(NAME_MAX))
    key: Mapped[str] = mapped_column(String(NAME_MAX))
    aliases: Mapped[str] = mapped_column(Text, default="[]")
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class WorldEvent(Base):
    """One change an action says: ``kind`` (a ``vocabulary.EventKind``: ``moved``,
    ``arrived``, ``left``, ``took``, ``dropped``, ``gave``, ``equipped``, ``used_up``,
    ``status``, ``relation``, ``time``, ``quest``, ``learned``) with its roles (``subject``,
    ``object``, ``target``: entities; ``value``: text, for a quest a
    ``vocabulary.QuestState``: ``opened``, ``advanced``, ``done``, ``failed``; which roles
    each kind uses is in docs/world.md), the sentence it rests on (``evidence``) and who
    said it (``origin``, a ``vocabulary.EventOrigin``: ``rules``, ``model``, ``player``)."""

    __tablename__ = "world_events"
    __table_args__ = (Index("ix_world_events_path", "branch_id", "depth"),)

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), index=True
    )
    action_id: Mapped[int] = mapped_column(
        ID, ForeignKey("actions.id", ondelete="CASCADE"), index=True
    )
    branch_id: Mapped[int] = mapped_column(ID, ForeignKey("branches.id", ondelete="CASCADE"))
    depth: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(12))
    subject_id: Mapped[int | None] = mapped_column(
        ID, ForeignKey("world_entities.id", ondelete="CASCADE"), nullable=True
    )
    object_id: Mapped[int | None] = mapped_column(
        ID, ForeignKey("world_entities.id", ondelete="CASCADE"), nullable=True
    )
    target_id: Mapped[int | None] = mapped_column(
        ID, ForeignKey("world_entities.id", ondelete="CASCADE"), nullable=True
    )
    value: Mapped[str | None] = mapped_column(String(VALUE_MAX), nullable=True)
    origin: Mapped[str] = mapped_column(String(8))
    evidence: Mapped[str] = mapped_column(Text, default="")
    dismissed: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # A secret of the characters named (a JSON list of names; ``services.world.secrets``);
    # None: no secret, who knows it is who witnessed it.
    known_by: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class WorldReading(Base):
    """A reply the adventure's world model has read (``action_id``), with the model, how
    many facts it answered (``found``) and how many were kept (``kept``: each traced to a
    sentence of the reply or of the action it answers). One call a reply: an edit of either
    deletes the row, and the reply is read again."""

    __tablename__ = "world_readings"

    action_id: Mapped[int] = mapped_column(
        ID, ForeignKey("actions.id", ondelete="CASCADE"), primary_key=True
    )
    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), index=True
    )
    model: Mapped[str] = mapped_column(String(255))
    found: Mapped[int] = mapped_column(Integer)
    kept: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class WorldBacklog(Base):
    """An adventure whose story the rules never read for the world: one that existed, with
    no world, when its database first kept one (migration 0017 lists them). The start of
    background work reads each once, as an import of a file from before the world reads
    its story (``services.exchange.backlog``), and deletes its row in the unit that writes
    the world. A failed reading keeps the row, with how many readings failed
    (``failures``) and the last one's error and time; the next start reads it again. An
    adventure made later is read action by action as it is written and never has a row."""

    __tablename__ = "world_backlog"

    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), primary_key=True
    )
    failures: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    last_failure_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
