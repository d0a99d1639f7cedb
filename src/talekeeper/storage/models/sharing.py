"""Shared adventures (docs/sharing.md): who besides the host belongs to an adventure, and
the invites that let them in.

Invariants:

- The host is the adventure's owner (``adventures.user_id``) and has no member row; a
  member row is a ``vocabulary.MemberRole`` other than ``host``, one per account and
  adventure (unique), with the persona that account plays in it.
- An invite's code is never stored: only its SHA-256 (``code_hash``), so a copy of the
  database lets no one in. An invite admits while it is not revoked, not past
  ``expires_at`` and has ``uses_left``.
- Deleting an adventure or an account deletes its member and invite rows.
- The feed (``FeedEvent``) is written in the transaction of the change it tells of, so a
  committed change always has its event and ids only grow: a page that saw event N has
  seen every event of its adventure up to N.
- Turns of one adventure are taken one at a time, in the order they arrive: a turn
  that will write a reply holds a ``TurnTicket`` from before its action is written until
  its reply is (``services.story.queue``); ids only grow, so the lowest live ticket holds
  the turn.
- Presence (``Presence``) is one row per account and adventure, touched, never
  appended: who is here and who is writing is read from its times
  (``services.story.presence``).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from talekeeper.core.clock import utcnow
from talekeeper.storage.models.base import ID, Base, UtcDateTime


class AdventureMember(Base):
    """An account that joined an adventure, with its persona; ``role`` (a
    ``vocabulary.MemberRole``) is ``cohost``, ``player`` or ``viewer``, never ``host``."""

    __tablename__ = "adventure_members"
    __table_args__ = (UniqueConstraint("adventure_id", "user_id"),)

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[int] = mapped_column(ID, ForeignKey("users.id", ondelete="CASCADE"), index=True)
    role: Mapped[str] = mapped_column(String(8))  # a ``vocabulary.MemberRole``
    persona_name: Mapped[str] = mapped_column(String(120))
    persona_pronouns: Mapped[str] = mapped_column(String(40), default="")
    persona_description: Mapped[str] = mapped_column(Text, default="")
    joined_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class AdventureInvite(Base):
    """A code the host handed out: whoever holds it may join, as ``role``, until it
    expires, is used up or is revoked."""

    __tablename__ = "adventure_invites"

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), index=True
    )
    code_hash: Mapped[str] = mapped_column(String(64), unique=True)  # SHA-256, hex
    role: Mapped[str] = mapped_column(String(8))  # a ``vocabulary.MemberRole``
    uses_left: Mapped[int] = mapped_column(Integer)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class FeedEvent(Base):
    """One change of a shared adventure, for its members' pages, and what it touched
    (``data``, JSON). ``kind`` (a ``vocabulary.FeedKind``): a story change as the tree
    service names it (``append``, ``reply``, ``retry``, ``switch_take``, ``undo``,
    ``redo``, ``edit``, ``delete``, ``fork``) or ``members`` (one joined, changed role,
    left or was removed, or sharing ended)."""

    __tablename__ = "adventure_feed"

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), index=True
    )
    kind: Mapped[str] = mapped_column(String(12))
    data: Mapped[str] = mapped_column(Text, default="{}")
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class TurnTicket(Base):
    """A turn waiting for, or holding, its adventure's one turn at a time: asked by
    ``user_id`` (the member who acted; the host in single play). Its turn touches
    ``seen_at`` while it lives; a ticket not touched for ``queue.DEAD_S`` belongs to a
    process that died and is skipped and deleted. ``reply_so_far``: the reply as far as it
    is written, for the other members' pages."""

    __tablename__ = "turn_queue"

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[int] = mapped_column(ID, ForeignKey("users.id", ondelete="CASCADE"))
    seen_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    # The reply as far as it is written, while the turn holds a shared adventure's turn:
    # what the other members' pages show streaming (never read as the story).
    reply_so_far: Mapped[str] = mapped_column(Text, default="")


class Presence(Base):
    """When a member (or the host) last had the adventure's page open (``seen_at``: its
    feed stream touches it) and last typed in its action box (``writing_at``)."""

    __tablename__ = "adventure_presence"
    __table_args__ = (UniqueConstraint("adventure_id", "user_id"),)

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    adventure_id: Mapped[int] = mapped_column(
        ID, ForeignKey("adventures.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[int] = mapped_column(ID, ForeignKey("users.id", ondelete="CASCADE"))
    seen_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    writing_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
