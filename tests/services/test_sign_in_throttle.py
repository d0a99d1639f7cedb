"""The sign-in throttle against a real migrated database (SQLite, or PostgreSQL with
``--db=postgresql``), played as an attacker would: guesses at someone else's account never
lock its owner out from their own address, a pair locks and doubles, a spray from many
addresses meets the account's ceiling only where it failed, an address guessing many
names is stopped at new names only, simultaneous guesses count as sequential ones, and
two processes (two engines on one database) count together."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Literal

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from tests.conftest import database_url
from tests.kit.account_service import T0, CountingHasher, add, sign_in

from talekeeper.services.accounts import LoginThrottle, LoginThrottled, Rule, WrongCredentials
from talekeeper.services.accounts.throttle import Kind, account_key, address_key
from talekeeper.storage.db import make_engine, make_session_factory, read_scope
from talekeeper.storage.models import SignInCount

WRONG = "not the password"
ATTACKER = "198.51.100.66"
OWNER = "203.0.113.7"


@pytest.fixture
def throttle() -> LoginThrottle:
    return LoginThrottle()


def guess(
    sessions: sessionmaker[Session],
    throttle: LoginThrottle,
    name: str = "admin",
    client: str = ATTACKER,
    *,
    seconds: float = 0,
) -> str:
    """One wrong password: what it met (``wrong`` or ``throttled``)."""
    try:
        sign_in(
            sessions,
            name,
            WRONG,
            client=client,
            now=T0 + timedelta(seconds=seconds),
            throttle=throttle,
        )
    except WrongCredentials:
        return "wrong"
    except LoginThrottled:
        return "throttled"
    raise AssertionError("a wrong password signed in")


def rows(sessions: sessionmaker[Session]) -> dict[tuple[str, str, str], SignInCount]:
    with read_scope(sessions) as session:
        found = session.scalars(select(SignInCount)).all()
    return {(row.kind, row.account, row.address): row for row in found}


# -- one account from one address ---------------------------------------------------------


def test_a_pair_locks_after_five_failures_even_for_the_right_password(
    sessions: sessionmaker[Session], throttle: LoginThrottle
) -> None:
    add(sessions, "mara")
    assert [guess(sessions, throttle, "mara", OWNER) for _ in range(6)] == ["wrong"] * 5 + [
        "throttled"
    ]
    hasher = CountingHasher()
    with pytest.raises(LoginThrottled) as locked:
        sign_in(sessions, "Mara", client=OWNER, throttle=throttle, hasher=hasher)
    assert hasher.verifications == 0  # refused before any password is checked
    assert (locked.value.retry_after, locked.value.status) == (60, 429)
    assert "wait 60 seconds" in locked.value.message
    assert throttle.retry_after(sessions, "mara", OWNER, T0 + timedelta(seconds=30)) == 30
    sign_in(sessions, "mara", client="192.0.2.99", throttle=throttle)  # elsewhere: at once
    sign_in(sessions, "mara", client=OWNER, now=T0 + timedelta(seconds=61), throttle=throttle)
    assert throttle.retry_after(sessions, "mara", OWNER, T0 + timedelta(seconds=61)) == 0


def test_each_further_lock_of_a_pair_doubles_up_to_fifteen_minutes(
    sessions: sessionmaker[Session], throttle: LoginThrottle
) -> None:
    add(sessions, "mara")
    now = 0.0
    locks, tries = [], []
    for _ in range(6):
        failures = 0
        while (
            wait := throttle.retry_after(sessions, "mara", OWNER, T0 + timedelta(seconds=now))
        ) == 0:
            assert guess(sessions, throttle, "mara", OWNER, seconds=now) == "wrong"
            failures += 1
        locks.append(wait)
        tries.append(failures)
        now += wait
    assert locks == [60, 120, 240, 480, 900, 900]
    assert tries == [5, 1, 1, 1, 1, 1]  # once locked, each failure locks it again
    quiet = now + 15 * 60 + 1  # a whole window without a failure: it starts from nothing
    assert [guess(sessions, throttle, "mara", OWNER, seconds=quiet) for _ in range(5)] == [
        "wrong"
    ] * 5
    assert throttle.retry_after(sessions, "mara", OWNER, T0 + timedelta(seconds=quiet)) == 60


def test_the_right_password_starts_its_pair_over(
    sessions: sessionmaker[Session], throttle: LoginThrottle
) -> None:
    add(sessions, "mara")
    for _ in range(4):
        assert guess(sessions, throttle, "mara", OWNER) == "wrong"
    sign_in(sessions, "mara", client=OWNER, throttle=throttle)
    for _ in range(4):  # four more: no lock, the count started again
        assert guess(sessions, throttle, "mara", OWNER) == "wrong"
    sign_in(sessions, "mara", client=OWNER, throttle=throttle)


# -- an attacker and the owner ------------------------------------------------------------


def test_guesses_at_the_admin_from_one_address_never_stop_the_admin_at_another(
    sessions: sessionmaker[Session], throttle: LoginThrottle
) -> None:
    add(sessions, "admin", admin=True)
    met = [guess(sessions, throttle, seconds=n) for n in range(50)]
    assert met.count("wrong") == 5 and met[-1] == "throttled"
    raw, account = sign_in(sessions, "admin", client=OWNER, throttle=throttle)
    assert account.name == "admin" and raw


def test_a_spray_from_many_addresses_meets_the_ceiling_only_where_it_failed(
    sessions: sessionmaker[Session], throttle: LoginThrottle
) -> None:
    add(sessions, "admin", admin=True)
    spray = [f"198.51.100.{n}" for n in range(1, 21)]
    assert [guess(sessions, throttle, client=address) for address in spray] == ["wrong"] * 20
    # the 20th failure reached the account's ceiling: an address that failed is refused,
    # even with the right password, until the ceiling's lock ends
    with pytest.raises(LoginThrottled) as refused:
        sign_in(sessions, "admin", client=spray[0], throttle=throttle)
    assert refused.value.retry_after == 60
    assert guess(sessions, throttle, client=spray[5]) == "throttled"
    # a new attacking address gets its one guess, then it has failed too
    assert guess(sessions, throttle, client="198.51.100.21") == "wrong"
    assert guess(sessions, throttle, client="198.51.100.21") == "throttled"
    # the owner, who never failed from their address, signs in at once
    sign_in(sessions, "admin", client=OWNER, throttle=throttle)
    # and a failing address may try again once the ceiling's lock ends
    later = T0 + timedelta(seconds=61)
    sign_in(sessions, "admin", client=spray[0], now=later, throttle=throttle)


def test_the_owner_signing_in_neither_resets_nor_hides_the_accounts_count(
    sessions: sessionmaker[Session],
) -> None:
    throttle = LoginThrottle(account=Rule(6))
    add(sessions, "admin", admin=True)
    for n in range(5):
        assert guess(sessions, throttle, client=f"198.51.100.{n}") == "wrong"
    sign_in(sessions, "admin", client=OWNER, throttle=throttle)  # refunded, not a reset
    assert guess(sessions, throttle, client="198.51.100.50") == "wrong"  # the sixth: locked
    assert guess(sessions, throttle, client="198.51.100.0") == "throttled"
    sign_in(sessions, "admin", client=OWNER, throttle=throttle)  # the owner never failed
    account = rows(sessions)[(Kind.ACCOUNT.value, "admin", "")]
    assert account.failures == 6 and account.locks == 1


def test_an_address_guessing_many_names_is_stopped_only_at_names_it_never_signed_in_to(
    sessions: sessionmaker[Session], throttle: LoginThrottle
) -> None:
    add(sessions, "mara")
    add(sessions, "bob")
    shared = "192.0.2.200"  # a proxy that hides its clients, or one network's address
    sign_in(sessions, "mara", client=shared, throttle=throttle)  # a player known there
    met = [guess(sessions, throttle, f"name{n}", shared) for n in range(31)]
    assert met == ["wrong"] * 30 + ["throttled"]
    with pytest.raises(LoginThrottled):  # bob never signed in from there
        sign_in(sessions, "bob", client=shared, throttle=throttle)
    sign_in(sessions, "mara", client=shared, throttle=throttle)  # mara did: still in
    sign_in(sessions, "bob", client="192.0.2.201", throttle=throttle)  # other addresses


def test_a_refused_attempt_is_counted_nowhere(
    sessions: sessionmaker[Session], throttle: LoginThrottle
) -> None:
    add(sessions, "mara")
    for _ in range(5):
        guess(sessions, throttle, "mara", OWNER)
    before = {key: (row.failures, row.locks) for key, row in rows(sessions).items()}
    for _ in range(10):
        assert guess(sessions, throttle, "mara", OWNER) == "throttled"
    assert {key: (row.failures, row.locks) for key, row in rows(sessions).items()} == before


# -- at once, and in several processes ----------------------------------------------------


class SlowHasher(CountingHasher):
    """A verification that waits until every guess of the burst has started."""

    def __init__(self, gate: threading.Barrier) -> None:
        super().__init__()
        self.gate = gate

    def verify(self, hash: str | bytes, password: str | bytes) -> Literal[True]:
        with contextlib.suppress(threading.BrokenBarrierError):  # fewer came: they go on
            self.gate.wait(timeout=0.5)  # the burst's guesses meet here, all in flight
        return super().verify(hash, password)


def test_guesses_sent_at_once_get_no_more_checks_than_guesses_sent_one_after_another(
    sessions: sessionmaker[Session], throttle: LoginThrottle
) -> None:
    add(sessions, "mara")
    hasher = SlowHasher(threading.Barrier(20))
    outcomes: list[str] = []

    def attempt() -> None:
        try:
            sign_in(sessions, "mara", WRONG, throttle=throttle, hasher=hasher)
        except (WrongCredentials, LoginThrottled) as refused:
            outcomes.append(type(refused).__name__)

    threads = [threading.Thread(target=attempt) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(outcomes) == 20
    assert hasher.verifications == outcomes.count("WrongCredentials") == throttle.failures
    with pytest.raises(LoginThrottled):  # and the pair is locked now, as five in a row do
        sign_in(sessions, "mara", throttle=throttle)


@pytest.fixture
def second_process(tmp_path: Path) -> Iterator[sessionmaker[Session]]:
    """The same database as ``sessions``, through an engine (a pool) of its own, as another
    process has."""
    engine = make_engine(database_url(tmp_path / "tk.db"))
    yield make_session_factory(engine)
    engine.dispose()


def test_two_processes_count_together(
    sessions: sessionmaker[Session], second_process: sessionmaker[Session]
) -> None:
    add(sessions, "mara")
    one, two = LoginThrottle(), LoginThrottle()
    for n in range(5):
        place = sessions if n % 2 else second_process
        assert guess(place, one if n % 2 else two, "mara", OWNER) == "wrong"
    assert guess(sessions, one, "mara", OWNER) == "throttled"
    assert guess(second_process, two, "mara", OWNER) == "throttled"
    with pytest.raises(LoginThrottled):
        sign_in(second_process, "mara", client=OWNER, throttle=two)


# -- keys and rows ------------------------------------------------------------------------


def test_an_ipv6_client_is_counted_by_its_network_and_a_mapped_one_as_ipv4(
    sessions: sessionmaker[Session], throttle: LoginThrottle
) -> None:
    add(sessions, "mara")
    for host in range(1, 6):  # one host hopping through its own /64
        assert guess(sessions, throttle, "mara", f"2001:db8:1:2::{host:x}") == "wrong"
    assert guess(sessions, throttle, "mara", "2001:db8:1:2:ffff::1") == "throttled"
    sign_in(sessions, "mara", client="2001:db8:1:3::1", throttle=throttle)  # another network
    assert address_key("::ffff:192.0.2.5") == "192.0.2.5"
    assert address_key("2001:db8:1:2::5") == "2001:db8:1:2::/64"


@pytest.mark.parametrize(
    ("name", "client"),
    [("x" * 200, "unknown"), ("ma\x00ra", "testclient"), ("Mara", "/run/talekeeper.sock")],
)
def test_any_name_and_any_client_make_a_short_plain_key(
    sessions: sessionmaker[Session], throttle: LoginThrottle, name: str, client: str
) -> None:
    add(sessions, "mara")
    assert guess(sessions, throttle, name, client) == "wrong"
    for _kind, account, address in rows(sessions):
        assert len(account) <= 64 and len(address) <= 64
        assert (account + address).isprintable()
    assert account_key("Mara") == "mara" and account_key(name).startswith(("~", "mara"))


def test_rows_are_forgotten_once_quiet_unless_they_remember_a_sign_in(
    sessions: sessionmaker[Session], throttle: LoginThrottle
) -> None:
    add(sessions, "mara")
    sign_in(sessions, "mara", client=OWNER, throttle=throttle)
    for n in range(40):
        guess(sessions, throttle, f"name{n}", f"198.51.100.{n}")
    assert len(rows(sessions)) == 3 + 40 * 3
    later = T0 + timedelta(minutes=16)  # a window after the last failure
    sign_in(sessions, "mara", client=OWNER, now=later, throttle=throttle)
    left = rows(sessions)  # the pair that signed in is remembered; this sign-in's own rows
    assert set(left) == {
        (Kind.PAIR.value, "mara", OWNER),
        (Kind.ACCOUNT.value, "mara", ""),
        (Kind.ADDRESS.value, "", OWNER),
    }
    known = left[(Kind.PAIR.value, "mara", OWNER)].known_until
    assert known is not None and known == later + timedelta(days=30)
