"""API tokens: named bearer secrets for scripts, each limited to its scopes.

Invariants:

- A token is ``tk_`` and 256 random bits, shown once when it is made; the table keeps its
  SHA-256 and nothing here ever returns the hash.
- A token acts with its own scopes, less any its account may no longer have (``admin``
  once the account is no longer an administrator); a token left with none, an expired
  one, and one whose account is disabled sign no one in.
- A token is revoked only by its own account: another account's token id is answered as
  if it did not exist (an administrator's revocation is ``admin``'s). A new password
  revokes every token of the account unless the one setting it keeps them (``users``).
- Expiry: ``create_token`` takes the days a token lasts, None for never. The API and the
  command line ask for ``DEFAULT_TOKEN_DAYS`` when the request names no expiry, so a
  token never expires only when someone asked for that.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from talekeeper.core.clock import utcnow
from talekeeper.core.errors import Conflict, InvalidInput
from talekeeper.services.accounts.base import (
    SECRET_MAX,
    Account,
    Principal,
    Scope,
    digest,
    user_scopes,
)
from talekeeper.services.accounts.errors import UnknownUser
from talekeeper.services.accounts.signin import TOUCH_EVERY
from talekeeper.services.common.limits import text_field
from talekeeper.storage.models import ApiToken
from talekeeper.storage.repositories.accounts import AccountRepository

TOKEN_PREFIX = "tk_"
TOKEN_NAME_MAX = 80
MAX_TOKENS = 50  # per account
MAX_TOKEN_DAYS = 3650
DEFAULT_TOKEN_DAYS = 90  # what the API and the command line ask for when none is named


@dataclass(frozen=True)
class TokenInfo:
    id: int
    name: str
    scopes: frozenset[Scope]
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None

    @classmethod
    def of(cls, row: ApiToken) -> TokenInfo:
        return cls(
            id=row.id,
            name=row.name,
            scopes=_scopes_of(row.scopes),
            created_at=row.created_at,
            expires_at=row.expires_at,
            last_used_at=row.last_used_at,
        )


def _scopes_of(stored: str) -> frozenset[Scope]:
    known = {scope.value for scope in Scope}
    return frozenset(Scope(word) for word in stored.split() if word in known)


def _chosen_scopes(scopes: Iterable[Scope | str], admin: bool) -> frozenset[Scope]:
    chosen = set()
    for scope in scopes:
        if scope not in {s.value for s in Scope}:
            raise InvalidInput(
                f"{str(scope)[:40]!r} is not a scope: the scopes are "
                + ", ".join(s.value for s in Scope)
                + "."
            )
        chosen.add(Scope(scope))
    if not chosen:
        raise InvalidInput("Give a token at least one scope (play, read or admin).")
    if Scope.ADMIN in chosen and not admin:
        raise InvalidInput("Only an administrator's token can have the 'admin' scope.")
    return frozenset(chosen)


def _expiry(expires_days: int | None, now: datetime) -> datetime | None:
    if expires_days is None:
        return None
    if isinstance(expires_days, bool) or not isinstance(expires_days, int):
        raise InvalidInput("'expires_days' must be a whole number of days, or null for never.")
    if not 1 <= expires_days <= MAX_TOKEN_DAYS:
        raise InvalidInput(
            f"'expires_days' must be from 1 to {MAX_TOKEN_DAYS:,}, or null for never."
        )
    return now + timedelta(days=expires_days)


def create_token(
    session: Session,
    user_id: int,
    name: str,
    scopes: set[Scope],
    expires_days: int | None,
    now: datetime | None = None,
) -> tuple[str, TokenInfo]:
    """A new token: the raw token (shown once, never again) and what is kept of it."""
    now = utcnow() if now is None else now
    label = text_field(name, "name", TOKEN_NAME_MAX, required=True, hint="")
    expires_at = _expiry(expires_days, now)
    repo = AccountRepository(session)
    user = repo.user(user_id)
    if user is None or user.password_hash is None:
        raise UnknownUser("That account no longer exists: sign in again.")
    chosen = _chosen_scopes(scopes, user.is_admin)
    if repo.count_tokens(user_id) >= MAX_TOKENS:
        raise Conflict(
            f"This account has {MAX_TOKENS} tokens, the most it can have: revoke one it no "
            "longer needs first.",
            code="limit_reached",
        )
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    stored = " ".join(sorted(scope.value for scope in chosen))
    row = repo.add_token(user_id, label, digest(raw), stored, now, expires_at)
    return raw, TokenInfo.of(row)


def list_tokens(session: Session, user_id: int) -> list[TokenInfo]:
    return [TokenInfo.of(row) for row in AccountRepository(session).tokens(user_id)]


def revoke_token(session: Session, user_id: int, token_id: int) -> bool:
    """Delete the token; False when the account has no token with that id."""
    return AccountRepository(session).delete_token(user_id, token_id)


def principal_for_token(
    session: Session, raw: str, now: datetime | None = None
) -> Principal | None:
    """Who the bearer token ``raw`` acts as, with what scopes; None when it acts as no one."""
    if not raw.startswith(TOKEN_PREFIX) or len(raw) > SECRET_MAX:
        return None
    now = utcnow() if now is None else now
    repo = AccountRepository(session)
    found = repo.token_by_hash(digest(raw))
    if found is None:
        return None
    row, user = found
    if row.expires_at is not None and row.expires_at <= now:
        return None
    if user.disabled or user.password_hash is None:
        return None
    scopes = _scopes_of(row.scopes) & user_scopes(user)
    if not scopes:
        return None
    due = row.last_used_at is None or row.last_used_at < now - TOUCH_EVERY
    if due and repo.writable():
        repo.touch_token(row.id, now, now - TOUCH_EVERY)
        due = False
    return Principal(Account.of(user), scopes, None, row.id, touch_due=due)


def touch_token(session: Session, token_id: int, now: datetime | None = None) -> bool:
    """Mark a token used now, unless it was within the last minute; whether it wrote."""
    now = utcnow() if now is None else now
    return AccountRepository(session).touch_token(token_id, now, now - TOUCH_EVERY)
