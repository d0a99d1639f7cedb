"""Accounts: creating them (the first one takes the local user over), listing, disabling,
and new passwords. Hashing happens before the first statement of the caller's unit of
work, so a writing unit never holds the database's write lock across it. A new password
signs every browser of the account out and, unless the caller keeps them, revokes its API
tokens in the same unit of work: whoever the password was taken from may have made some."""

from __future__ import annotations

import re
from dataclasses import dataclass

from argon2 import PasswordHasher
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from talekeeper.services.accounts.base import (
    MAX_PASSWORD_LENGTH,
    MIN_PASSWORD_LENGTH,
    NAME_MAX,
    Account,
)
from talekeeper.services.accounts.errors import BadName, NameTaken, UnknownUser, WeakPassword
from talekeeper.services.accounts.passwords import hash_password
from talekeeper.storage.models import LOCAL_USER, User
from talekeeper.storage.repositories.accounts import AccountRepository

# ASCII only: two names that look alike ("mara" with a Cyrillic "а") must not be two accounts.
NAME = re.compile(rf"[A-Za-z0-9_.\-]{{1,{NAME_MAX}}}")


def check_name(name: str) -> str:
    """``name`` if an account may have it; ``BadName`` says why not."""
    if not NAME.fullmatch(name):
        raise BadName(
            f"{name[:60]!r} is not a usable account name: use 1 to {NAME_MAX} letters (a-z, "
            "A-Z), digits, '_', '.' or '-'."
        )
    if name.lower() == LOCAL_USER:
        raise BadName(
            f"{LOCAL_USER!r} is the name of the passwordless user of local mode: choose "
            "another name."
        )
    return name


def check_password(password: str) -> str:
    if len(password) < MIN_PASSWORD_LENGTH:
        raise WeakPassword(
            f"The password has {len(password)} characters: use at least {MIN_PASSWORD_LENGTH} "
            "(a few unrelated words make a strong one that is easy to type)."
        )
    if len(password) > MAX_PASSWORD_LENGTH:
        raise WeakPassword(
            f"The password has {len(password):,} characters: use at most {MAX_PASSWORD_LENGTH:,}."
        )
    return password


def _local_to_take_over(repo: AccountRepository) -> User | None:
    """The local user, while it has no password and no administrator exists yet."""
    users = repo.all_users()
    if any(u.is_admin for u in users):
        return None
    local = [u for u in users if u.name == LOCAL_USER and u.password_hash is None]
    return local[0] if local else None


def first_account_takes_over(session: Session) -> bool:
    """Whether the next administrator created takes the local user's row (and everything it
    has). A player never does: the local stories and saved settings (an endpoint, its key)
    are the operator's."""
    return _local_to_take_over(AccountRepository(session)) is not None


def check_name_free(session: Session, name: str) -> None:
    """``NameTaken`` unless an account could be created as ``name`` now."""
    if AccountRepository(session).user_named(name) is not None:  # "local" is no account name
        raise _taken(name)


def create_user(
    session: Session,
    name: str,
    password: str,
    *,
    admin: bool = False,
    hasher: PasswordHasher | None = None,
) -> Account:
    check_name(name)
    hashed = hash_password(check_password(password), hasher=hasher)
    repo = AccountRepository(session)
    check_name_free(session, name)
    user = _local_to_take_over(repo) if admin else None
    if user is None:
        try:
            user = repo.add_user(name, hashed, admin=admin)
        except IntegrityError:  # another unit of work added the name meanwhile
            raise _taken(name) from None
    else:
        user.name, user.password_hash, user.is_admin, user.disabled = name, hashed, admin, False
        session.flush()
    return Account.of(user)


def _taken(name: str) -> NameTaken:
    return NameTaken(
        f"There is already an account named {name!r} (names ignore case): choose another name."
    )


def account_named(session: Session, name: str) -> User:
    """The account (a user with a password) called ``name``, ignoring case."""
    user = AccountRepository(session).user_named(name)
    if user is None or user.password_hash is None:
        raise UnknownUser(
            f"There is no account named {name[:60]!r}: 'talekeeper users list' lists them."
        )
    return user


def list_users(session: Session) -> list[Account]:
    """Every account, by name (the passwordless local user is not one)."""
    return [Account.of(user) for user in AccountRepository(session).accounts()]


def has_accounts(session: Session) -> bool:
    return AccountRepository(session).has_accounts()


def set_disabled(session: Session, name: str, disabled: bool) -> Account:
    """Disable an account (its browsers are signed out; its tokens stop working while it
    stays disabled) or enable it again."""
    user = account_named(session, name)
    user.disabled = disabled
    if disabled:
        AccountRepository(session).delete_sessions(user.id)
    session.flush()
    return Account.of(user)


@dataclass(frozen=True)
class PasswordSet:
    """A new password was set: the account, and how many of its API tokens were revoked."""

    account: Account
    tokens_revoked: int


def set_password(
    session: Session,
    name: str,
    password: str,
    *,
    revoke_tokens: bool = True,
    hasher: PasswordHasher | None = None,
) -> PasswordSet:
    """A new password; every browser signed in to the account is signed out, and its API
    tokens are revoked unless ``revoke_tokens`` is False."""
    hashed = hash_password(check_password(password), hasher=hasher)
    user = account_named(session, name)
    user.password_hash = hashed
    repo = AccountRepository(session)
    repo.delete_sessions(user.id)
    revoked = repo.delete_tokens(user.id) if revoke_tokens else 0
    session.flush()
    return PasswordSet(Account.of(user), revoked)
