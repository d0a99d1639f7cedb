"""The administrator's API (``/api/admin/…``) and page (``/admin``), in accounts mode.

Invariants:

- Every ``/api/admin/`` request needs the ``admin`` scope, which the auth layer
  (``web/auth.py``) checks before any route here runs: a player, or a token without
  ``admin``, is a 403 whatever the ids. The page checks the same scope itself.
- No answer here holds anything of a story: accounts, counts and sums, sessions and
  tokens as their metadata (never a secret). An administrator manages accounts; another
  player's adventures stay theirs (``services.accounts.admin``).
- An administrator may not disable themselves, drop their own admin flag or reset their
  own password here (409 ``own_account``), so a server always keeps an administrator who
  can sign in.
- A change with several parts (PATCH) is one unit of work: all of it or none of it. A new
  password is hashed before that unit's first statement; it revokes the account's API
  tokens too unless the request says ``"revoke_tokens": false`` (which goes only with a
  password: alone it is a 400).
- Unknown ids are 404. In local mode every route here is a 404 that says there are no
  accounts, and the page is the not-found page.
"""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse
from pydantic import Field
from sqlalchemy.orm import Session

from talekeeper.bootstrap import Runtime
from talekeeper.core.errors import InvalidInput, NotFound
from talekeeper.services.accounts import (
    Account,
    Principal,
    Scope,
    SessionInfo,
    UnknownUser,
    UserUsage,
    account_by_id,
    create_user,
    reset_password,
    revoke_any_token,
    revoke_sessions,
    sessions_of,
    set_admin,
    set_user_disabled,
    tokens_of,
    usage,
)
from talekeeper.services.common.units import read_scope, session_scope
from talekeeper.web.auth import accounts_mode
from talekeeper.web.deps import NotSignedIn, RowId, Strict, principal, runtime
from talekeeper.web.deps import user_id as acting_user
from talekeeper.web.routes.auth import Done, TokenList, TokenView
from talekeeper.web.routes.pages import Viewer, render, viewer

router = APIRouter()


class NewUser(Strict):
    name: str = Field(max_length=200)
    password: str = Field(max_length=2000)
    admin: bool = False


class UserChange(Strict):
    disabled: bool | None = None
    admin: bool | None = None
    password: str | None = Field(default=None, max_length=2000)
    revoke_tokens: bool = True  # with a password: the account's API tokens go too


class UserView(Strict):
    id: int
    name: str
    admin: bool
    disabled: bool
    created_at: datetime
    adventures: int
    turns: int
    ai_calls: int
    tokens_in: int
    tokens_out: int
    sessions: int
    api_tokens: int
    last_seen: datetime | None

    @classmethod
    def of(cls, row: UserUsage) -> UserView:
        return cls.model_validate(
            {
                "id": row.id,
                "name": row.name,
                "admin": row.is_admin,
                "disabled": row.disabled,
                "created_at": row.created_at,
                **row.figures._asdict(),
            }
        )


class UserList(Strict):
    users: list[UserView]


class SessionView(Strict):
    id: int
    created_at: datetime
    expires_at: datetime
    last_used_at: datetime
    current: bool  # the browser this request came from

    @classmethod
    def of(cls, info: SessionInfo, current: int | None) -> SessionView:
        return cls(
            id=info.id,
            created_at=info.created_at,
            expires_at=info.expires_at,
            last_used_at=info.last_used_at,
            current=info.id == current,
        )


class SessionList(Strict):
    sessions: list[SessionView]


class Revoked(Strict):
    revoked: int


def _accounts(rt: Runtime, what: str = "There are no accounts to manage") -> None:
    if not accounts_mode(rt):
        raise NotFound(f"{what}: this Talekeeper runs in local mode, without accounts.")


def _admin(request: Request) -> Principal:
    """The acting administrator (the auth layer has checked the scope already)."""
    found = principal(request)
    if found is None:
        raise NotSignedIn()
    return found


def _view(session: Session, uid: int) -> UserView:
    rows = usage(session, user_id=uid)
    if not rows:
        raise UnknownUser(f"There is no account with id {uid}: reload the list of users.")
    return UserView.of(rows[0])


@router.get("/api/admin/users", response_model=UserList)
def users(request: Request, rt: Runtime = Depends(runtime)) -> UserList:
    _accounts(rt)
    _admin(request)
    with read_scope(rt.sessions) as session:
        return UserList(users=[UserView.of(row) for row in usage(session)])


@router.post("/api/admin/users", response_model=UserView, status_code=201)
def add_user(body: NewUser, request: Request, rt: Runtime = Depends(runtime)) -> UserView:
    _accounts(rt)
    _admin(request)
    with session_scope(rt.sessions) as session:
        made = create_user(session, body.name, body.password, admin=body.admin)
        return _view(session, made.id)


def _change(rt: Runtime, target: Account, body: UserChange, by: Account) -> UserView:
    """Apply every part of ``body`` in one unit of work; the password first, so it is
    hashed before the unit's first statement."""
    with session_scope(rt.sessions) as session:
        if body.password is not None:
            reset_password(
                session, target.name, body.password, by=by, revoke_tokens=body.revoke_tokens
            )
        if body.admin is not None:
            set_admin(session, target.name, body.admin, by=by)
        if body.disabled is not None:
            set_user_disabled(session, target.name, body.disabled, by=by)
        return _view(session, target.id)


@router.patch("/api/admin/users/{user_id}", response_model=UserView)
def change_user(
    user_id: RowId, body: UserChange, request: Request, rt: Runtime = Depends(runtime)
) -> UserView:
    _accounts(rt, f"There is no user {user_id}")
    by = _admin(request).user
    if body.password is None and "revoke_tokens" in body.model_fields_set:
        raise InvalidInput(
            "'revoke_tokens' goes with a new 'password': send both, or revoke tokens one by "
            "one (DELETE /api/admin/tokens/{id})."
        )
    if body.disabled is None and body.admin is None and body.password is None:
        raise InvalidInput("Say what to change: 'disabled', 'admin' or 'password'.")
    with read_scope(rt.sessions) as session:
        target = account_by_id(session, user_id)
    return _change(rt, target, body, by)


@router.get("/api/admin/users/{user_id}/sessions", response_model=SessionList)
def user_sessions(user_id: RowId, request: Request, rt: Runtime = Depends(runtime)) -> SessionList:
    _accounts(rt, f"There is no user {user_id}")
    current = _admin(request).session_id
    with read_scope(rt.sessions) as session:
        found = sessions_of(session, user_id)
    return SessionList(sessions=[SessionView.of(info, current) for info in found])


@router.delete("/api/admin/users/{user_id}/sessions", response_model=Revoked)
def end_sessions(user_id: RowId, request: Request, rt: Runtime = Depends(runtime)) -> Revoked:
    _accounts(rt, f"There is no user {user_id}")
    _admin(request)
    with session_scope(rt.sessions) as session:
        return Revoked(revoked=revoke_sessions(session, user_id))


@router.get("/api/admin/users/{user_id}/tokens", response_model=TokenList)
def user_tokens(user_id: RowId, request: Request, rt: Runtime = Depends(runtime)) -> TokenList:
    _accounts(rt, f"There is no user {user_id}")
    _admin(request)
    with read_scope(rt.sessions) as session:
        return TokenList(tokens=[TokenView.of(info) for info in tokens_of(session, user_id)])


@router.delete("/api/admin/tokens/{token_id}", response_model=Done)
def revoke(token_id: RowId, request: Request, rt: Runtime = Depends(runtime)) -> Done:
    _accounts(rt, f"There is no token {token_id}")
    _admin(request)
    with session_scope(rt.sessions) as session:
        if not revoke_any_token(session, token_id):
            raise NotFound(f"There is no token {token_id}: reload the list of tokens.")
    return Done()


@router.get("/admin", response_class=HTMLResponse, include_in_schema=False)
def admin_page(
    request: Request,
    rt: Runtime = Depends(runtime),
    uid: int = Depends(acting_user),
    account: Viewer | None = Depends(viewer),
) -> HTMLResponse:
    found = principal(request)
    if found is None or Scope.ADMIN not in found.scopes:
        # A player learns only that there is no such page, as at any unknown address.
        return render(
            rt,
            uid,
            "message.html",
            404,
            heading="No such page",
            message="There is nothing at /admin."
            if found is not None
            else "This Talekeeper runs in local mode: there are no accounts to manage.",
            account=account,
        )
    return render(rt, uid, "admin.html", nav="admin", account=account)
