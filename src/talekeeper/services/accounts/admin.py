"""What an administrator does to accounts: usage figures, sessions, tokens, the admin flag,
a new password.

Invariants:

- Nothing here reads or returns what a player wrote or was told: usage is counts and sums
  (adventures, turns, AI calls, tokens), never a title, an action, a memory or a call's
  contents. An administrator manages accounts, not stories.
- ``usage`` is one query whatever the number of accounts: every figure comes from a
  grouped subquery joined to the accounts, never a query per account.
- A server always keeps an administrator who can sign in: the acting account (``by``)
  may not disable itself nor take its own admin flag away (``OwnAccount``), so the one
  making the change is still an enabled administrator afterwards. ``by`` is None only for
  the server's operator (the command line), who can always add an administrator.
- A new password is hashed before the first statement (``set_password``), so a writing
  unit of work never holds the write lock across the hash; every browser of the account
  is signed out, and its API tokens are revoked unless the administrator keeps them (a
  reset usually means the password was lost or taken, and so may the tokens be). An
  administrator's own password is changed on the account page, which asks for the
  current one and keeps that browser signed in.
- Like the rest of accounts: the caller's unit of work, never a commit; timestamps
  default to now and may be given.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from argon2 import PasswordHasher
from sqlalchemy.orm import Session

from talekeeper.core.clock import utcnow
from talekeeper.services.accounts.base import Account
from talekeeper.services.accounts.errors import AccountError, UnknownUser
from talekeeper.services.accounts.tokens import TokenInfo, list_tokens
from talekeeper.services.accounts.users import (
    PasswordSet,
    account_named,
    set_disabled,
    set_password,
)
from talekeeper.services.common.rendering import PLAYER_TYPES
from talekeeper.storage.repositories.accounts import AccountRepository, UsageFigures


class OwnAccount(AccountError):
    """A change an administrator may not make to their own account."""

    status = 409
    code = "own_account"


@dataclass(frozen=True)
class UserUsage:
    """One account and what it used (``figures``). ``turns``: the player's actions (do,
    say, story) in every state, since an undone or retried turn was played all the same;
    ``sessions``: signed-in browsers not yet expired; ``last_seen``: the latest use of any
    of its sessions, None when it never signed in (or every session was revoked)."""

    id: int
    name: str
    is_admin: bool
    disabled: bool
    created_at: datetime
    figures: UsageFigures


@dataclass(frozen=True)
class SessionInfo:
    """A signed-in browser, as much as an administrator sees of it (never its secret)."""

    id: int
    created_at: datetime
    expires_at: datetime
    last_used_at: datetime


def usage(
    session: Session, now: datetime | None = None, *, user_id: int | None = None
) -> list[UserUsage]:
    """Every account (or only ``user_id``) with its usage figures, by name."""
    now = utcnow() if now is None else now
    rows = AccountRepository(session).usage(now, PLAYER_TYPES, user_id=user_id)
    return [
        UserUsage(user.id, user.name, user.is_admin, user.disabled, user.created_at, figures)
        for user, figures in rows
    ]


def account_by_id(session: Session, user_id: int) -> Account:
    """The account with id ``user_id``; ``UnknownUser`` when there is none (the
    passwordless local user is not an account)."""
    user = AccountRepository(session).user(user_id)
    if user is None or user.password_hash is None:
        raise UnknownUser(f"There is no account with id {user_id}: reload the list of users.")
    return Account.of(user)


def sessions_of(session: Session, user_id: int, now: datetime | None = None) -> list[SessionInfo]:
    """The account's signed-in browsers that have not expired, most recently used first."""
    now = utcnow() if now is None else now
    account_by_id(session, user_id)
    return [
        SessionInfo(row.id, row.created_at, row.expires_at, row.last_used_at)
        for row in AccountRepository(session).live_sessions(user_id, now)
    ]


def revoke_sessions(session: Session, user_id: int) -> int:
    """Sign the account out of every browser; how many sessions ended (expired ones
    included, which were signed out already)."""
    account_by_id(session, user_id)
    return AccountRepository(session).delete_sessions(user_id)


def tokens_of(session: Session, user_id: int) -> list[TokenInfo]:
    account_by_id(session, user_id)
    return list_tokens(session, user_id)


def revoke_any_token(session: Session, token_id: int) -> bool:
    """Delete the token whoever it belongs to; False when there is no such token."""
    repo = AccountRepository(session)
    owner = repo.token_owner(token_id)
    if owner is None:
        return False
    return repo.delete_token(owner, token_id)


def _same(by: Account | None, name: str) -> bool:
    return by is not None and by.name.lower() == name.lower()


def reset_password(
    session: Session,
    name: str,
    new_password: str,
    *,
    by: Account | None = None,
    revoke_tokens: bool = True,
    hasher: PasswordHasher | None = None,
) -> PasswordSet:
    """A new password chosen by an administrator; every browser of the account is signed
    out, and its API tokens are revoked unless ``revoke_tokens`` is False."""
    if _same(by, name):  # no statement yet: the hash below must come first
        raise OwnAccount(
            "Change your own password on the account page: it asks for the current one "
            "and keeps this browser signed in."
        )
    return set_password(session, name, new_password, revoke_tokens=revoke_tokens, hasher=hasher)


def set_admin(session: Session, name: str, admin: bool, *, by: Account | None = None) -> Account:
    """Make the account an administrator, or an ordinary player again. Its tokens lose
    the admin scope while it is not one (``tokens``)."""
    user = account_named(session, name)
    if not admin and _same(by, user.name):
        raise OwnAccount(
            "You cannot remove your own administrator flag, so the server always keeps an "
            "administrator who can sign in: another administrator can remove it."
        )
    user.is_admin = admin
    session.flush()
    return Account.of(user)


def set_user_disabled(
    session: Session, name: str, disabled: bool, *, by: Account | None = None
) -> Account:
    """Disable an account (its browsers are signed out; its tokens stop working while it
    stays disabled) or enable it again; the acting account may not disable itself."""
    if disabled and _same(by, name):
        raise OwnAccount(
            "You cannot disable your own account, so the server always keeps an administrator "
            "who can sign in: another administrator can, or 'talekeeper users disable' on the "
            "server."
        )
    return set_disabled(session, name, disabled)
