"""``talekeeper users`` (run in this process; on a terminal, a real process on a pseudo-
terminal): the password comes as one line of standard input (what scripts rely on) or, on
a terminal, is asked twice; the account's state is read back through the service, against
the same database."""

from __future__ import annotations

import argparse
import io
import os
import pty
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select as sql_select
from sqlalchemy.orm import Session, sessionmaker
from tests.conftest import data_database, data_env
from tests.kit.cli import run_command

from talekeeper.cli import users as users_cli
from talekeeper.services import accounts
from talekeeper.settings import load_settings
from talekeeper.storage.db import make_engine, make_session_factory, read_scope, session_scope
from talekeeper.storage.models import Adventure

TIMEOUT = 30
PASSWORD = "correct horse battery"


class Users:
    def __init__(self, data: Path) -> None:
        self.data = data
        self.env = {**data_env(data), "PATH": os.environ["PATH"]}

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """One command, in this process (``kit.cli.run_command``); no input: at its end."""
        done = run_command(args, self.env, stdin or "")
        assert "Traceback" not in done.stdout + done.stderr, done.stderr
        return done


@pytest.fixture
def users(tmp_path: Path) -> Users:
    return Users(tmp_path / "data")


@pytest.fixture
def sessions(users: Users) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(data_database(users.data))
    yield make_session_factory(engine)
    engine.dispose()


def can_sign_in(sessions: sessionmaker[Session], name: str, password: str) -> bool:
    try:
        accounts.login(sessions, name, password, "192.0.2.1", throttle=accounts.LoginThrottle())
    except accounts.WrongCredentials:
        return False
    return True


def test_users_add_list_disable_enable_and_passwd_with_the_password_on_stdin(
    users: Users, sessions: sessionmaker[Session]
) -> None:
    empty = users.run("users", "list")
    assert empty.returncode == 0 and empty.stdout == ""
    assert "No accounts yet" in empty.stderr
    new = users.run("new", "--scenario", "lantern-coast")
    assert new.returncode == 0, new.stderr
    added = users.run("users", "add", "Mara", "--admin", stdin=PASSWORD + "\n")
    assert added.returncode == 0, added.stderr
    assert added.stdout == (
        "Added 'Mara', an administrator.\n"
        "'Mara' took over the local user's adventures and settings.\n"
    )
    assert "TALEKEEPER_AUTH=accounts" in added.stderr
    windows = users.run("users", "add", "bob", stdin="bob's password 1\r\n")
    assert windows.returncode == 0, windows.stderr
    listed = users.run("users", "list")
    assert listed.stdout.splitlines() == ["bob   player  enabled", "Mara  admin   enabled"]
    with read_scope(sessions) as session:
        mara = {a.name: a for a in accounts.list_users(session)}["Mara"]
        assert session.scalar(sql_select(Adventure.user_id)) == mara.id
    assert users.run("users", "disable", "BOB").returncode == 0
    assert users.run("users", "list").stdout.splitlines()[0] == "bob   player  disabled"
    with pytest.raises(accounts.AccountDisabled):
        can_sign_in(sessions, "bob", "bob's password 1")  # the \r was not part of it
    assert users.run("users", "enable", "bob").returncode == 0
    with session_scope(sessions) as session:
        bob = accounts.account_named(session, "bob")
        raw, _ = accounts.create_token(session, bob.id, "script", {accounts.Scope.READ}, None)
    changed = users.run("users", "passwd", "bob", stdin="a brand new one\n")
    assert changed.returncode == 0, changed.stderr
    assert "signed out everywhere and its 1 API token was revoked" in changed.stdout
    with read_scope(sessions) as session:
        assert accounts.principal_for_token(session, raw) is None
    assert not can_sign_in(sessions, "bob", "bob's password 1")
    assert can_sign_in(sessions, "bob", "a brand new one")


@pytest.mark.parametrize(
    ("args", "stdin", "says"),
    [
        (("users", "add", "bad name"), PASSWORD + "\n", "not a usable account name"),
        (("users", "add", "local"), PASSWORD + "\n", "passwordless user of local mode"),
        (("users", "add", "mara"), "too short\n", "use at least 10"),
        (("users", "add", "mara"), None, "No password on standard input"),
        (("users", "passwd", "nobody"), PASSWORD + "\n", "no account named 'nobody'"),
        (("users", "disable", "nobody"), None, "no account named 'nobody'"),
    ],
)
def test_a_refused_users_command_says_why_in_one_line_and_exits_1(
    users: Users, args: tuple[str, ...], stdin: str | None, says: str
) -> None:
    done = users.run(*args, stdin=stdin)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and says in done.stderr, done.stderr
    assert users.run("users", "list").stdout == ""


def test_a_taken_name_is_refused_before_a_password_is_read(users: Users) -> None:
    assert users.run("users", "add", "mara", stdin=PASSWORD + "\n").returncode == 0
    again = users.run("users", "add", "MARA")  # no stdin at all: it never gets that far
    assert again.returncode == 1 and "already an account named 'MARA'" in again.stderr
    assert users.run("users").returncode == 2  # argparse: a subcommand is required


def _converse(argv: list[str], env: dict[str, str], answers: list[str]) -> tuple[int, str]:
    """Run ``argv`` on a new pseudo-terminal (its controlling terminal, as a shell gives),
    answering each password prompt, once it is shown, with the next answer."""
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child becomes the command
        os.execve(argv[0], argv, env)
    seen, pending, deadline = b"", list(answers), time.monotonic() + TIMEOUT
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if not ready:
                continue
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the command ended and closed the terminal
                break
            if not chunk:
                break
            seen += chunk
            prompts = seen.count(b"New password for ") + seen.count(b"again: ")
            if pending and prompts > len(answers) - len(pending) and seen.endswith(b": "):
                os.write(fd, pending.pop(0).encode() + b"\n")
    finally:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), seen.decode("utf-8", "replace")


def test_on_a_terminal_the_password_is_asked_twice_without_echo(
    users: Users, sessions: sessionmaker[Session]
) -> None:
    argv = [sys.executable, "-m", "talekeeper", "users", "add", "mara"]
    code, shown = _converse(argv, users.env, [PASSWORD, PASSWORD + " typo"])
    assert code == 1 and "The two passwords differ" in shown
    code, shown = _converse(argv, users.env, [PASSWORD, PASSWORD])
    assert code == 0, shown
    assert "New password for mara: " in shown and "The same password again: " in shown
    assert PASSWORD not in shown  # never echoed
    assert can_sign_in(sessions, "mara", PASSWORD)


def test_the_console_grants_and_removes_the_administrator_flag(
    users: Users, sessions: sessionmaker[Session]
) -> None:
    assert users.run("users", "add", "mara", stdin=PASSWORD + "\n").returncode == 0  # a player
    granted = users.run("users", "admin", "Mara")
    assert granted.returncode == 0 and "'mara' is an administrator." in granted.stdout
    with read_scope(sessions) as session:
        assert accounts.account_named(session, "mara").is_admin
    removed = users.run("users", "admin", "mara", "--off")
    assert removed.returncode == 0 and "no longer an administrator" in removed.stdout
    with read_scope(sessions) as session:
        assert not accounts.account_named(session, "mara").is_admin
    unknown = users.run("users", "admin", "nobody")
    assert unknown.returncode == 1 and "nobody" in unknown.stderr


def test_passwd_keeps_the_tokens_when_told_to(
    users: Users, sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--keep-tokens``, run in this process (the password comes from standard input)."""
    assert users.run("users", "add", "bob", stdin=PASSWORD + "\n").returncode == 0
    with session_scope(sessions) as session:
        bob = accounts.account_named(session, "bob")
        raw, _ = accounts.create_token(session, bob.id, "script", {accounts.Scope.READ}, None)
    monkeypatch.setattr("sys.stdin", io.StringIO("a brand new one\n"))
    settings = load_settings(users.env)
    args = argparse.Namespace(users="passwd", name="bob", keep_tokens=True)
    assert users_cli.run(settings, args) == 0
    with read_scope(sessions) as session:
        assert accounts.principal_for_token(session, raw) is not None
    assert can_sign_in(sessions, "bob", "a brand new one")
