"""Players and what signs them in: users, browser sessions, API tokens, the sign-in
throttle's counts, and each user's settings.

Invariants:

- Every adventure and settings row belongs to a user; a local user (``LOCAL_USER``) exists
  from the first migration on, so a fresh install needs no login.
- Sign-in secrets are never stored as given: passwords as argon2id hashes, session ids and
  API tokens as the SHA-256 of the random value the client holds.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Integer, String, Text, false
from sqlalchemy.orm import Mapped, mapped_column

from talekeeper.core.clock import utcnow
from talekeeper.storage.models.base import ID, Base, UtcDateTime

LOCAL_USER = "local"  # the user every request acts as until login exists


class User(Base):
    """A player. The local user has no password; an account (accounts mode) has one."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    name: Mapped[str] = mapped_column(String(80), unique=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    password_hash: Mapped[str | None] = mapped_column(String(255), nullable=True)  # argon2id
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    disabled: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class AuthSession(Base):
    """A signed-in browser. The cookie carries a random id; only its SHA-256 is kept, so
    a copy of the database signs no one in."""

    __tablename__ = "auth_sessions"

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    user_id: Mapped[int] = mapped_column(ID, ForeignKey("users.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)  # sha256 hex of the id
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
    last_used_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class ApiToken(Base):
    """A named bearer token for scripts, limited to its scopes; only its SHA-256 is kept."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(ID, primary_key=True)
    user_id: Mapped[int] = mapped_column(ID, ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(80))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    scopes: Mapped[str] = mapped_column(String(64))  # space-separated scope names
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    last_used_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)


class SignInCount(Base):
    """Failed sign-ins that one key of the sign-in throttle counted (``services.accounts.
    throttle``), kept in the database so that every process serving it counts together.

    The key is (``kind``, ``account``, ``address``): an account name from one address, an
    account name from anywhere (``address`` empty) or one address at any name (``account``
    empty). ``quiet_at``: from then on the row counts nothing (its failures and locks have
    aged out) and may be deleted, unless ``known_until`` (the address signed in to the
    account lately) keeps it.
    """

    __tablename__ = "sign_in_counts"

    kind: Mapped[str] = mapped_column(String(8), primary_key=True)
    account: Mapped[str] = mapped_column(String(64), primary_key=True)
    address: Mapped[str] = mapped_column(String(64), primary_key=True)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    locks: Mapped[int] = mapped_column(Integer, default=0)
    locked_until: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    last_failure_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    quiet_at: Mapped[datetime] = mapped_column(UtcDateTime(), index=True)
    known_until: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)


class UserSetting(Base):
    """One per-user override; ``value`` is JSON text of the parsed value."""

    __tablename__ = "user_settings"

    user_id: Mapped[int] = mapped_column(
        ID, ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, onupdate=utcnow)
