"""``talekeeper users``: accounts from the command line (add, list, disable, enable, passwd,
admin). The console is the server's operator: ``admin`` may grant or remove any account's
administrator flag (the way back when no administrator can sign in). ``passwd`` signs the
account out everywhere and revokes its API tokens, unless ``--keep-tokens`` keeps them.

Invariants:

- A password is asked twice, without echo, when standard input is a terminal; otherwise
  it is the first line of standard input (its line ending is not part of it), so a
  script can pipe it in. It never comes from the command line, where other users of the
  machine could read it.
- Everything that can be refused without a password (the name, an unknown account, a
  name already taken) is refused before one is asked for.
- The commands work in either auth mode, so accounts can be made before the server
  runs with ``TALEKEEPER_AUTH=accounts``; they migrate the database first, like ``serve``.
- ``acting_user`` is who ``play``, ``new``, ``export`` and ``import`` act as: the account
  ``--user`` names, which must be enabled (the console is trusted, but a disabled account
  stays out of its stories until it is enabled again), or else the local user.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TextIO

from sqlalchemy.orm import Session, sessionmaker

from talekeeper.core.errors import InvalidInput
from talekeeper.services import accounts
from talekeeper.services.common.database import migrated
from talekeeper.services.common.units import read_scope, session_scope
from talekeeper.settings import AuthMode, Settings

if TYPE_CHECKING:  # the users commands never build a runtime: only its type is named
    from talekeeper.bootstrap import Runtime


def read_password(name: str, stdin: TextIO | None = None) -> str:
    """The new password for ``name``: asked twice on a terminal, else one line of input."""
    stream = sys.stdin if stdin is None else stdin
    if stream.isatty():
        first = getpass.getpass(f"New password for {name}: ")
        if getpass.getpass("The same password again: ") != first:
            raise InvalidInput("The two passwords differ, so nothing was changed: run it again.")
        return first
    line = stream.readline()
    if not line:
        raise InvalidInput(
            "No password on standard input: pipe it in as one line, or run the command in "
            "a terminal to be asked for it."
        )
    return line.removesuffix("\n").removesuffix("\r")


@contextmanager
def database(settings: Settings) -> Iterator[sessionmaker[Session]]:
    """The database, migrated first, as a session factory; closed afterwards."""
    with migrated(settings.resolved_database_url) as sessions:
        yield sessions


def mode_hint(settings: Settings) -> None:
    if settings.auth != AuthMode.ACCOUNTS:
        print(
            "Accounts sign in once the server runs with TALEKEEPER_AUTH=accounts.",
            file=sys.stderr,
        )


def _add(settings: Settings, args: argparse.Namespace) -> int:
    name = accounts.check_name(args.name)
    with database(settings) as sessions:
        with read_scope(sessions) as session:
            takes_over = args.admin and accounts.first_account_takes_over(session)
            accounts.check_name_free(session, name)
        password = accounts.check_password(read_password(name))
        with session_scope(sessions) as session:
            account = accounts.create_user(session, name, password, admin=args.admin)
    role = "an administrator" if account.is_admin else "a player"
    print(f"Added {account.name!r}, {role}.")
    if takes_over:
        print(f"{account.name!r} took over the local user's adventures and settings.")
    mode_hint(settings)
    return 0


def _list(settings: Settings, _args: argparse.Namespace) -> int:
    with database(settings) as sessions, read_scope(sessions) as session:
        found = accounts.list_users(session)
    if not found:
        print(
            "No accounts yet: add the first with 'talekeeper users add NAME --admin'.",
            file=sys.stderr,
        )
        return 0
    width = max(len(account.name) for account in found)
    for account in found:
        role = "admin" if account.is_admin else "player"
        state = "disabled" if account.disabled else "enabled"
        print(f"{account.name:<{width}}  {role:<6}  {state}")
    return 0


def _set_disabled(settings: Settings, name: str, disabled: bool) -> int:
    with database(settings) as sessions, session_scope(sessions) as session:
        account = accounts.set_disabled(session, name, disabled)
    if disabled:
        print(
            f"Disabled {account.name!r}: signed out everywhere, and its API tokens do "
            "nothing until it is enabled again."
        )
    else:
        print(f"Enabled {account.name!r}.")
    return 0


def _disable(settings: Settings, args: argparse.Namespace) -> int:
    return _set_disabled(settings, args.name, True)


def _enable(settings: Settings, args: argparse.Namespace) -> int:
    return _set_disabled(settings, args.name, False)


def _passwd(settings: Settings, args: argparse.Namespace) -> int:
    keep_tokens = bool(args.keep_tokens)
    with database(settings) as sessions:
        with read_scope(sessions) as session:
            name = accounts.account_named(session, args.name).name
        password = accounts.check_password(read_password(name))
        with session_scope(sessions) as session:
            done = accounts.set_password(session, name, password, revoke_tokens=not keep_tokens)
    tokens = "its API tokens were kept" if keep_tokens else _revoked(done.tokens_revoked)
    print(f"New password set for {done.account.name!r}; it was signed out everywhere and {tokens}.")
    return 0


def _revoked(count: int) -> str:
    if count == 0:
        return "it had no API tokens to revoke"
    return f"its {count} API token{'s were' if count != 1 else ' was'} revoked"


def _admin(settings: Settings, args: argparse.Namespace) -> int:
    with database(settings) as sessions, session_scope(sessions) as session:
        account = accounts.set_admin(session, args.name, not args.off)
    role = "an administrator" if account.is_admin else "a player, no longer an administrator"
    print(f"{account.name!r} is {role}.")
    return 0


def acting_user(rt: Runtime, name: str | None) -> int:
    """The id of the user a terminal command acts as: the local user (local mode, no
    name), or the enabled account ``name`` (accounts mode)."""
    if name is None:
        return rt.local_user_id()
    with read_scope(rt.sessions) as session:
        user = accounts.account_named(session, name)
        if user.disabled:
            raise InvalidInput(
                f"The account {user.name!r} is disabled: enable it with 'talekeeper users "
                f"enable {user.name}' first."
            )
        return user.id


def run(settings: Settings, args: argparse.Namespace) -> int:
    """Run the ``users`` subcommand that ``args`` names."""
    commands = {
        "add": _add,
        "list": _list,
        "disable": _disable,
        "enable": _enable,
        "passwd": _passwd,
        "admin": _admin,
    }
    return commands[args.users](settings, args)
