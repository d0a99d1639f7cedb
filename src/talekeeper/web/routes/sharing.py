"""Shared adventures over JSON (docs/sharing.md): the host's invites, joining by code, and
the members with their roles.

Accounts mode only: in local mode a route answers 400 saying why, once its inputs are
checked (``services.story.sharing``). Bodies are
``Strict``; a stranger's adventure, invite or member is "not found", as everywhere; a
member asking for what only the host may do gets 403 saying so.
"""

from __future__ import annotations

from fastapi import Depends, Request
from fastapi.routing import APIRouter
from sqlalchemy.orm import Session

from talekeeper.bootstrap import Runtime
from talekeeper.services.common.vocabulary import MemberRole
from talekeeper.services.story import adventures, sharing
from talekeeper.services.story.adventures import AdventureView
from talekeeper.services.story.sharing import Asker, InviteView, MemberView, NewInvite
from talekeeper.services.story.tree import Story
from talekeeper.settings import AuthMode
from talekeeper.web.deps import DB, RowId, Strict, runtime, user_id
from talekeeper.web.schemas.adventures import AdventureOut
from talekeeper.web.schemas.sharing import InviteOut, MemberOut, NewInviteOut

router = APIRouter(tags=["sharing"])


def sharer(uid: int = Depends(user_id), rt: Runtime = Depends(runtime)) -> Asker:
    return Asker(uid, rt.settings.auth == AuthMode.ACCOUNTS)


class InviteIn(Strict):
    role: MemberRole = MemberRole.PLAYER
    expires_in_hours: int | None = None
    uses: int | None = None


class PersonaIn(Strict):
    name: str
    pronouns: str | None = None
    description: str | None = None


class JoinIn(Strict):
    persona: PersonaIn


class RoleIn(Strict):
    role: MemberRole


@router.post("/api/adventures/{adventure_id}/invites", response_model=NewInviteOut, status_code=201)
def make_invite(
    adventure_id: RowId,
    request: Request,
    body: InviteIn | None = None,
    session: Session = DB,
    who: Asker = Depends(sharer),
) -> NewInvite:
    body = body or InviteIn()
    hours = sharing.INVITE_HOURS if body.expires_in_hours is None else body.expires_in_hours
    uses = 1 if body.uses is None else body.uses
    made = sharing.invite(session, adventure_id, who, body.role, hours, uses)
    base = str(request.base_url).rstrip("/")
    return NewInvite(made.id, made.code, base + made.url, made.expires_at)


@router.get("/api/adventures/{adventure_id}/invites", response_model=list[InviteOut])
def list_invites(
    adventure_id: RowId, session: Session = DB, who: Asker = Depends(sharer)
) -> list[InviteView]:
    return sharing.invites(session, adventure_id, who)


@router.delete("/api/adventures/{adventure_id}/invites/{invite_id}", response_model=InviteOut)
def revoke_invite(
    adventure_id: RowId, invite_id: RowId, session: Session = DB, who: Asker = Depends(sharer)
) -> InviteView:
    return sharing.revoke(session, adventure_id, invite_id, who)


@router.post("/api/invites/{code}/join", response_model=AdventureOut)
def join(
    code: str,
    body: JoinIn,
    session: Session = DB,
    who: Asker = Depends(sharer),
    rt: Runtime = Depends(runtime),
) -> AdventureView:
    adventure_id = sharing.join(session, code, who, body.persona.model_dump())
    story = Story.load(session, adventure_id, who.uid, rt.memory, MemberRole.VIEWER)
    return adventures.adventure_view(story)


@router.get("/api/adventures/{adventure_id}/members", response_model=list[MemberOut])
def list_members(
    adventure_id: RowId, session: Session = DB, who: Asker = Depends(sharer)
) -> list[MemberView]:
    return sharing.members(session, adventure_id, who)


@router.patch("/api/adventures/{adventure_id}/members/{user_id}", response_model=list[MemberOut])
def change_role(
    adventure_id: RowId,
    user_id: RowId,
    body: RoleIn,
    session: Session = DB,
    who: Asker = Depends(sharer),
) -> list[MemberView]:
    return sharing.set_role(session, adventure_id, user_id, body.role, who)


@router.delete("/api/adventures/{adventure_id}/members/{user_id}", response_model=list[MemberOut])
def remove_member(
    adventure_id: RowId, user_id: RowId, session: Session = DB, who: Asker = Depends(sharer)
) -> list[MemberView]:
    """The host removes a member, or a member leaves; the members left (a member who left
    sees none: they are no longer one)."""
    sharing.remove(session, adventure_id, user_id, who)
    return sharing.members(session, adventure_id, who) if user_id != who.uid else []


@router.delete("/api/adventures/{adventure_id}/members", response_model=list[MemberOut])
def end_sharing(
    adventure_id: RowId, session: Session = DB, who: Asker = Depends(sharer)
) -> list[MemberView]:
    """Every member removed and every invite gone: the host alone is left."""
    sharing.end(session, adventure_id, who)
    return sharing.members(session, adventure_id, who)
