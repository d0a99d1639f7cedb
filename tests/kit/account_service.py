"""Accounts through the accounts service on a migrated database (``sessions``): adding one
and signing it in at a cheap argon2 cost (``FAST``), at a fixed time (``T0``), and a hasher
that counts the hashes and verifications it does."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from argon2 import PasswordHasher
from sqlalchemy.orm import Session, sessionmaker
from tests.kit.accounts import PASSWORD

from talekeeper.core.clock import utcnow
from talekeeper.services import accounts
from talekeeper.services.accounts import LoginThrottle
from talekeeper.storage.db import session_scope

FAST = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
T0 = datetime(2026, 12, 3, 12, 0, tzinfo=utcnow().tzinfo)


class CountingHasher(PasswordHasher):
    """Argon2 at the cheap cost, counting the hashes and verifications it does."""

    def __init__(self) -> None:
        super().__init__(time_cost=1, memory_cost=8, parallelism=1)
        self.hashes = 0
        self.verifications = 0

    def hash(self, password: str | bytes, *, salt: bytes | None = None) -> str:
        self.hashes += 1
        return super().hash(password, salt=salt)

    def verify(self, hash: str | bytes, password: str | bytes) -> Literal[True]:
        self.verifications += 1
        return super().verify(hash, password)


def add(
    sessions: sessionmaker[Session], name: str, *, admin: bool = False, password: str = PASSWORD
) -> accounts.Account:
    with session_scope(sessions) as session:
        return accounts.create_user(session, name, password, admin=admin, hasher=FAST)


def sign_in(
    sessions: sessionmaker[Session],
    name: str,
    password: str = PASSWORD,
    *,
    client: str = "192.0.2.1",
    now: datetime = T0,
    throttle: LoginThrottle,
    hasher: PasswordHasher = FAST,
) -> tuple[str, accounts.Account]:
    return accounts.login(sessions, name, password, client, now, hasher=hasher, throttle=throttle)
