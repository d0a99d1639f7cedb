"""Signing in and out, and who a session cookie belongs to.

Invariants:

- The throttle is asked before anything else: the attempt is charged as a failure in a
  short writing unit of its own, and refunded once the password proved right
  (``throttle``). A refused sign-in checks no password. So ``authenticate`` takes the
  database (a session factory), never a caller's unit of work: the charge must be
  committed whatever the check finds, and a caller holding the write lock would wait on it.
- An unknown name, a name without a password and a wrong password fail alike
  (``WrongCredentials``) after the same work (a verification against a hash at the same
  cost), and count as a failure for the name from that address, the name and the address.
  Only the right password learns that an account is disabled.
- The session id is 256 random bits, returned once for the cookie; the table keeps its
  SHA-256. A session ends ``SESSION_DAYS`` after sign-in, at sign-out, when the account is
  disabled or its password changes, and never outlives its account.
- ``login`` is ``authenticate`` (the check reads in a read unit) then ``open_session`` in
  a short writing unit: the verification (~0.2 s) never holds the write lock.
  ``open_session`` refuses if the password changed in between.
- ``last_used_at`` is written at most once a minute, only by a unit of work that may
  write; a read-only one gets ``Principal.touch_due`` instead.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from argon2 import PasswordHasher
from sqlalchemy.orm import Session, sessionmaker

from talekeeper.core.clock import utcnow
from talekeeper.services.accounts.base import (
    MAX_PASSWORD_LENGTH,
    SECRET_MAX,
    SESSION_DAYS,
    Account,
    Principal,
    digest,
    user_scopes,
)
from talekeeper.services.accounts.errors import AccountDisabled, WrongCredentials
from talekeeper.services.accounts.passwords import (
    burn_verification,
    hash_password,
    needs_rehash,
    verify_password,
)
from talekeeper.services.accounts.throttle import LoginThrottle
from talekeeper.services.accounts.users import NAME, set_password
from talekeeper.storage.db import read_scope, session_scope
from talekeeper.storage.models import User
from talekeeper.storage.repositories.accounts import AccountRepository

TOUCH_EVERY = timedelta(minutes=1)
MAX_SESSIONS = 50  # signed-in browsers kept per account; signing in again drops the oldest


@dataclass(frozen=True)
class Verified:
    """A name and password that were checked, ready for ``open_session``."""

    account: Account
    password_hash: str = field(repr=False)  # what the password was checked against
    rehash: str | None = field(default=None, repr=False)  # at today's cost, when due


def _verified_user(
    session: Session, name: str, password: str, hasher: PasswordHasher | None
) -> User | None:
    """The account ``name`` if ``password`` is its password, else None, after the same work
    either way (a verification at the same cost)."""
    user = AccountRepository(session).user_named(name) if NAME.fullmatch(name) else None
    stored = None if user is None else user.password_hash
    if len(password) > MAX_PASSWORD_LENGTH:
        burn_verification(password[:MAX_PASSWORD_LENGTH], hasher=hasher)
        return None  # no such password was ever accepted, whoever the name is
    if user is None or stored is None:
        burn_verification(password, hasher=hasher)
        return None
    return user if verify_password(stored, password, hasher=hasher) else None


def authenticate(
    sessions: sessionmaker[Session],
    name: str,
    password: str,
    client: str,
    now: datetime | None = None,
    *,
    hasher: PasswordHasher | None = None,
    throttle: LoginThrottle | None = None,
) -> Verified:
    """Check ``name`` and ``password`` from ``client`` (the throttle first): the check reads
    in a read unit; the throttle writes its counts in short units of its own."""
    now = utcnow() if now is None else now
    throttle = LoginThrottle() if throttle is None else throttle
    charge = throttle.charge(sessions, name, client, now)
    with read_scope(sessions) as session:
        user = _verified_user(session, name, password, hasher)
    if user is None:
        raise WrongCredentials()  # the charge stands: this was a failure
    throttle.refund(sessions, charge, now)
    if user.disabled:
        raise AccountDisabled(user.name)
    stored = user.password_hash
    assert stored is not None
    rehash = hash_password(password, hasher=hasher) if needs_rehash(stored, hasher=hasher) else None
    return Verified(Account.of(user), stored, rehash)


def open_session(session: Session, verified: Verified, now: datetime | None = None) -> str:
    """A new session for a checked sign-in; the raw id, which only the cookie carries."""
    now = utcnow() if now is None else now
    repo = AccountRepository(session)
    user = repo.user(verified.account.id)
    if user is None or user.password_hash != verified.password_hash:
        raise WrongCredentials()  # the password changed (or the account went) meanwhile
    if user.disabled:
        raise AccountDisabled(user.name)
    if verified.rehash is not None:
        user.password_hash = verified.rehash
    raw = secrets.token_urlsafe(32)
    repo.delete_expired_sessions(user.id, now)
    repo.add_session(user.id, digest(raw), now, now + timedelta(days=SESSION_DAYS))
    repo.keep_newest_sessions(user.id, MAX_SESSIONS)
    return raw


def login(
    sessions: sessionmaker[Session],
    name: str,
    password: str,
    client: str,
    now: datetime | None = None,
    *,
    hasher: PasswordHasher | None = None,
    throttle: LoginThrottle | None = None,
) -> tuple[str, Account]:
    """Sign in: the raw session id for the cookie, and the account."""
    now = utcnow() if now is None else now
    verified = authenticate(sessions, name, password, client, now, hasher=hasher, throttle=throttle)
    with session_scope(sessions) as session:
        return open_session(session, verified, now), verified.account


def principal_for_session(
    session: Session, raw: str, now: datetime | None = None
) -> Principal | None:
    """Who the session id ``raw`` signs in, or None (unknown, expired, account disabled)."""
    if not raw or len(raw) > SECRET_MAX:
        return None
    now = utcnow() if now is None else now
    repo = AccountRepository(session)
    found = repo.session_by_hash(digest(raw))
    if found is None:
        return None
    row, user = found
    if row.expires_at <= now or user.disabled or user.password_hash is None:
        return None
    due = row.last_used_at < now - TOUCH_EVERY
    if due and repo.writable():
        repo.touch_session(row.id, now, now - TOUCH_EVERY)
        due = False
    return Principal(Account.of(user), user_scopes(user), row.id, None, touch_due=due)


def touch_session(session: Session, session_id: int, now: datetime | None = None) -> bool:
    """Mark a session used now, unless it was within the last minute; whether it wrote."""
    now = utcnow() if now is None else now
    return AccountRepository(session).touch_session(session_id, now, now - TOUCH_EVERY)


@dataclass(frozen=True)
class Renewed:
    """A password the account changed itself: the raw id of the fresh session for the
    browser that changed it, and how many API tokens were revoked."""

    session: str = field(repr=False)
    tokens_revoked: int


def renew_password(
    session: Session,
    name: str,
    password: str,
    now: datetime | None = None,
    *,
    revoke_tokens: bool = True,
    hasher: PasswordHasher | None = None,
) -> Renewed:
    """A new password for ``name`` (every browser of the account is signed out, and its API
    tokens revoked unless ``revoke_tokens`` is False) and a fresh session for the one that
    changed it. The caller checked the current password; the new one is not verified
    again, nor counted by the throttle."""
    done = set_password(session, name, password, revoke_tokens=revoke_tokens, hasher=hasher)
    user = AccountRepository(session).user(done.account.id)
    assert user is not None and user.password_hash is not None
    raw = open_session(session, Verified(done.account, user.password_hash), now)
    return Renewed(raw, done.tokens_revoked)


def logout(session: Session, raw: str) -> None:
    if raw and len(raw) <= SECRET_MAX:
        AccountRepository(session).delete_session(digest(raw))
