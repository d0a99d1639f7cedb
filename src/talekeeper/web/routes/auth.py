"""Signing in and out, the password, and API tokens (accounts mode; ``web/auth.py`` decides
who a request is).

Invariants:

- Sign-in verifies in a read unit of work and writes the session in a short write unit
  of its own, so a password check (~0.2 s) never holds the database's write lock. The
  cookie ``tk_session`` is HttpOnly, SameSite=Lax, Secure when the request came over
  https, and lives as long as the session row.
- A wrong name and a wrong password are the same 401; a throttled sign-in is a 429 with
  ``Retry-After`` and a sentence saying how long to wait.
- Changing the password signs out every browser of the account (their rows are deleted)
  and gives this one a fresh session; tokens are untouched (revoke them on their own).
- A token is shown once, in the answer that creates it; only its hash is kept. Another
  account's token id is not found (404), never forbidden.
- In local mode these routes answer 404 (there is nothing to sign in to) except
  ``/api/auth/me``, which says so.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime, timedelta

import anyio
from fastapi import APIRouter, Depends, Request, Response
from pydantic import Field

from talekeeper.bootstrap import Runtime
from talekeeper.core.errors import NotFound, TalekeeperError
from talekeeper.services.accounts import (
    SESSION_DAYS,
    Account,
    LoginThrottle,
    Principal,
    Scope,
    TokenInfo,
    Verified,
    WrongCredentials,
    authenticate,
    create_token,
    list_tokens,
    logout,
    open_session,
    revoke_token,
    set_password,
)
from talekeeper.storage.db import read_scope, session_scope
from talekeeper.web.auth import COOKIE, accounts_mode, session_cookie
from talekeeper.web.deps import NotSignedIn, RowId, Strict, principal, runtime

router = APIRouter(prefix="/api")


class WrongCurrentPassword(TalekeeperError):
    status = 401
    code = "wrong_password"

    def __init__(self) -> None:
        super().__init__("The current password is not right: type it again.")


class Credentials(Strict):
    username: str = Field(max_length=200)
    password: str = Field(max_length=2000)


class PasswordChange(Strict):
    current: str = Field(max_length=2000)
    new: str = Field(max_length=2000)


class NewToken(Strict):
    name: str = Field(max_length=200)
    scopes: list[Scope] = Field(max_length=3)
    expires_days: int | None = None


class Me(Strict):
    name: str
    admin: bool
    mode: str


class Done(Strict):
    ok: bool = True


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


def _set_cookie(request: Request, response: Response, raw: str) -> None:
    response.set_cookie(
        COOKIE,
        raw,
        max_age=int(timedelta(days=SESSION_DAYS).total_seconds()),
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
        path="/",
    )


def _client(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def _throttle(request: Request) -> LoginThrottle:
    """This app's sign-in throttle (one per app, so two apps in one process, as the tests
    run them, never lock each other out)."""
    throttle: LoginThrottle = request.app.state.throttle
    return throttle


async def _sign_in(
    rt: Runtime, throttle: LoginThrottle, name: str, password: str, client: str
) -> tuple[str, Account]:
    def check() -> Verified:
        with read_scope(rt.sessions) as session:
            return authenticate(session, name, password, client, throttle=throttle)

    def open_(verified: Verified) -> str:
        with session_scope(rt.sessions) as session:
            return open_session(session, verified)

    verified = await anyio.to_thread.run_sync(check)
    raw = await anyio.to_thread.run_sync(open_, verified)
    return raw, verified.account


@router.post("/auth/login", response_model=Me)
async def sign_in(
    body: Credentials, request: Request, response: Response, rt: Runtime = Depends(runtime)
) -> Me:
    _accounts(rt)
    throttle = _throttle(request)
    raw, account = await _sign_in(rt, throttle, body.username, body.password, _client(request))
    _set_cookie(request, response, raw)
    return Me(name=account.name, admin=account.is_admin, mode="accounts")


@router.post("/auth/logout", response_model=Done)
async def sign_out(request: Request, response: Response, rt: Runtime = Depends(runtime)) -> Done:
    _accounts(rt)
    raw = session_cookie(request.headers)

    def drop() -> None:
        with session_scope(rt.sessions) as session:
            logout(session, raw or "")

    await anyio.to_thread.run_sync(drop)
    response.delete_cookie(COOKIE, path="/")
    return Done()


@router.get("/auth/me", response_model=Me)
def me(request: Request, rt: Runtime = Depends(runtime)) -> Me:
    if not accounts_mode(rt):
        return Me(name="local", admin=True, mode="none")
    found = _signed_in(request)
    return Me(name=found.user.name, admin=found.user.is_admin, mode="accounts")


@router.post("/auth/password", response_model=Done)
async def change_password(
    body: PasswordChange, request: Request, response: Response, rt: Runtime = Depends(runtime)
) -> Done:
    _accounts(rt)
    who = _signed_in(request)

    client, throttle = _client(request), _throttle(request)

    def change() -> None:
        try:  # the current password is checked like a sign-in: throttled, and alike
            with read_scope(rt.sessions) as session:
                authenticate(session, who.user.name, body.current, client, throttle=throttle)
        except WrongCredentials:
            raise WrongCurrentPassword() from None
        with session_scope(rt.sessions) as session:
            set_password(session, who.user.name, body.new)

    await anyio.to_thread.run_sync(change)
    raw, _ = await _sign_in(rt, throttle, who.user.name, body.new, client)
    _set_cookie(request, response, raw)
    return Done()


@router.post("/tokens", response_model=CreatedToken, status_code=201)
def new_token(body: NewToken, request: Request, rt: Runtime = Depends(runtime)) -> CreatedToken:
    _accounts(rt)
    who = _signed_in(request)
    with session_scope(rt.sessions) as session:
        raw, info = create_token(
            session, who.user.id, body.name, set(body.scopes), body.expires_days
        )
    return CreatedToken(token=raw, **TokenView.of(info).model_dump())


@router.get("/tokens", response_model=TokenList)
def tokens(request: Request, rt: Runtime = Depends(runtime)) -> TokenList:
    _accounts(rt)
    who = _signed_in(request)
    with read_scope(rt.sessions) as session:
        return TokenList(tokens=[TokenView.of(t) for t in list_tokens(session, who.user.id)])


@router.delete("/tokens/{token_id}", response_model=Done)
def revoke(token_id: RowId, request: Request, rt: Runtime = Depends(runtime)) -> Done:
    _accounts(rt, f"There is no token {token_id}")
    who = _signed_in(request)
    with session_scope(rt.sessions) as session:
        if not revoke_token(session, who.user.id, token_id):
            raise NotFound(f"There is no token {token_id} on this account.")
    return Done()
