"""The values every part of accounts shares: scopes, limits, the account and principal views,
and the one digest a session id or token is kept by."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import StrEnum

from talekeeper.storage.models import User

MIN_PASSWORD_LENGTH = 10
MAX_PASSWORD_LENGTH = 1024  # argon2 takes any length; this only bounds a paste gone wrong
SESSION_DAYS = 30  # from sign-in; a session is never extended, the player signs in again
NAME_MAX = 40
SECRET_MAX = 256  # a session id or token longer than this was never issued here


class Scope(StrEnum):
    PLAY = "play"  # change stories: actions, edits, cards, settings
    READ = "read"  # read stories, export
    ADMIN = "admin"  # manage accounts


@dataclass(frozen=True)
class Account:
    id: int
    name: str
    is_admin: bool
    disabled: bool

    @classmethod
    def of(cls, user: User) -> Account:
        return cls(id=user.id, name=user.name, is_admin=user.is_admin, disabled=user.disabled)


@dataclass(frozen=True)
class Principal:
    """Who a request acts as, and what it may do.

    ``touch_due``: the session or token was last marked used over a minute ago and this
    unit of work could not write the mark (it only reads); ``touch_session`` or
    ``touch_token`` in a writing unit does it.
    """

    user: Account
    scopes: frozenset[Scope]
    session_id: int | None
    token_id: int | None
    touch_due: bool = field(default=False, compare=False)


def user_scopes(user: User | Account) -> frozenset[Scope]:
    """Everything this user may do: what a signed-in browser gets."""
    if user.is_admin:
        return frozenset(Scope)
    return frozenset({Scope.PLAY, Scope.READ})


def digest(raw: str) -> str:
    """The SHA-256 (hex) a session id or token is stored and found by."""
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()
