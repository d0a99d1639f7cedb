"""Password hashing: argon2id, with argon2-cffi's ``PasswordHasher()`` default cost.

Invariants:

- At most ``CONCURRENT_HASHES`` hashes or verifications run at once in a process (each
  takes ~64 MiB and a fifth of a second of CPU): a burst of sign-ins queues here instead
  of exhausting memory.
- Every function takes an explicit ``hasher``; without one it is ``DEFAULT_HASHER``. A
  cheaper hasher is for tests only, which must stay fast. A hash records its own cost, so
  it verifies whatever hasher is passed, and ``needs_rehash`` says when it is not at the
  hasher's cost (sign-in then stores a new one).
- A password is hashed as its UTF-8 bytes (lone surrogates passed through as they are),
  so no text a client can send makes hashing raise.
- ``burn_verification`` does the work of a verification that cannot succeed, against a
  hash at the hasher's own cost: a name with no password costs what a known name does.
"""

from __future__ import annotations

import secrets
import threading

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

CONCURRENT_HASHES = 2
DEFAULT_HASHER = PasswordHasher()

_slots = threading.BoundedSemaphore(CONCURRENT_HASHES)
_dummies: dict[tuple[object, ...], str] = {}
_dummies_lock = threading.Lock()


def _secret(password: str) -> bytes:
    return password.encode("utf-8", "surrogatepass")


def _chosen(hasher: PasswordHasher | None) -> PasswordHasher:
    return DEFAULT_HASHER if hasher is None else hasher


def hash_password(password: str, *, hasher: PasswordHasher | None = None) -> str:
    with _slots:
        return _chosen(hasher).hash(_secret(password))


def verify_password(hash: str, password: str, *, hasher: PasswordHasher | None = None) -> bool:
    with _slots:
        try:
            return _chosen(hasher).verify(hash, _secret(password))
        except (VerificationError, InvalidHashError):
            return False


def needs_rehash(hash: str, *, hasher: PasswordHasher | None = None) -> bool:
    try:
        return _chosen(hasher).check_needs_rehash(hash)
    except (InvalidHashError, ValueError):
        return True


def burn_verification(password: str, *, hasher: PasswordHasher | None = None) -> None:
    chosen = _chosen(hasher)
    cost = (
        chosen.time_cost,
        chosen.memory_cost,
        chosen.parallelism,
        chosen.hash_len,
        chosen.salt_len,
        chosen.type,
    )
    with _dummies_lock:
        dummy = _dummies.get(cost)
        if dummy is None:
            dummy = _dummies[cost] = hash_password(secrets.token_urlsafe(16), hasher=chosen)
    verify_password(dummy, password, hasher=chosen)
