"""Request-scoped dependencies and the types every route shares.

A request that uses ``db`` commits when the handler returns and rolls back if
it raised: only this entry point owns the transaction. A safe method (GET,
HEAD, OPTIONS) gets a read unit of work, which never waits for a writer and
cannot write; any other method a write unit, which takes the write lock at its
first statement (``storage.db``), so a busy database is a 503 before anything
is written, never a half-done change. Routes take it as
``session: Session = DB``, whose "function" scope commits before the response
is sent (FastAPI's default scope for a dependency with yield would commit after
it, and a page that reloads at once could read the story from before the change). Ids in paths are
``RowId``s, whole numbers the database can hold, so an absurd id is a 400,
never a driver overflow; request bodies are ``Strict`` models that refuse
unknown fields (a typo such as ``"titel"`` is a 400 that names it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Path, Request
from pydantic import BaseModel, ConfigDict
from sqlalchemy.orm import Session

from talekeeper.bootstrap import Runtime
from talekeeper.core.errors import TalekeeperError
from talekeeper.services.accounts import Principal
from talekeeper.services.common.limits import MAX_ID
from talekeeper.services.common.units import read_scope, session_scope
from talekeeper.services.common.vocabulary import MemberRole
from talekeeper.services.story.tree import Story
from talekeeper.web.guard import SAFE_METHODS  # the methods that change nothing

RowId = Annotated[int, Path(ge=1, le=MAX_ID)]


class NotSignedIn(TalekeeperError):
    status = 401
    code = "not_signed_in"

    def __init__(self) -> None:
        super().__init__("Sign in first (POST /api/auth/login), or send an API token.")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def runtime(request: Request) -> Runtime:
    rt: Runtime = request.app.state.runtime
    return rt


def db(request: Request) -> Iterator[Session]:
    scope = read_scope if request.method in SAFE_METHODS else session_scope
    with scope(runtime(request).sessions) as session:
        yield session


# The one way routes ask for the request's session (see the module docstring).
DB = Depends(db, scope="function")


def principal(request: Request) -> Principal | None:
    """Who the request acts as in accounts mode (``web/auth.py`` put it there); None in
    local mode."""
    found: Principal | None = getattr(request.state, "principal", None)
    return found


def user_id(request: Request) -> int:
    """The acting user: the signed-in account in accounts mode, else the local user."""
    found = principal(request)
    if found is not None:
        return found.user.id
    uid: int | None = getattr(request.app.state, "local_user_id", None)
    if uid is None:  # accounts mode, and the auth layer let nobody through to here
        raise NotSignedIn()
    return uid


def adventure_story(
    adventure_id: RowId,
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> Story:
    """The adventure's tree, in the request's unit of work, for its host."""
    return Story.load(session, adventure_id, uid, rt.memory)


def followed_story(
    adventure_id: RowId,
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> Story:
    """The adventure's tree, for any of its members to read (docs/sharing.md)."""
    return Story.load(session, adventure_id, uid, rt.memory, MemberRole.VIEWER)
