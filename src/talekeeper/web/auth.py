"""Who a request acts as: nobody to check in local mode, a session or a token in accounts mode.

``Auth`` is an ASGI middleware inside the guard (``web/guard.py``: hosts, origins and body
limits are checked first) and around every route, page and error handler. Invariants:

- Local mode (``TALEKEEPER_AUTH=none``): it does nothing; every request is the local user.
- Accounts mode: a request carries a principal (``services.accounts.Principal``) from
  ``Authorization: Bearer tk_…`` (an API token) or else the ``tk_session`` cookie (a
  browser), looked up in the database on every request, so a sign-out, a password change
  or a disabled account takes effect at once in every process. Only ``PUBLIC`` paths
  (the sign-in page and route, the one-time setup page and route, the static files) are
  served without one; any other
  ``/api/`` request is a 401 in the error format, any page a 303 to the sign-in page
  with the path to come back to.
- Scopes: a request that may change something (any method but GET, HEAD and OPTIONS)
  needs ``play``; one that reads needs ``read`` or ``play``; ``/api/admin/`` needs
  ``admin``. A browser session has every scope its account has; a token only its own.
  Refused: 403 with a sentence naming the scope.
- The principal is put in the request's state (``principal``), which ``deps.user_id``
  reads; the route then answers only for that user (another user's ids are not found).
- A session or token is marked used at most once a minute, in a short write of its own.
"""

from __future__ import annotations

import contextlib
from urllib.parse import quote

import anyio
from starlette.datastructures import Headers
from starlette.responses import RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from talekeeper.bootstrap import Runtime
from talekeeper.core.errors import TalekeeperError
from talekeeper.services.accounts import (
    Principal,
    principal_for_session,
    principal_for_token,
    touch_session,
    touch_token,
)
from talekeeper.services.accounts import Scope as Grant
from talekeeper.settings import AuthMode
from talekeeper.storage.db import read_scope, session_scope
from talekeeper.web.errors import answer, error_response
from talekeeper.web.guard import SAFE_METHODS

COOKIE = "tk_session"
TOKEN_PREFIX = "tk_"
LOGIN_PAGE = "/login"
# Served to anyone: the sign-in page and route, the one-time setup page and route (it checks
# its own secret), the files every page loads, and the readiness probe of load balancers
# (it says "ok" or "down" and nothing else).
PUBLIC = frozenset({LOGIN_PAGE, "/api/auth/login", "/setup", "/api/auth/setup", "/api/ready"})
PUBLIC_PREFIXES = ("/static/",)
ADMIN_PREFIX = "/api/admin/"


def accounts_mode(rt: Runtime) -> bool:
    return bool(rt.settings.auth == AuthMode.ACCOUNTS)


def is_public(path: str) -> bool:
    return path in PUBLIC or path.startswith(PUBLIC_PREFIXES)


def bearer(headers: Headers) -> str | None:
    """The API token of ``Authorization: Bearer tk_…``, if that is what was sent."""
    value = headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    token = token.strip()
    if scheme.lower() == "bearer" and token.startswith(TOKEN_PREFIX):
        return token
    return None


def session_cookie(headers: Headers) -> str | None:
    """The session id of the ``tk_session`` cookie; None when there is none, or more than
    one (a cookie planted by a sibling site must not shadow the real one)."""
    found = []
    for part in headers.get("cookie", "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE and value:
            found.append(value)
    return found[0] if len(found) == 1 else None


def _lookup(rt: Runtime, token: str | None, cookie: str | None) -> Principal | None:
    with read_scope(rt.sessions) as session:
        if token is not None:
            return principal_for_token(session, token)
        if cookie is not None:
            return principal_for_session(session, cookie)
    return None


def _touch(rt: Runtime, principal: Principal) -> None:
    with session_scope(rt.sessions) as session:
        if principal.token_id is not None:
            touch_token(session, principal.token_id)
        elif principal.session_id is not None:
            touch_session(session, principal.session_id)


def missing_scope(principal: Principal, method: str, path: str) -> Grant | None:
    """The scope this request needs and the principal lacks, if any (``admin`` alone covers
    the administrator's routes)."""
    if path.startswith(ADMIN_PREFIX):
        return None if Grant.ADMIN in principal.scopes else Grant.ADMIN
    if method not in SAFE_METHODS:
        return None if Grant.PLAY in principal.scopes else Grant.PLAY
    if Grant.READ in principal.scopes or Grant.PLAY in principal.scopes:
        return None
    return Grant.READ


def refuse_scope(lacking: Grant, token: bool) -> Response:
    """The 403 for a request beyond its scopes: a token lacks one, an account a right."""
    if token:
        message = (
            f"This token has no '{lacking}' scope, which this request needs: make a token "
            "with it on the account page."
        )
    else:
        message = f"Only an administrator may do that (it needs the '{lacking}' scope)."
    return error_response(403, "missing_scope", message)


class Auth:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        rt: Runtime | None = (
            getattr(scope["app"].state, "runtime", None) if "app" in scope else None
        )
        if scope["type"] != "http" or rt is None or not accounts_mode(rt):
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        headers = Headers(scope=scope)
        # A request that says who it is in its Authorization header is judged by that alone:
        # never by a cookie riding along (the guard lets such requests cross origins).
        token = bearer(headers)
        cookie = None if "authorization" in headers else session_cookie(headers)
        principal = None
        try:
            if token is not None or cookie is not None:
                principal = await anyio.to_thread.run_sync(_lookup, rt, token, cookie)
        except TalekeeperError as exc:  # a busy database: 503 with Retry-After, never a 500
            await answer(exc)(scope, receive, send)
            return
        if principal is not None and principal.touch_due:
            with contextlib.suppress(TalekeeperError):  # a mark of use is never worth a turn
                await anyio.to_thread.run_sync(_touch, rt, principal)
        if principal is None:
            if is_public(path):
                await self.app(scope, receive, send)
                return
            await self._refuse(scope, receive, send, path, token is not None)
            return
        lacking = missing_scope(principal, scope["method"], path)
        if lacking is not None:
            await refuse_scope(lacking, principal.token_id is not None)(scope, receive, send)
            return
        scope.setdefault("state", {})["principal"] = principal
        await self.app(scope, receive, send)

    @staticmethod
    async def _refuse(scope: Scope, receive: Receive, send: Send, path: str, token: bool) -> None:
        if path.startswith("/api/"):
            message = (
                "This API token is unknown, expired or revoked: make a new one on the account page."
                if token
                else "Sign in first (POST /api/auth/login), or send an API token as "
                "'Authorization: Bearer tk_…'."
            )
            await error_response(401, "not_signed_in", message)(scope, receive, send)
            return
        query = scope.get("query_string", b"").decode("latin-1")
        back = path + ("?" + query if query else "")
        target = LOGIN_PAGE if back == "/" else f"{LOGIN_PAGE}?next={quote(back, safe='/')}"
        await RedirectResponse(target, status_code=303)(scope, receive, send)
