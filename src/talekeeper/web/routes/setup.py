"""The one-time setup link: how a new server in accounts mode gets its first administrator
from a browser, without letting whoever comes first become one.

Invariants:

- ``prepare(app, rt)`` runs in the app's lifespan, after the migrations. In accounts mode
  with no account it makes the process's ``SetupSecret`` (``services.accounts.setup``),
  keeps it on ``app.state.setup`` (only its digest) and hands the link's path, once, to
  ``app.state.announce_setup`` when the entry point set one (``talekeeper serve`` prints
  it with the address it listens on); without one, the log says how to make the first
  account, without the secret. Otherwise ``app.state.setup`` is None.
- The link is ``/setup#<secret>``: the secret rides in the fragment, which browsers never
  send, so it is in no access log, proxy log or Referer header; the page's script sends it
  in the body of its post. ``GET /setup`` and ``POST /api/auth/setup`` are public
  (``web/auth.py`` lets them through without a session). The page is a 404 unless a link
  is open (accounts mode, no account, not spent); the post with a wrong, spent or earlier
  secret, in local mode or once an account exists, is the same 404, which says nothing of
  which it was.
- The post checks the secret before anything else, then the name and the password (a 400
  leaves the link usable for another try), then makes the account and its session in one
  write unit of work (``first_admin``: all or nothing, refused if any account exists by
  then). The link is spent once the account is made, or once an account is found.
- The setup page shows nothing of the server (no navigation, no model names), like the
  sign-in page.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio
from fastapi import APIRouter, Depends, FastAPI, Request, Response
from fastapi.responses import HTMLResponse
from pydantic import Field

from talekeeper.bootstrap import Runtime
from talekeeper.services.accounts import Account, check_name, check_password, has_accounts
from talekeeper.services.accounts.setup import (
    SETUP_PAGE,
    SETUP_PATH,
    SetupClosed,
    SetupSecret,
    first_admin,
)
from talekeeper.services.common.units import read_scope, session_scope
from talekeeper.web.auth import accounts_mode
from talekeeper.web.deps import Strict, runtime
from talekeeper.web.routes.auth import Me, set_cookie
from talekeeper.web.routes.pages import render

log = logging.getLogger(__name__)

router = APIRouter()

ANNOUNCE = "announce_setup"  # the app.state attribute an entry point sets to show the link


class SetupRequest(Strict):
    secret: str = Field(max_length=200)
    username: str = Field(max_length=200)
    password: str = Field(max_length=2000)


def prepare(app: FastAPI, rt: Runtime) -> None:
    """Make this start's setup link when accounts mode has no account yet (see above)."""
    app.state.setup = None
    if not accounts_mode(rt):
        return
    with read_scope(rt.sessions) as session:
        if has_accounts(session):
            return
    secret, raw = SetupSecret.make()
    app.state.setup = secret
    announce: Callable[[str], None] | None = getattr(app.state, ANNOUNCE, None)
    if announce is not None:
        announce(SETUP_PATH + raw)
    else:
        log.warning(
            "No account yet: make the first administrator with 'talekeeper users add NAME "
            "--admin' (started with 'talekeeper serve', the server prints a one-time setup "
            "link instead)."
        )


def _usable(request: Request, raw: str) -> SetupSecret | None:
    """This start's secret, when ``raw`` is it and it was not spent."""
    secret: SetupSecret | None = getattr(request.app.state, "setup", None)
    return secret if secret is not None and secret.matches(raw) else None


@router.get(SETUP_PAGE, response_class=HTMLResponse, include_in_schema=False)
def setup_page(request: Request, rt: Runtime = Depends(runtime)) -> HTMLResponse:
    link: SetupSecret | None = getattr(request.app.state, "setup", None)
    if link is not None and link.spent:
        link = None
    if link is not None:
        with read_scope(rt.sessions) as session:
            if has_accounts(session):  # made meanwhile, by 'talekeeper users add'
                link.spend()
                link = None
    if link is None:
        page = render(rt, None, "setup.html", 404, usable=False, message=SetupClosed().message)
    else:
        page = render(rt, None, "setup.html", usable=True, message="")
    page.headers["Referrer-Policy"] = "no-referrer"
    return page


@router.post("/api/auth/setup", response_model=Me)
async def setup(
    body: SetupRequest, request: Request, response: Response, rt: Runtime = Depends(runtime)
) -> Me:
    link = _usable(request, body.secret)
    if link is None:
        raise SetupClosed()
    # Refused before the password is hashed, and the link stays usable for another try.
    check_name(body.username)
    check_password(body.password)

    def make() -> tuple[str, Account]:
        with session_scope(rt.sessions) as session:
            return first_admin(session, body.username, body.password)

    try:
        raw, account = await anyio.to_thread.run_sync(make)
    except SetupClosed:
        link.spend()
        raise
    link.spend()
    set_cookie(request, response, raw)
    return Me(name=account.name, admin=account.is_admin, mode="accounts")
