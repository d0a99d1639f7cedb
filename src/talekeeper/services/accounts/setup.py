"""The first administrator of a new server, made from a one-time setup link.

Invariants:

- A ``SetupSecret`` is made only by a process that runs in accounts mode and found no
  account when it started. It is 256 random bits; the raw value is returned once, to be
  shown on the server's console, and the object keeps only its SHA-256, in this process's
  memory (never in the database): a restart makes a new one and forgets the old.
- ``matches`` compares digests in constant time, so the answer's timing says nothing of
  how much of a guess was right. Once ``spend`` ran, nothing matches. Both hold a lock:
  any thread of the server may call them.
- The secret only lets a request try. Whether a first administrator may still be made
  is decided inside the caller's write unit of work (``first_admin``): if any account
  exists by then (another request with the same link, or ``talekeeper users add`` in a
  terminal, got there first), nothing is created and ``SetupClosed`` is raised, so at
  most one first administrator is ever made this way.
- The first administrator is made by ``create_user``: while the passwordless local user
  is the only user, the new account takes it over, with its adventures and settings.
"""

from __future__ import annotations

import hmac
import secrets
import threading

from argon2 import PasswordHasher
from sqlalchemy.orm import Session

from talekeeper.services.accounts.base import SECRET_MAX, Account, digest
from talekeeper.services.accounts.errors import AccountError, NameTaken
from talekeeper.services.accounts.signin import Verified, open_session
from talekeeper.services.accounts.users import create_user
from talekeeper.storage.repositories.accounts import AccountRepository

SETUP_PAGE = "/setup"  # the page's path
# The link: the page, the raw secret in its fragment, which no browser sends to a server, so
# no access log, proxy or Referer header ever holds it.
SETUP_PATH = SETUP_PAGE + "#"


class SetupClosed(AccountError):
    """The link is wrong, used, from an earlier start, or an account exists already; which
    one is never said."""

    status = 404
    code = "not_found"

    def __init__(self) -> None:
        super().__init__(
            "This setup link is not valid: it was used already, the server was restarted "
            "since (each start prints a new one), or an account exists. Sign in at /login, "
            "or run 'talekeeper users add NAME --admin' on the server."
        )


class SetupSecret:
    """The one-time secret of this process's setup link, kept as its digest."""

    def __init__(self, raw: str) -> None:
        self._lock = threading.Lock()
        self._digest: str | None = digest(raw)

    @classmethod
    def make(cls) -> tuple[SetupSecret, str]:
        """A new secret and its raw value (show it once; it is not kept)."""
        raw = secrets.token_urlsafe(32)
        return cls(raw), raw

    def matches(self, raw: str) -> bool:
        """Whether ``raw`` is this secret and it was not spent."""
        if len(raw) > SECRET_MAX:
            return False
        candidate = digest(raw)
        with self._lock:
            kept = self._digest
        return kept is not None and hmac.compare_digest(kept, candidate)

    def spend(self) -> None:
        """From now on nothing matches."""
        with self._lock:
            self._digest = None

    @property
    def spent(self) -> bool:
        with self._lock:
            return self._digest is None


def first_admin(
    session: Session, name: str, password: str, *, hasher: PasswordHasher | None = None
) -> tuple[str, Account]:
    """Make the first administrator and sign them in, in the caller's write unit of work:
    the raw session id (for the cookie) and the account. ``SetupClosed`` when an account
    exists; nothing is then changed (the caller's unit rolls back on the error)."""
    try:
        # create_user hashes before its first statement: the write lock is not held over it.
        account = create_user(session, name, password, admin=True, hasher=hasher)
    except NameTaken:  # only an account can hold a name create_user accepts
        raise SetupClosed() from None
    repo = AccountRepository(session)
    if len(repo.accounts()) > 1:  # someone else's account came first
        raise SetupClosed()
    user = repo.user(account.id)
    if user is None or user.password_hash is None:  # pragma: no cover - made just above
        raise SetupClosed()
    return open_session(session, Verified(account, user.password_hash)), account
