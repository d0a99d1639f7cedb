"""The sign-in throttle: in memory, per process, thread-safe.

Invariants:

- Failures are counted per account name (ignoring case) and per client address,
  separately. A key with ``failures`` failures within ``window_s`` is locked: for
  ``first_lock_s``, doubling with each further lock up to ``longest_lock_s``. A failure
  after a lock has ended, while the earlier ones are still within the window, locks the
  key again at once (for twice as long).
- A locked key refuses sign-ins before any password is checked, and a refused sign-in is
  not counted as a failure.
- Attempts are reserved before their password is checked (``begin``, released by
  ``end``): a key whose recent failures plus attempts still being checked reach
  ``failures`` refuses more, so a burst of simultaneous guesses gets no more checks than
  guesses made one after another.
- A success clears the account's key only, never the address's: signing in to one's own
  account must not reset the count of guesses made from that address at others.
- A key quiet for a whole window after its last failure and its last lock is forgotten,
  lock count included (until then each lock doubles the one before). The
  table holds at most ``max_keys`` keys; past that the quiet ones go first, then the
  least recently failed unlocked ones. A locked key is never dropped.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime

from talekeeper.services.accounts.errors import LoginThrottled

KEY_MAX = 128  # characters of a name or address kept as a key


@dataclass
class _Key:
    failures: deque[float]
    locks: int = 0
    locked_until: float = 0.0
    last_failure: float = field(default=0.0)


class LoginThrottle:
    def __init__(
        self,
        *,
        failures: int = 5,
        window_s: float = 15 * 60,
        first_lock_s: float = 60,
        longest_lock_s: float = 15 * 60,
        max_keys: int = 100_000,
    ) -> None:
        self.failures = failures
        self.window_s = window_s
        self.first_lock_s = first_lock_s
        self.longest_lock_s = longest_lock_s
        self.max_keys = max_keys
        self._keys: dict[tuple[str, str], _Key] = {}
        self._inflight: dict[tuple[str, str], int] = {}  # attempts being checked, per key
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """How many keys (names and addresses) the throttle holds."""
        with self._lock:
            return len(self._keys)

    @staticmethod
    def _keys_of(name: str, client: str) -> tuple[tuple[str, str], tuple[str, str]]:
        return ("account", name.lower()[:KEY_MAX]), ("client", client[:KEY_MAX])

    def retry_after(self, name: str, client: str, now: datetime) -> int:
        """Seconds until a sign-in for ``name`` from ``client`` is allowed; 0: now."""
        at = now.timestamp()
        with self._lock:
            waits = [
                entry.locked_until - at
                for key in self._keys_of(name, client)
                if (entry := self._keys.get(key)) is not None
            ]
        longest = max(waits, default=0.0)
        return math.ceil(longest) if longest > 0 else 0

    def check(self, name: str, client: str, now: datetime) -> None:
        wait = self.retry_after(name, client, now)
        if wait > 0:
            raise LoginThrottled(wait)

    def begin(self, name: str, client: str, now: datetime) -> None:
        """Reserve an attempt for ``name`` from ``client`` (``end`` releases it), or refuse
        it: a locked key, or one whose recent failures and attempts in flight are already
        as many as it allows."""
        at = now.timestamp()
        with self._lock:
            keys = self._keys_of(name, client)
            for key in keys:
                entry = self._keys.get(key)
                if entry is not None and entry.locked_until > at:
                    raise LoginThrottled(math.ceil(entry.locked_until - at))
            for key in keys:
                if self._inflight.get(key, 0) >= self._allowance(self._keys.get(key), at):
                    raise LoginThrottled(1)  # the attempts in flight decide first
            for key in keys:
                self._inflight[key] = self._inflight.get(key, 0) + 1

    def _allowance(self, entry: _Key | None, at: float) -> int:
        """How many attempts may be checked at once: those left before a lock, or one at a
        time after a lock (the next failure locks the key again)."""
        if entry is None or self._quiet(entry, at):
            return self.failures
        if entry.locks:
            return 1
        return self.failures - sum(1 for t in entry.failures if at - t <= self.window_s)

    def end(self, name: str, client: str) -> None:
        """Release the attempt ``begin`` reserved."""
        with self._lock:
            for key in self._keys_of(name, client):
                left = self._inflight.get(key, 0) - 1
                if left > 0:
                    self._inflight[key] = left
                else:
                    self._inflight.pop(key, None)

    def failed(self, name: str, client: str, now: datetime) -> None:
        at = now.timestamp()
        with self._lock:
            for key in self._keys_of(name, client):
                entry = self._keys.pop(key, None)
                if entry is None or self._quiet(entry, at):
                    entry = _Key(failures=deque(maxlen=self.failures))
                entry.failures.append(at)
                entry.last_failure = at
                full = len(entry.failures) == self.failures
                if full and at - entry.failures[0] <= self.window_s and at >= entry.locked_until:
                    lock = min(self.first_lock_s * 2**entry.locks, self.longest_lock_s)
                    entry.locks += 1
                    entry.locked_until = at + lock
                self._keys[key] = entry  # last in the table: the most recently failed
            if len(self._keys) > self.max_keys:
                self._shed(at)

    def succeeded(self, name: str) -> None:
        with self._lock:
            self._keys.pop(self._keys_of(name, "")[0], None)

    def _quiet(self, entry: _Key, at: float) -> bool:
        return at - max(entry.last_failure, entry.locked_until) > self.window_s

    def _shed(self, at: float) -> None:
        for key in [k for k, entry in self._keys.items() if self._quiet(entry, at)]:
            del self._keys[key]
        for key in list(self._keys):
            if len(self._keys) <= self.max_keys:
                break
            if at >= self._keys[key].locked_until:
                del self._keys[key]


THROTTLE = LoginThrottle()  # the process's throttle, which the web's sign-in uses
