"""``talekeeper tokens``: an account's API tokens from the command line (add, list, revoke).

Invariants:

- ``tokens add`` prints the new token alone, as one line on standard output, so a script
  can capture it (``TOKEN=$(talekeeper tokens add ...)``); everything else it says goes
  to standard error. The token is never shown again: only its digest is kept.
- Each command names its account with ``--user``; the person at the server's console is
  trusted, as with ``users``. Another account's token id is not found, as on the web.
- Text an account chose (a token's name) is printed with control characters escaped, so
  a name cannot move the cursor or recolour the terminal of whoever lists it.
- Like ``users``, the commands work in either auth mode, on the database directly, and
  migrate it first.
- ``tokens add`` without ``--days`` makes a token that lasts ``DEFAULT_TOKEN_DAYS``, as the
  API does; only ``--never`` makes one that never expires.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime

from talekeeper.cli.users import database, mode_hint
from talekeeper.core.errors import NotFound
from talekeeper.services import accounts
from talekeeper.services.common.units import read_scope, session_scope
from talekeeper.settings import Settings


def shown(text: str) -> str:
    """``text`` with every character a terminal would act on written as an escape."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def _when(moment: datetime | None, none: str) -> str:
    return none if moment is None else moment.strftime("%Y-%m-%d %H:%M")


def _days(args: argparse.Namespace) -> int | None:
    """The days the new token lasts: ``--days``, None for ``--never``, else the default."""
    if args.never:
        return None
    return accounts.DEFAULT_TOKEN_DAYS if args.days is None else int(args.days)


def _add(settings: Settings, args: argparse.Namespace) -> int:
    with database(settings) as sessions, session_scope(sessions) as session:
        user = accounts.account_named(session, args.user)
        name, disabled = user.name, user.disabled
        raw, info = accounts.create_token(
            session, user.id, args.name, set(args.scopes), _days(args)
        )
    print(raw, flush=True)
    scopes = ", ".join(sorted(info.scopes))
    expiry = (
        "never expires" if info.expires_at is None else f"expires {_when(info.expires_at, '')} UTC"
    )
    print(
        f"Token {info.id} '{shown(info.name)}' for {name!r} ({scopes}; {expiry}): it is "
        "shown only this once.",
        file=sys.stderr,
    )
    if disabled:
        print(f"{name!r} is disabled: the token works once it is enabled again.", file=sys.stderr)
    mode_hint(settings)
    return 0


def _list(settings: Settings, args: argparse.Namespace) -> int:
    with database(settings) as sessions, read_scope(sessions) as session:
        user = accounts.account_named(session, args.user)
        name, found = user.name, accounts.list_tokens(session, user.id)
    if not found:
        print(
            f"{name!r} has no API tokens: make one with 'talekeeper tokens add NAME --user "
            f"{name} --scope read'.",
            file=sys.stderr,
        )
        return 0
    rows = [
        (
            str(token.id),
            shown(token.name),
            " ".join(sorted(token.scopes)),
            _when(token.created_at, ""),
            _when(token.expires_at, "never"),
            _when(token.last_used_at, "never"),
        )
        for token in found
    ]
    header = ("ID", "NAME", "SCOPES", "CREATED (UTC)", "EXPIRES", "LAST USED")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )
    return 0


def _revoke(settings: Settings, args: argparse.Namespace) -> int:
    with database(settings) as sessions, session_scope(sessions) as session:
        user = accounts.account_named(session, args.user)
        name = user.name
        if not accounts.revoke_token(session, user.id, args.id):
            raise NotFound(
                f"{name!r} has no token {args.id}: 'talekeeper tokens list --user {name}' "
                "lists its tokens."
            )
    print(f"Revoked token {args.id} of {name!r}: it signs no one in from now on.")
    return 0


def run(settings: Settings, args: argparse.Namespace) -> int:
    """Run the ``tokens`` subcommand that ``args`` names."""
    commands = {"add": _add, "list": _list, "revoke": _revoke}
    return commands[args.tokens](settings, args)
