"""Accounts against a real migrated database: passwords, sign-in, sessions, tokens, a new
password revoking tokens, and the first account taking the local user over (the throttle's
own tests: ``test_sign_in_throttle``).

Argon2 at its default cost takes ~0.2 s a hash, so most tests pass the service a cheap
hasher through its ``hasher`` parameter (``FAST``); the tests that are about the default
cost use it.
"""

from __future__ import annotations

import hashlib
import threading
import time
from datetime import datetime, timedelta
from typing import Any

import pytest
from argon2 import PasswordHasher
from sqlalchemy import select, text, update
from sqlalchemy.orm import Session, sessionmaker
from tests.kit.account_service import FAST, T0, CountingHasher, add, sign_in
from tests.kit.accounts import PASSWORD

from talekeeper.core.errors import InvalidInput
from talekeeper.services import accounts
from talekeeper.services.accounts import (
    SESSION_DAYS,
    AccountDisabled,
    BadName,
    LoginThrottle,
    NameTaken,
    Scope,
    UnknownUser,
    WeakPassword,
    WrongCredentials,
)
from talekeeper.services.memory.base import NullMemory
from talekeeper.services.story import adventures
from talekeeper.storage.db import read_scope, session_scope
from talekeeper.storage.models import Adventure, AuthSession, User
from talekeeper.storage.repositories.users import UserRepository


@pytest.fixture
def throttle() -> LoginThrottle:
    return LoginThrottle()


def principal(
    sessions: sessionmaker[Session], raw: str, now: datetime = T0
) -> accounts.Principal | None:
    with session_scope(sessions) as session:
        return accounts.principal_for_session(session, raw, now)


# -- passwords ---------------------------------------------------------------------------


def test_passwords_are_argon2id_at_the_default_cost_and_a_cheaper_hash_needs_a_rehash() -> None:
    stored = accounts.hash_password(PASSWORD)
    assert stored.startswith("$argon2id$v=19$m=65536,t=3,p=4$")
    assert accounts.verify_password(stored, PASSWORD)
    assert not accounts.verify_password(stored, PASSWORD + "!")
    assert not accounts.verify_password("not a hash", PASSWORD)  # refused, never raised
    assert not accounts.needs_rehash(stored)
    cheap = accounts.hash_password(PASSWORD, hasher=FAST)
    assert accounts.verify_password(cheap, PASSWORD)  # a hash carries its own cost
    assert accounts.needs_rehash(cheap) and not accounts.needs_rehash(cheap, hasher=FAST)
    lone = "\ud800 surrogate pw"  # text no UTF-8 codec takes as it is still hashes
    assert accounts.verify_password(accounts.hash_password(lone, hasher=FAST), lone, hasher=FAST)


def test_no_more_than_two_hashes_run_at_once() -> None:
    class Overlap(PasswordHasher):
        def __init__(self) -> None:
            super().__init__(time_cost=1, memory_cost=8, parallelism=1)
            self.running = 0
            self.most = 0
            self.lock = threading.Lock()

        def hash(self, password: str | bytes, *, salt: bytes | None = None) -> str:
            with self.lock:
                self.running += 1
                self.most = max(self.most, self.running)
            time.sleep(0.05)  # long enough for every thread to arrive while it runs
            with self.lock:
                self.running -= 1
            return super().hash(password, salt=salt)

    hasher = Overlap()
    threads = [
        threading.Thread(target=accounts.hash_password, args=(PASSWORD,), kwargs={"hasher": hasher})
        for _ in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert hasher.most == 2


def test_sign_in_rehashes_a_password_kept_at_an_older_cost(
    sessions: sessionmaker[Session], throttle: LoginThrottle
) -> None:
    add(sessions, "mara")  # kept at the cheap cost, as an older default would have made it
    sign_in(sessions, "mara", throttle=throttle, hasher=accounts.DEFAULT_HASHER)
    with read_scope(sessions) as session:
        stored = session.scalar(select(User.password_hash).where(User.name == "mara"))
    assert stored is not None and stored.startswith("$argon2id$v=19$m=65536,t=3,p=4$")
    assert accounts.verify_password(stored, PASSWORD)


# -- names, passwords, the local user ----------------------------------------------------


@pytest.mark.parametrize(
    "name", ["", "two words", "x" * 41, "m\u0430ra", "mara\n", "local", "Local", "a/b"]
)
def test_a_name_outside_the_rules_is_refused_before_any_hashing(
    sessions: sessionmaker[Session], name: str
) -> None:
    hasher = CountingHasher()
    with pytest.raises(BadName) as refused, session_scope(sessions) as session:
        accounts.create_user(session, name, PASSWORD, hasher=hasher)
    assert "choose another name" in refused.value.message or "letters" in refused.value.message
    assert hasher.hashes == 0


@pytest.mark.parametrize("password", ["123456789", "x" * 1025])
def test_a_password_too_short_or_too_long_is_refused(
    sessions: sessionmaker[Session], password: str
) -> None:
    hasher = CountingHasher()
    with pytest.raises(WeakPassword, match="characters: use at"), session_scope(sessions) as s:
        accounts.create_user(s, "mara", password, hasher=hasher)
    assert hasher.hashes == 0
    with read_scope(sessions) as session:
        assert not accounts.has_accounts(session)


def test_the_first_account_takes_over_the_local_users_adventures_and_settings(
    sessions: sessionmaker[Session],
) -> None:
    with session_scope(sessions) as session:
        local = UserRepository(session).local_user()
        adventures.create(session, local.id, {"title": "Lantern Coast"}, NullMemory())
        UserRepository(session).save_settings(local.id, {"reply_tokens": 120})
        local_id = local.id
        assert accounts.first_account_takes_over(session)
        assert not accounts.has_accounts(session)
    mara = add(sessions, "Mara", admin=True)
    assert (mara.id, mara.name, mara.is_admin) == (local_id, "Mara", True)
    bob = add(sessions, "bob")
    assert bob.id != mara.id
    with read_scope(sessions) as session:
        owners = session.execute(select(Adventure.title, Adventure.user_id)).all()
        assert [tuple(row) for row in owners] == [("Lantern Coast", mara.id)]
        assert UserRepository(session).settings(mara.id) == {"reply_tokens": 120}
        assert UserRepository(session).settings(bob.id) == {}
        assert accounts.has_accounts(session)
        assert not accounts.first_account_takes_over(session)
        assert [a.name for a in accounts.list_users(session)] == ["bob", "Mara"]


def test_a_player_never_takes_over_the_local_users_stories(
    sessions: sessionmaker[Session],
) -> None:
    with session_scope(sessions) as session:
        local = UserRepository(session).local_user()
        adventures.create(session, local.id, {"title": "Lantern Coast"}, NullMemory())
        UserRepository(session).save_settings(local.id, {"api_key": "sk-operator"})
        local_id = local.id
    bob = add(sessions, "bob")  # a player first: a new, empty row
    assert bob.id != local_id
    with read_scope(sessions) as session:
        owners = session.execute(select(Adventure.user_id)).scalars().all()
        assert owners == [local_id]
        assert UserRepository(session).settings(bob.id) == {}
        assert accounts.first_account_takes_over(session)  # still there for the admin
    mara = add(sessions, "mara", admin=True)
    assert mara.id == local_id


def test_names_are_one_account_whatever_their_case(sessions: sessionmaker[Session]) -> None:
    add(sessions, "Mara")
    with pytest.raises(NameTaken, match="ignore case"), session_scope(sessions) as session:
        accounts.create_user(session, "mara", PASSWORD, hasher=FAST)
    with read_scope(sessions) as session:
        assert [a.name for a in accounts.list_users(session)] == ["Mara"]


# -- signing in --------------------------------------------------------------------------


def test_sign_in_returns_a_256_bit_id_kept_only_as_its_sha256(
    sessions: sessionmaker[Session], throttle: LoginThrottle
) -> None:
    mara = add(sessions, "mara", admin=True)
    raw, account = sign_in(sessions, "MARA", throttle=throttle)
    assert account == mara and len(raw) == 43  # token_urlsafe(32): 32 random bytes
    with read_scope(sessions) as session:
        kept = session.scalars(select(AuthSession.token_hash)).all()
    assert kept == [hashlib.sha256(raw.encode()).hexdigest()]
    found = principal(sessions, raw)
    assert found is not None and found.user == mara and found.token_id is None
    assert found.scopes == {Scope.PLAY, Scope.READ, Scope.ADMIN}
    bob = add(sessions, "bob")
    raw_bob, _ = sign_in(sessions, "bob", throttle=throttle)
    found_bob = principal(sessions, raw_bob)
    assert found_bob is not None and found_bob.user == bob
    assert found_bob.scopes == {Scope.PLAY, Scope.READ}
    for forged in ("", raw[:-1], kept[0], "x" * 10_000):
        assert principal(sessions, forged) is None


def test_an_unknown_name_and_a_wrong_password_fail_alike_after_the_same_work(
    sessions: sessionmaker[Session], throttle: LoginThrottle
) -> None:
    add(sessions, "mara")
    failures = {}
    for name, password in (("mara", "wrong password"), ("nobody", PASSWORD), ("local", PASSWORD)):
        hasher = CountingHasher()
        with pytest.raises(WrongCredentials) as failed:
            sign_in(sessions, name, password, throttle=throttle, hasher=hasher)
        failures[name] = (failed.value.code, failed.value.status, failed.value.message)
        assert hasher.verifications == 1, name
    assert len(set(failures.values())) == 1
    assert failures["mara"][1] == 401


# -- sessions ----------------------------------------------------------------------------


def test_a_session_ends_after_its_days_and_at_sign_out(
    sessions: sessionmaker[Session], throttle: LoginThrottle
) -> None:
    add(sessions, "mara")
    raw, _ = sign_in(sessions, "mara", throttle=throttle)
    end = T0 + timedelta(days=SESSION_DAYS)
    assert principal(sessions, raw, end - timedelta(minutes=1)) is not None
    assert principal(sessions, raw, end) is None
    other, _ = sign_in(sessions, "mara", throttle=throttle)
    with session_scope(sessions) as session:
        accounts.logout(session, other)
    assert principal(sessions, other) is None


def test_disabling_an_account_or_changing_its_password_signs_it_out(
    sessions: sessionmaker[Session], throttle: LoginThrottle
) -> None:
    add(sessions, "mara")
    raw, _ = sign_in(sessions, "mara", throttle=throttle)
    with session_scope(sessions) as session:
        assert accounts.set_disabled(session, "MARA", True).disabled
    assert principal(sessions, raw) is None
    with pytest.raises(AccountDisabled, match="ask an administrator"):
        sign_in(sessions, "mara", throttle=throttle)
    with pytest.raises(WrongCredentials):  # only the right password learns it is disabled
        sign_in(sessions, "mara", "wrong wrong wrong", throttle=throttle)
    with session_scope(sessions) as session:
        accounts.set_disabled(session, "mara", False)
    assert principal(sessions, raw) is None  # deleted, not hidden while disabled
    raw, _ = sign_in(sessions, "mara", throttle=throttle)
    with session_scope(sessions) as session:
        accounts.set_password(session, "mara", "a new password", hasher=FAST)
    assert principal(sessions, raw) is None
    with pytest.raises(WrongCredentials):
        sign_in(sessions, "mara", throttle=throttle)
    assert principal(sessions, sign_in(sessions, "mara", "a new password", throttle=throttle)[0])
    with pytest.raises(UnknownUser), session_scope(sessions) as session:
        accounts.set_disabled(session, "nobody", True)


def test_a_password_changed_between_check_and_session_opens_none(
    sessions: sessionmaker[Session], throttle: LoginThrottle
) -> None:
    add(sessions, "mara")
    checked = accounts.authenticate(
        sessions, "mara", PASSWORD, "192.0.2.1", T0, hasher=FAST, throttle=throttle
    )
    with session_scope(sessions) as session:
        accounts.set_password(session, "mara", "changed meanwhile", hasher=FAST)
    with pytest.raises(WrongCredentials), session_scope(sessions) as session:
        accounts.open_session(session, checked, T0)
    with read_scope(sessions) as session:
        assert session.scalar(select(AuthSession.id)) is None


def test_last_used_is_written_once_a_minute_and_a_read_unit_is_told_instead(
    sessions: sessionmaker[Session], throttle: LoginThrottle
) -> None:
    add(sessions, "mara")
    raw, _ = sign_in(sessions, "mara", throttle=throttle)

    def last_used() -> Any:
        with read_scope(sessions) as session:
            return session.scalar(select(AuthSession.last_used_at))

    found = principal(sessions, raw, T0 + timedelta(seconds=30))
    assert found is not None and not found.touch_due and last_used() == T0
    with read_scope(sessions) as session:  # a GET's unit of work: it cannot write
        found = accounts.principal_for_session(session, raw, T0 + timedelta(minutes=2))
    assert found is not None and found.touch_due and last_used() == T0
    with session_scope(sessions) as session:
        assert found.session_id is not None
        assert accounts.touch_session(session, found.session_id, T0 + timedelta(minutes=2))
        assert not accounts.touch_session(session, found.session_id, T0 + timedelta(minutes=2))
    assert last_used() == T0 + timedelta(minutes=2)
    found = principal(sessions, raw, T0 + timedelta(minutes=4))
    assert found is not None and not found.touch_due
    assert last_used() == T0 + timedelta(minutes=4)


# -- tokens ------------------------------------------------------------------------------


def test_a_token_acts_with_its_own_scopes_and_only_its_account_revokes_it(
    sessions: sessionmaker[Session],
) -> None:
    mara = add(sessions, "mara", admin=True)
    bob = add(sessions, "bob")
    with session_scope(sessions) as session:
        raw, info = accounts.create_token(session, bob.id, "backup", {Scope.READ}, None, T0)
        with pytest.raises(InvalidInput, match="administrator"):
            accounts.create_token(session, bob.id, "sneaky", {Scope.ADMIN}, None, T0)
        admin_raw, _ = accounts.create_token(
            session, mara.id, "ops", {Scope.ADMIN, Scope.READ}, 7, T0
        )
    assert raw.startswith("tk_") and len(raw) == 46
    assert info.scopes == {Scope.READ} and info.expires_at is None and info.last_used_at is None
    with session_scope(sessions) as session:
        found = accounts.principal_for_token(session, raw, T0)
        assert found is not None and found.user == bob and found.scopes == {Scope.READ}
        assert found.token_id == info.id and found.session_id is None
        listed = accounts.list_tokens(session, bob.id)
        assert [t.name for t in listed] == ["backup"] and listed[0].last_used_at == T0
        assert hashlib.sha256(raw.encode()).hexdigest() not in repr(listed)
        assert accounts.principal_for_token(session, raw[:-1], T0) is None
        assert accounts.principal_for_token(session, "tk_" + "x" * 43, T0) is None
        assert not accounts.revoke_token(session, mara.id, info.id)  # not mara's to revoke
        assert accounts.principal_for_token(session, raw, T0) is not None
        assert accounts.revoke_token(session, bob.id, info.id)
        assert accounts.principal_for_token(session, raw, T0) is None
        ops = accounts.principal_for_token(session, admin_raw, T0)
        assert ops is not None and ops.scopes == {Scope.ADMIN, Scope.READ}
        assert accounts.principal_for_token(session, admin_raw, T0 + timedelta(days=7)) is None
        session.execute(update(User).where(User.id == mara.id).values(is_admin=False))
        demoted = accounts.principal_for_token(session, admin_raw, T0)
        assert demoted is not None and demoted.scopes == {Scope.READ}


def test_a_disabled_accounts_tokens_act_as_no_one(sessions: sessionmaker[Session]) -> None:
    bob = add(sessions, "bob")
    with session_scope(sessions) as session:
        raw, _ = accounts.create_token(session, bob.id, "script", {Scope.PLAY}, None, T0)
        accounts.set_disabled(session, "bob", True)
        assert accounts.principal_for_token(session, raw, T0) is None
        accounts.set_disabled(session, "bob", False)
        assert accounts.principal_for_token(session, raw, T0) is not None


@pytest.mark.parametrize(
    ("name", "scopes", "days", "says"),
    [
        ("", {Scope.READ}, None, "must not be empty"),
        ("x" * 81, {Scope.READ}, None, "limit is 80"),
        ("none", set(), None, "at least one scope"),
        ("bad", {"write"}, None, "not a scope"),
        ("zero", {Scope.READ}, 0, "from 1 to"),
        ("flag", {Scope.READ}, True, "whole number"),
    ],
)
def test_a_token_request_outside_the_rules_is_refused(
    sessions: sessionmaker[Session], name: str, scopes: Any, days: Any, says: str
) -> None:
    bob = add(sessions, "bob")
    with pytest.raises(InvalidInput, match=says), session_scope(sessions) as session:
        accounts.create_token(session, bob.id, name, scopes, days, T0)
    with read_scope(sessions) as session:
        assert accounts.list_tokens(session, bob.id) == []
        assert session.execute(text("SELECT count(*) FROM api_tokens")).scalar() == 0


def test_a_renewed_password_signs_out_every_browser_and_opens_one_without_a_second_check(
    sessions: sessionmaker[Session], throttle: LoginThrottle
) -> None:
    add(sessions, "mara")
    elsewhere, _ = sign_in(sessions, "mara", throttle=throttle)
    hasher = CountingHasher()
    with session_scope(sessions) as session:
        renewed = accounts.renew_password(session, "mara", "a new long secret", T0, hasher=hasher)
    fresh = renewed.session
    assert (hasher.hashes, hasher.verifications) == (1, 0)
    with read_scope(sessions) as session:
        assert accounts.principal_for_session(session, elsewhere, T0) is None
        found = accounts.principal_for_session(session, fresh, T0)
        assert found is not None and found.user.name == "mara"
    sign_in(sessions, "mara", "a new long secret", throttle=throttle)


def test_a_new_password_revokes_the_accounts_tokens_unless_they_are_kept(
    sessions: sessionmaker[Session], throttle: LoginThrottle
) -> None:
    mara = add(sessions, "mara", admin=True)
    bob = add(sessions, "bob")
    with session_scope(sessions) as session:
        kept, _ = accounts.create_token(session, bob.id, "kept", {Scope.READ}, None, T0)
        other, _ = accounts.create_token(session, mara.id, "hers", {Scope.READ}, None, T0)
        done = accounts.set_password(
            session, "bob", "a second password", revoke_tokens=False, hasher=FAST
        )
        assert done.tokens_revoked == 0 and done.account == bob
        assert accounts.principal_for_token(session, kept, T0) is not None
        accounts.create_token(session, bob.id, "another", {Scope.PLAY}, 30, T0)
        reset = accounts.reset_password(session, "bob", "a third password", by=mara, hasher=FAST)
        assert reset.tokens_revoked == 2  # the default: both of bob's, none of mara's
        assert accounts.principal_for_token(session, kept, T0) is None
        assert accounts.list_tokens(session, bob.id) == []
        assert accounts.principal_for_token(session, other, T0) is not None
        fresh, _ = accounts.create_token(session, mara.id, "new", {Scope.READ}, None, T0)
        renewed = accounts.renew_password(session, "mara", "her own new one", T0, hasher=FAST)
        assert renewed.tokens_revoked == 2
        assert accounts.principal_for_token(session, fresh, T0) is None
        assert accounts.principal_for_session(session, renewed.session, T0) is not None
