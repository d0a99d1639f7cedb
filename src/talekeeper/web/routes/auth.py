"""Signing in and out, the password, and API tokens (accounts mode; ``web/auth.py`` decides
who a request is).

Invariants:

- Sign-in verifies in a read unit of work and writes the session in a short write unit
  of its own, so a password check (~0.2 s) never holds the database's write lock. The
  cookie ``tk_session`` is HttpOnly, SameSite=Lax, Secure when the request came over
  https, and lives as long as the session row.
- A wrong name and a wrong password are the same 401; a throttled sign-in is a 429 with
  ``Retry-After`` and a sentence saying how long to wait. The throttle counts the client
  address ``web/auth.py`` finds (the peer, or what a trusted proxy reports), and its
  counts are in the database, shared by every process.
- Changing the password signs out every browser of the account (their rows are deleted)
  and gives this one a fresh session; it revokes the account's API tokens too unless the
  request says ``"revoke_tokens": false``, and the answer says how many went.
- A token is shown once, in the answer that creates it; only its hash is kept. A request
  that names no ``expires_days`` gets ``DEFAULT_TOKEN_DAYS``; ``null`` asks for a token
  that never expires. Another account's token id is not found (404), never forbidden.
- In local mode these routes answer 404 (there is nothing to sign in to) except
  ``/api/auth/me``, which says so.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime, timedelta
from typing import NamedTuple

import anyio
from fastapi import APIRouter, Depends, Request, Response
from pydantic import Field

from talekeeper.bootstrap import Runtime
from talekeeper.core.errors import NotFound, TalekeeperError
from talekeeper.services.accounts import (
    DEFAULT_TOKEN_DAYS,
    MAX_PASSWORD_LENGTH,
    SESSION_DAYS,
    Account,
    LoginThrottle,
    Principal,
    Renewed,
    Scope,
    TokenInfo,
    Verified,
    WrongCredentials,
    authenticate,
    create_token,
    list_tokens,
    logout,
    open_session,
    renew_password,
    revoke_token,
)
from talekeeper.services.common.units import read_scope, session_scope
from talekeeper.setting_values import ProxyNetwork
from talekeeper.web.auth import (
    COOKIE,
    accounts_mode,
    client_address,
    client_scheme,
    session_cookie,
)
from talekeeper.web.deps import NotSignedIn, RowId, Strict, principal, runtime

router = APIRouter(prefix="/api")


class WrongCurrentPassword(TalekeeperError):
    status = 401
    code = "wrong_password"

    def __init__(self) -> None:
        super().__init__("The current password is not right: type it again.")


class Credentials(Strict):
    username: str = Field(max_length=200)
    password: str = Field(max_length=MAX_PASSWORD_LENGTH)  # longer: a 400, not a guess


class PasswordChange(Strict):
    current: str = Field(max_length=MAX_PASSWORD_LENGTH)
    new: str = Field(max_length=MAX_PASSWORD_LENGTH)
    revoke_tokens: bool = True  # the account's API tokens go with the old password


class NewToken(Strict):
    name: str = Field(max_length=200)
    scopes: list[Scope] = Field(max_length=3)
    expires_days: int | None = DEFAULT_TOKEN_DAYS  # null: never expires


class Me(Strict):
    name: str
    admin: bool
    mode: str


class Done(Strict):
    ok: bool = True


class PasswordChanged(Done):
    tokens_revoked: int  # the account's API tokens revoked with the old password


class TokenView(Strict):
    id: int
    name: str
    scopes: list[Scope]
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None

    @classmethod
    def of(cls, info: TokenInfo) -> TokenView:
        return cls(**{**asdict(info), "scopes": sorted(info.scopes)})


class CreatedToken(TokenView):
    token: str  # shown this once


class TokenList(Strict):
    tokens: list[TokenView]


def _accounts(rt: Runtime, what: str = "There is nothing to sign in to") -> None:
    if not accounts_mode(rt):
        raise NotFound(f"{what}: this Talekeeper runs in local mode, without accounts.")


def _signed_in(request: Request) -> Principal:
    found = principal(request)
    if found is None:
        raise NotSignedIn()
    return found


class BrowserOnly(TalekeeperError):
    status = 403
    code = "browser_only"

    def __init__(self) -> None:
        super().__init__(
            "Tokens and the password are managed from a signed-in browser (the account "
            "page), never with an API token: a token that leaked must not make others."
        )


def _browser(request: Request) -> Principal:
    """The signed-in browser: token routes and the password take no API token."""
    found = _signed_in(request)
    if found.session_id is None:
        raise BrowserOnly()
    return found


def _proxies(request: Request) -> tuple[ProxyNetwork, ...]:
    rt: Runtime = request.app.state.runtime
    return rt.settings.trusted_proxy_networks


def set_cookie(request: Request, response: Response, raw: str) -> None:
    """The session cookie for ``raw`` (sign-in, password change, the setup link): Secure
    when the client reached us (or the trusted proxy in front) over https."""
    response.set_cookie(
        COOKIE,
        raw,
        max_age=int(timedelta(days=SESSION_DAYS).total_seconds()),
        httponly=True,
        samesite="lax",
        secure=client_scheme(request.scope, _proxies(request)) == "https",
        path="/",
    )


def _client(request: Request) -> str:
    """The client's address, as the throttle counts it (``web/auth.py``)."""
    return client_address(request.scope, _proxies(request))


class Gate(NamedTuple):
    """This app's sign-in throttle (its rules: the counts are in the database) and its
    limit on password checks at once (a process's threads are its own to spare)."""

    throttle: LoginThrottle
    checks: anyio.CapacityLimiter


CHECKS_AT_ONCE = 2  # password checks running (each takes a worker thread ~0.2 s)
CHECKS_WAITING = 16  # beyond this many waiting, a sign-in is refused at once


class TooManySignIns(TalekeeperError):
    status = 429
    code = "too_many_sign_ins"
    retry_after = 2

    def __init__(self) -> None:
        super().__init__("Too many sign-ins at once: try again in a moment.")


def _gate(request: Request) -> Gate:
    gate: Gate = request.app.state.sign_in
    return gate


async def _sign_in(
    rt: Runtime, gate: Gate, name: str, password: str, client: str
) -> tuple[str, Account]:
    """Check a password and open a session. The check waits for one of ``CHECKS_AT_ONCE``
    places on the event loop, never in a worker thread: a burst of sign-ins cannot take
    the threads every other request needs."""

    def check() -> Verified:
        return authenticate(rt.sessions, name, password, client, throttle=gate.throttle)

    def open_(verified: Verified) -> str:
        with session_scope(rt.sessions) as session:
            return open_session(session, verified)

    if gate.checks.statistics().tasks_waiting >= CHECKS_WAITING:
        raise TooManySignIns()
    verified = await anyio.to_thread.run_sync(check, limiter=gate.checks)
    raw = await anyio.to_thread.run_sync(open_, verified)
    return raw, verified.account


async def _end_session(rt: Runtime, raw: str | None) -> None:
    if not raw:
        return

    def drop() -> None:
        with session_scope(rt.sessions) as session:
            logout(session, raw)

    await anyio.to_thread.run_sync(drop)


@router.post("/auth/login", response_model=Me)
async def sign_in(
    body: Credentials, request: Request, response: Response, rt: Runtime = Depends(runtime)
) -> Me:
    _accounts(rt)
    raw, account = await _sign_in(
        rt, _gate(request), body.username, body.password, _client(request)
    )
    await _end_session(rt, session_cookie(request.headers))  # the browser's earlier one, if any
    set_cookie(request, response, raw)
    return Me(name=account.name, admin=account.is_admin, mode="accounts")


@router.post("/auth/logout", response_model=Done)
async def sign_out(request: Request, response: Response, rt: Runtime = Depends(runtime)) -> Done:
    _accounts(rt)
    await _end_session(rt, session_cookie(request.headers))
    response.delete_cookie(COOKIE, path="/")
    return Done()


@router.get("/auth/me", response_model=Me)
def me(request: Request, rt: Runtime = Depends(runtime)) -> Me:
    if not accounts_mode(rt):
        return Me(name="local", admin=True, mode="none")
    found = _signed_in(request)
    return Me(name=found.user.name, admin=found.user.is_admin, mode="accounts")


@router.post("/auth/password", response_model=PasswordChanged)
async def change_password(
    body: PasswordChange, request: Request, response: Response, rt: Runtime = Depends(runtime)
) -> PasswordChanged:
    _accounts(rt)
    who = _browser(request)
    client, gate = _client(request), _gate(request)

    def change() -> Renewed:
        try:  # the current password is checked like a sign-in: throttled, and alike
            authenticate(rt.sessions, who.user.name, body.current, client, throttle=gate.throttle)
        except WrongCredentials:
            raise WrongCurrentPassword() from None
        with session_scope(rt.sessions) as session:  # hashed before its first statement
            return renew_password(
                session, who.user.name, body.new, revoke_tokens=body.revoke_tokens
            )

    renewed = await anyio.to_thread.run_sync(change, limiter=gate.checks)
    set_cookie(request, response, renewed.session)
    return PasswordChanged(tokens_revoked=renewed.tokens_revoked)


@router.post("/tokens", response_model=CreatedToken, status_code=201)
def new_token(body: NewToken, request: Request, rt: Runtime = Depends(runtime)) -> CreatedToken:
    _accounts(rt)
    who = _browser(request)
    with session_scope(rt.sessions) as session:
        raw, info = create_token(
            session, who.user.id, body.name, set(body.scopes), body.expires_days
        )
    return CreatedToken(token=raw, **TokenView.of(info).model_dump())


@router.get("/tokens", response_model=TokenList)
def tokens(request: Request, rt: Runtime = Depends(runtime)) -> TokenList:
    _accounts(rt)
    who = _browser(request)
    with read_scope(rt.sessions) as session:
        return TokenList(tokens=[TokenView.of(t) for t in list_tokens(session, who.user.id)])


@router.delete("/tokens/{token_id}", response_model=Done)
def revoke(token_id: RowId, request: Request, rt: Runtime = Depends(runtime)) -> Done:
    _accounts(rt, f"There is no token {token_id}")
    who = _browser(request)
    with session_scope(rt.sessions) as session:
        if not revoke_token(session, who.user.id, token_id):
            raise NotFound(f"There is no token {token_id} on this account.")
    return Done()
