"""The sign-in throttle: failed sign-ins counted in the database, per (account, address) pair,
with a slower ceiling per account and one per address.

Where the counts live: always in the database (``sign_in_counts``), on SQLite as on
PostgreSQL, so every process serving a database counts together and sees the same locks,
and a restart forgets nothing. Each sign-in writes twice at most, each time in a short unit
of work of its own (a few rows, never the password check): the charge before the check,
and the refund after a right password. On SQLite a charge takes its turn at the one
write lock like any writer (for milliseconds); a database too busy to count answers
"busy" (503), never an uncounted check. The throttle holds no state of its own: a
``LoginThrottle`` is its rules (by default: 5 failures for a pair, 20 for an account, 30
for an address; locks of 1 minute doubling to 15; a 15-minute window; 30 known days),
and every call names the database (a session factory).

Keys (``Kind``) and what a lock of each refuses:

- ``pair``, an account name (ignoring case) from one client address: after
  ``pair.failures`` failures the pair is locked, and a locked pair refuses every attempt,
  the right password included. Nothing else is refused by it: another address may still
  sign in to the account, and the address to other accounts.
- ``account``, an account name from every address: the ceiling, higher than a pair's.
  While it is locked, an attempt is refused only from an address whose pair has failed
  since it last went quiet. An address that has not failed for the account is never
  refused by it, so guesses from an attacker's addresses cannot lock the owner out from
  theirs, while each attacking address gets one guess a lock once the ceiling is reached.
- ``address``, one client address at every name: while it is locked, the address may
  still sign in to the accounts that signed in from it within ``known_days`` (a proxy
  that hides its clients' addresses, or a shared network, then keeps its known players)
  and is refused for every other name. It never refuses another address.

Invariants:

- Counting: a key counts its failures since it was last quiet. The ``failures``-th locks
  it for ``first_lock_s``; once a key has been locked, each further failure before it goes
  quiet locks it again at once, for twice as long as the lock before, up to
  ``longest_lock_s``. A key is quiet once ``window_s`` has passed since its last failure
  and the end of its last lock; then it starts again from nothing.
- An attempt is charged as a failure to all three keys before its password is checked
  (``charge``, one unit of work, in which the refusal is decided too), and refunded when
  the password was right (``refund``). So simultaneous guesses are counted as they
  arrive: a burst gets no more checks than guesses sent one after another, in one process
  or many. An attempt whose check never ends (a process killed meanwhile) stays counted.
- A refused attempt (``LoginThrottled``) is counted nowhere and checks no password.
- A right password starts its pair over and marks the address as known to the account
  for ``known_days``; the account's and the address's counts lose only that attempt's own
  charge (a lock that charge set is lifted), so an owner signing in neither hides nor
  resets an attack on their account.
- Addresses: an IPv6 address is counted by its /64 network (one host usually holds a whole
  /64); an IPv4-mapped IPv6 address as its IPv4 address. A name no account can have and a
  client that is not an address are kept as a digest, so a key is short and plain.
- Rows: every charge deletes the rows that are quiet and known to no account, so the table
  holds only what was counted within the last window or signed in within ``known_days``.
"""

from __future__ import annotations

import hashlib
import ipaddress
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from sqlalchemy.orm import Session, sessionmaker

from talekeeper.services.accounts.errors import LoginThrottled
from talekeeper.services.accounts.users import NAME
from talekeeper.storage.db import read_scope, session_scope
from talekeeper.storage.models import SignInCount
from talekeeper.storage.repositories.sign_in_counts import SignInCountRepository

IPV6_PREFIX = 64  # an IPv6 client is counted by its network of this length
MAX_DOUBLINGS = 20  # far past any longest lock; it keeps 2**locks a small number


class Kind(StrEnum):
    PAIR = "pair"  # one account name from one address
    ACCOUNT = "account"  # one account name from every address
    ADDRESS = "address"  # one address at every name


@dataclass(frozen=True)
class Rule:
    """When a key locks, and for how long: ``failures`` failures, then ``first_lock_s``,
    doubling with each further lock up to ``longest_lock_s``."""

    failures: int
    first_lock_s: float = 60
    longest_lock_s: float = 15 * 60

    def lock(self, locks_before: int) -> timedelta:
        doubled = self.first_lock_s * 2 ** min(locks_before, MAX_DOUBLINGS)
        return timedelta(seconds=min(doubled, self.longest_lock_s))


@dataclass(frozen=True)
class Key:
    kind: Kind
    account: str = ""
    address: str = ""

    @property
    def row_key(self) -> tuple[str, str, str]:
        return (self.kind.value, self.account, self.address)


@dataclass(frozen=True)
class Lifted:
    """A lock a charge set, and what the key held before it (for ``refund``)."""

    key: Key
    locks_before: int
    until_before: datetime | None
    until_set: datetime


@dataclass(frozen=True)
class Charge:
    """One attempt, counted as a failure until ``refund``."""

    pair: Key
    account: Key
    address: Key
    locked: tuple[Lifted, ...] = ()


def _digest(text: str) -> str:
    return "~" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def account_key(name: str) -> str:
    """How a name is counted: lower case when an account could have it, else a digest."""
    return name.lower() if NAME.fullmatch(name) else _digest(name)


def address_key(client: str) -> str:
    """How a client address is counted: an IPv4 address as it is, an IPv6 one by its /64
    network, anything else as a digest."""
    try:
        address = ipaddress.ip_address(client)
    except ValueError:
        return _digest(client)
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, IPV6_PREFIX), strict=False))
    return str(address)


def _quiet(row: SignInCount | None, now: datetime) -> bool:
    return row is None or row.quiet_at <= now


def _lock_left(row: SignInCount | None, now: datetime) -> float:
    if row is None or row.locked_until is None or row.locked_until <= now:
        return 0.0
    return (row.locked_until - now).total_seconds()


def _failed_lately(row: SignInCount | None, now: datetime) -> bool:
    return row is not None and not _quiet(row, now) and row.failures > 0


def _known(row: SignInCount | None, now: datetime) -> bool:
    return row is not None and row.known_until is not None and row.known_until > now


def _wait(rows: Sequence[SignInCount | None], now: datetime) -> float:
    """Seconds until the attempt whose rows (pair, account, address) these are is allowed
    (see the module docstring for what each lock refuses); 0: now."""
    pair, account, address = rows
    waits = [_lock_left(pair, now)]
    if _failed_lately(pair, now):
        waits.append(_lock_left(account, now))
    if not _known(pair, now):
        waits.append(_lock_left(address, now))
    return max(waits)


class LoginThrottle:
    """The throttle's rules; the counts are the database's (see the module docstring)."""

    def __init__(
        self,
        *,
        pair: Rule = Rule(5),
        account: Rule = Rule(20),
        address: Rule = Rule(30),
        window_s: float = 15 * 60,
        known_days: float = 30,
    ) -> None:
        self.rules = {Kind.PAIR: pair, Kind.ACCOUNT: account, Kind.ADDRESS: address}
        self.window = timedelta(seconds=window_s)
        self.known = timedelta(days=known_days)

    @property
    def failures(self) -> int:
        """Failures of one account from one address before that pair locks."""
        return self.rules[Kind.PAIR].failures

    @staticmethod
    def keys(name: str, client: str) -> tuple[Key, Key, Key]:
        account, address = account_key(name), address_key(client)
        return (
            Key(Kind.PAIR, account, address),
            Key(Kind.ACCOUNT, account),
            Key(Kind.ADDRESS, address=address),
        )

    def retry_after(
        self, sessions: sessionmaker[Session], name: str, client: str, now: datetime
    ) -> int:
        """Seconds until a sign-in to ``name`` from ``client`` is allowed; 0: now."""
        with read_scope(sessions) as session:
            repo = SignInCountRepository(session)
            rows = [repo.get(key.row_key) for key in self.keys(name, client)]
        return math.ceil(_wait(rows, now))

    def charge(
        self, sessions: sessionmaker[Session], name: str, client: str, now: datetime
    ) -> Charge:
        """Count an attempt at ``name`` from ``client`` as a failure, or refuse it
        (``LoginThrottled``, counted nowhere)."""
        keys = self.keys(name, client)
        locked: list[Lifted] = []
        with session_scope(sessions) as session:
            repo = SignInCountRepository(session)
            repo.forget_quiet(now)
            rows = [repo.get(key.row_key) for key in keys]
            wait = _wait(rows, now)
            if wait <= 0:
                for key, row in zip(keys, rows, strict=True):
                    lifted = self._count(key, row or repo.add(key.row_key, now), now)
                    if lifted is not None:
                        locked.append(lifted)
        if wait > 0:
            raise LoginThrottled(math.ceil(wait))
        return Charge(*keys, locked=tuple(locked))

    def _count(self, key: Key, row: SignInCount, now: datetime) -> Lifted | None:
        """One more failure for ``key``; the lock it set, if it set one."""
        rule = self.rules[key.kind]
        if _quiet(row, now):
            row.failures, row.locks, row.locked_until = 0, 0, None
        row.failures += 1
        row.last_failure_at = now
        lifted = None
        if row.failures >= rule.failures and _lock_left(row, now) == 0:
            until = now + rule.lock(row.locks)
            lifted = Lifted(key, row.locks, row.locked_until, until)
            row.locks, row.locked_until = row.locks + 1, until
        row.quiet_at = max(now, row.locked_until or now) + self.window
        return lifted

    def refund(self, sessions: sessionmaker[Session], charge: Charge, now: datetime) -> None:
        """The charged attempt had the right password: its pair starts over and is known;
        the account and the address lose this attempt's charge (and a lock it set)."""
        with session_scope(sessions) as session:
            repo = SignInCountRepository(session)
            pair = repo.get(charge.pair.row_key) or repo.add(charge.pair.row_key, now)
            pair.failures, pair.locks, pair.locked_until = 0, 0, None
            pair.quiet_at, pair.known_until = now, now + self.known
            for key in (charge.account, charge.address):
                row = repo.get(key.row_key)
                if row is None:
                    continue  # quiet and forgotten meanwhile: nothing left to take back
                row.failures = max(0, row.failures - 1)
                for lifted in charge.locked:
                    if lifted.key == key and row.locked_until == lifted.until_set:
                        row.locks, row.locked_until = lifted.locks_before, lifted.until_before
