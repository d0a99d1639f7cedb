"""The web guard: one ASGI middleware in front of every request, and the pure rules behind it.

Local mode has no login, so anything that can make a browser send a request could act as
the player: a page on another site, or a site whose name was rebound to 127.0.0.1 (DNS
rebinding). The guard wraps the whole application (error pages and static files included)
and decides before any route runs, reading no body:

- Host: only ``localhost``, ``127.0.0.1`` and ``[::1]`` (any port) plus the names in
  ``TALEKEEPER_ALLOWED_HOSTS``; any other Host, a missing one or two of them is a 400
  that names the setting.
- Cross-origin: a method other than GET, HEAD and OPTIONS, with or without a body, is
  allowed when ``Sec-Fetch-Site`` is ``same-origin`` or ``none`` (the player typed it);
  without that header, when ``Origin`` is absent (curl, scripts) or names this Host.
  ``Authorization: Bearer`` marks a script and passes: a browser cannot add that header
  cross-site without a CORS preflight, which the app never grants (unlike Basic
  credentials, which a browser resends on its own). Anything else is a 403.
  ``same-site`` is refused too: another port of localhost is another program.
- Body size: ``BODY_LIMITS`` gives a route its limit (``limits.BODY_MAX`` otherwise). A
  larger ``Content-Length`` is a 413 before a byte of the body is read; a body without
  one (chunked) is counted as it arrives and reading stops at the limit, whatever part
  of the app reads it, with the same 413.
- Headers: every response gets ``X-Content-Type-Options: nosniff``, ``X-Frame-Options:
  DENY`` and ``Referrer-Policy: same-origin``, and ``DEFAULT_POLICY`` as its
  Content-Security-Policy unless it brings its own (the pages do).

Every refusal is ``{"error": {"code", "message"}}`` with a sentence that says what to do.
The app serves no WebSocket; one is closed before it opens (no rule above covers it yet).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from talekeeper.services.common.limits import BODY_MAX, IMPORT_BODY_MAX
from talekeeper.services.library.documents import CAPS as LIBRARY_CAPS
from talekeeper.services.lore.fields import MAX_FILE_BYTES as LORE_FILE_MAX
from talekeeper.setting_values import host_name
from talekeeper.web.errors import error_response

LOOPBACK = ("localhost", "127.0.0.1", "[::1]")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
SAME_ORIGIN_FETCH = frozenset({"same-origin", "none"})
DEFAULT_POLICY = "default-src 'none'; frame-ancestors 'none'"
SECURITY_HEADERS = (
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "same-origin"),
)


@dataclass(frozen=True)
class BodyLimit:
    """The largest body a route takes. ``path`` is the route's template: ``{name}``
    matches one path segment, so a later upload route joins with its own template."""

    method: str
    path: str
    limit: int
    what: str  # how a refusal names these bodies

    def matches(self, method: str, path: str) -> bool:
        ours, theirs = self.path.split("/"), path.split("/")
        return (
            method == self.method
            and len(ours) == len(theirs)
            and all(
                a == b or (a.startswith("{") and a.endswith("}") and b)
                for a, b in zip(ours, theirs, strict=True)
            )
        )


LIBRARY_FILE_MAX = LIBRARY_CAPS.file_bytes
BODY_LIMITS: tuple[BodyLimit, ...] = (
    BodyLimit("POST", "/api/adventures/import", IMPORT_BODY_MAX, "an adventure import"),
    BodyLimit("POST", "/api/adventures/{id}/lore/import", LORE_FILE_MAX, "a lore file"),
    BodyLimit("POST", "/api/adventures/from-file", LORE_FILE_MAX, "a lore or scenario file"),
    BodyLimit("POST", "/api/library", LIBRARY_FILE_MAX, "a library file"),
)
DEFAULT_LIMIT = BodyLimit("*", "*", BODY_MAX, "a request")


def body_limit(method: str, path: str) -> BodyLimit:
    return next((e for e in BODY_LIMITS if e.matches(method, path)), DEFAULT_LIMIT)


def split_host(value: str) -> tuple[str, int | None] | None:
    """``name[:port]`` as (normalized name, port), or ``None`` when it is malformed."""
    name, port = value.strip(), None
    if not name.endswith("]") and ":" in name:
        name, _, digits = name.rpartition(":")
        if not (digits.isdigit() and len(digits) <= 5):
            return None
        port = int(digits)
    if ":" in name and not name.startswith("["):
        return None  # an IPv6 address in a Host is always in brackets
    try:
        return host_name(name), port
    except ValueError:
        return None


def host_refusal(values: list[str], allowed: frozenset[str]) -> str | None:
    """Why a request with these ``Host`` values is refused, or ``None``. The extra names
    are not listed: a rebound page can read this answer."""
    listed = "localhost, 127.0.0.1, [::1] and the names in TALEKEEPER_ALLOWED_HOSTS"
    if len(values) != 1:
        what = "no Host header" if not values else "more than one Host header"
        return f"The request has {what}; send one naming this server ({listed})."
    parsed = split_host(values[0])
    if parsed is not None and parsed[0] in allowed:
        return None
    shown = values[0] if len(values[0]) <= 80 else values[0][:77] + "..."
    return (
        f"This server answers only to {listed}, not to the Host {shown!r}; to reach it by "
        "another name, add that name to TALEKEEPER_ALLOWED_HOSTS."
    )


def _bearer(authorization: str | None) -> bool:
    scheme, _, token = (authorization or "").strip().partition(" ")
    return scheme.lower() == "bearer" and bool(token.strip())


def _same_origin(origin: str, host: str) -> bool:
    try:
        parts = urlsplit(origin.strip())
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or parts.path or "@" in parts.netloc:
        return False
    theirs, ours = split_host(parts.netloc), split_host(host)
    if theirs is None or ours is None:
        return False
    default = 443 if parts.scheme == "https" else 80
    return theirs[0] == ours[0] and (theirs[1] or default) == (ours[1] or default)


def cross_origin_refusal(method: str, headers: Headers) -> str | None:
    """Why this request is refused as cross-origin, or ``None`` (see the module docstring)."""
    if method in SAFE_METHODS or _bearer(headers.get("authorization")):
        return None
    site = headers.get("sec-fetch-site")
    if site is not None:
        allowed = site.strip().lower() in SAME_ORIGIN_FETCH
    else:
        origin = headers.get("origin")
        allowed = origin is None or _same_origin(origin, headers.get("host", ""))
    if allowed:
        return None
    return (
        f"A {method} from another site or origin is refused: Talekeeper takes changes only "
        "from its own pages. Use the app's own page, or call the API from a script with an "
        "'Authorization: Bearer' header."
    )


def _size(limit: int) -> str:
    return f"{limit / 2**20:g} MiB" if limit % 2**20 == 0 else f"{limit:,} bytes"


def length_refusal(lengths: list[str], entry: BodyLimit) -> tuple[int, str] | None:
    """Status and reason to refuse a request by its ``Content-Length``, or ``None``."""
    if not lengths:
        return None
    if len(set(lengths)) != 1 or not lengths[0].strip().isdigit():
        return (
            400,
            "The Content-Length header is not one whole number of bytes; send the body's length.",
        )
    if int(lengths[0]) > entry.limit:
        return 413, too_large(entry)
    return None


def too_large(entry: BodyLimit) -> str:
    return (
        f"The request body is larger than {_size(entry.limit)}, the limit for {entry.what}; "
        "send a smaller body."
    )


class BodyTooLarge(HTTPException):
    """Raised to whatever reads the body past its limit. An HTTPException, so the app's
    own handlers answer it as a client error; the guard then answers it as its own."""

    def __init__(self, entry: BodyLimit) -> None:
        super().__init__(413, too_large(entry))
        self.entry = entry


class _Exchange:
    """One request as the guard sees it: the body counted, the response's headers added,
    and the app's response replaced by a 413 once the body went past its limit."""

    def __init__(self, scope: Scope, receive: Receive, send: Send, entry: BodyLimit) -> None:
        self.scope, self._receive, self._send, self.entry = scope, receive, send, entry
        self.seen = 0
        self.over = False  # the body went past its limit
        self.started = False  # the app's response has begun
        self.refused = False  # the guard's own answer has been sent

    async def receive(self) -> Message:
        if self.over:
            raise BodyTooLarge(self.entry)
        message = await self._receive()
        if message["type"] == "http.request":
            self.seen += len(message.get("body", b""))
            if self.seen > self.entry.limit:
                self.over = True
                raise BodyTooLarge(self.entry)
        return message

    async def send(self, message: Message) -> None:
        """The app's messages: passed on, unless the body was too large."""
        if self.refused:
            return  # the rest of an answer the guard has replaced
        if message["type"] == "http.response.start":
            if self.over:
                await self.refuse(413, "body_too_large", too_large(self.entry))
                return
            self.started = True
        await self._emit(message)

    async def refuse(self, status: int, code: str, message: str) -> None:
        self.refused = True
        await error_response(status, code, message)(self.scope, self._receive, self._emit)

    async def _emit(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            message.setdefault("headers", [])  # ASGI lets a response omit them
            headers = MutableHeaders(scope=message)
            for name, value in (*SECURITY_HEADERS, ("content-security-policy", DEFAULT_POLICY)):
                headers.setdefault(name, value)
        await self._send(message)


class Guard:
    """The ASGI middleware (see the module docstring); ``allowed_hosts`` are the names
    from the settings, normalized, beyond the loopback ones."""

    def __init__(self, app: ASGIApp, allowed_hosts: tuple[str, ...] = ()) -> None:
        self.app = app
        self.allowed = frozenset(LOOPBACK) | frozenset(allowed_hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        method, headers = scope["method"], Headers(scope=scope)
        entry = body_limit(method, scope["path"])
        exchange = _Exchange(scope, receive, send, entry)
        refusal = self.refusal(method, headers, entry)
        if refusal is not None:
            await exchange.refuse(*refusal)
            return
        try:
            await self.app(scope, exchange.receive, exchange.send)
        except BodyTooLarge:
            if exchange.started:
                raise  # a response already under way cannot become a 413
            if not exchange.refused:
                await exchange.refuse(413, "body_too_large", too_large(entry))

    def refusal(
        self, method: str, headers: Headers, entry: BodyLimit
    ) -> tuple[int, str, str] | None:
        """(status, code, message) to answer instead of the app, or ``None``."""
        reason = host_refusal(headers.getlist("host"), self.allowed)
        if reason is not None:
            return 400, "host_not_allowed", reason
        reason = cross_origin_refusal(method, headers)
        if reason is not None:
            return 403, "cross_origin", reason
        length = length_refusal(headers.getlist("content-length"), entry)
        if length is not None:
            status, reason = length
            return status, "body_too_large" if status == 413 else "bad_content_length", reason
        return None
