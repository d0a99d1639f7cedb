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

Who the client is (``client_address``, ``client_scheme``; the sign-in throttle counts by
the address, the session cookie is ``Secure`` by the scheme): the peer the connection comes
from, unless that peer is one of ``TALEKEEPER_TRUSTED_PROXIES``. Only then is
``X-Forwarded-For`` read, from its right end: each hop a trusted proxy added is passed
over, and the first that is not a trusted proxy is the client (what lies to its left was
written by the client itself, so it is never believed). A hop that is not an address
stops the walk at the trusted proxy that reported it. ``X-Forwarded-Proto`` is believed
from a trusted peer alone too. With no trusted proxy (the default) the headers are never
read, so a client, on loopback or anywhere, cannot choose the address it is counted as.
"""

from __future__ import annotations

import contextlib
import ipaddress
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
from talekeeper.services.common.units import read_scope, session_scope
from talekeeper.setting_values import ProxyNetwork
from talekeeper.settings import AuthMode
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


IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
FORWARDED_SCHEMES = frozenset({"http", "https"})


def _address(text: str) -> IPAddress | None:
    """An address as a peer or a hop of ``X-Forwarded-For`` writes it (an IPv4 address
    with a port, an IPv6 one in brackets with one, allowed); None when it is not one. An
    IPv4-mapped IPv6 address is its IPv4 address."""
    value = text.strip().strip('"')
    if value.startswith("["):
        value = value[1:].partition("]")[0]
    elif value.count(":") == 1:
        value = value.partition(":")[0]
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return None
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    return mapped or address


def _trusted(address: IPAddress | None, proxies: tuple[ProxyNetwork, ...]) -> bool:
    return address is not None and any(address in network for network in proxies)


def _peer(scope: Scope) -> tuple[str, IPAddress | None]:
    client = scope.get("client")
    host = str(client[0]) if client else ""
    return host, _address(host) if host else None


def client_address(scope: Scope, proxies: tuple[ProxyNetwork, ...]) -> str:
    """The address the request came from (see the module docstring): the peer's, or the
    client a trusted proxy reports."""
    host, peer = _peer(scope)
    if not _trusted(peer, proxies):
        return str(peer) if peer is not None else host or "unknown"
    assert peer is not None
    nearest = peer
    values = Headers(scope=scope).getlist("x-forwarded-for")
    hops = [hop for value in values for hop in value.split(",") if hop.strip()]
    for hop in reversed(hops):
        found = _address(hop)
        if found is None:
            break  # no proxy writes that: the client's own text, reported by ``nearest``
        if not _trusted(found, proxies):
            return str(found)
        nearest = found
    return str(nearest)


def client_scheme(scope: Scope, proxies: tuple[ProxyNetwork, ...]) -> str:
    """``http`` or ``https``: as the client reached a trusted proxy (``X-Forwarded-Proto``,
    its right-most value), else as the request reached this app."""
    own = str(scope.get("scheme", "http"))
    if not _trusted(_peer(scope)[1], proxies):
        return own
    said = Headers(scope=scope).getlist("x-forwarded-proto")
    last = said[-1].split(",")[-1].strip().lower() if said else ""
    return last if last in FORWARDED_SCHEMES else own


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
