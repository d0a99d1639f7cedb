"""Shared adventures over JSON (docs/sharing.md): the host's invites, joining by code, and
the members with their roles.

Accounts mode only: in local mode a route answers 400 saying why, once its inputs are
checked (``services.story.sharing``).

The feed (``GET /api/adventures/{id}/events``) is a server-sent event stream of the
adventure's changes (``services.story.feed``), read from the database every ``POLL_S``, so
it works with any number of app processes; it starts after the event named by
``Last-Event-ID`` (or ``?after=``), so a page that reconnects misses nothing. Every read
checks the reader is still a member: a removed one gets ``event: removed`` and the end.
While it follows it also says who is here and writing (``event: presence``, without an
id, when that changed; ``services.story.presence``), keeps its reader "here", and sends
the reply being written as it grows (``event: reply_text``). Bodies are
``Strict``; a stranger's adventure, invite or member is "not found", as everywhere; a
member asking for what only the host may do gets 403 saying so.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

from fastapi import Depends, Query, Request
from fastapi.responses import StreamingResponse
from fastapi.routing import APIRouter
from sqlalchemy.orm import Session

from talekeeper.bootstrap import Runtime
from talekeeper.core.errors import DatabaseBusy, InvalidInput, NotFound
from talekeeper.services.common.limits import MAX_ID
from talekeeper.services.common.units import read_scope, session_scope
from talekeeper.services.common.vocabulary import MemberRole
from talekeeper.services.story import adventures, presence, queue, sharing
from talekeeper.services.story.access import load_adventure
from talekeeper.services.story.adventures import AdventureView
from talekeeper.services.story.feed import FeedView
from talekeeper.services.story.presence import PresenceView
from talekeeper.services.story.sharing import Asker, InviteView, MemberView, NewInvite
from talekeeper.services.story.tree import Story
from talekeeper.settings import AuthMode
from talekeeper.web.deps import DB, RowId, Strict, runtime, user_id
from talekeeper.web.schemas.adventures import AdventureOut
from talekeeper.web.schemas.sharing import (
    InviteOut,
    MemberOut,
    NewInviteOut,
    PresenceOut,
    ReplyTextOut,
)
from talekeeper.web.streaming import HEARTBEAT

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


class WritingIn(Strict):
    writing: bool


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


@router.post("/api/adventures/{adventure_id}/presence", response_model=PresenceOut)
def say_writing(
    adventure_id: RowId, body: WritingIn, session: Session = DB, who: Asker = Depends(sharer)
) -> PresenceView:
    """A player's page: they are typing an action (``writing``), or stopped."""
    return presence.writing(session, adventure_id, who, body.writing)


POLL_S = 0.5  # how often a follower reads the feed: the most an event waits to be sent
PRESENCE_POLLS = 4  # who is here is read every this many polls (two seconds)
# A quiet stream sends a comment this often: proxies keep it open, and a page that was
# closed is noticed (only a write finds the connection gone) within it, so it stops being
# "here" soon after.
QUIET_S = 5.0
TOUCH_POLLS = int(presence.TOUCH_S / POLL_S)  # and the reader said to be here every this many
FEED_STREAM = {
    "type": "string",
    "description": "server-sent events, one per change of the shared adventure: id (for "
    "Last-Event-ID), event (append, reply, retry, switch_take, undo, redo, edit, delete, "
    "fork, members; removed when the reader is no longer a member) and data ({action_ids, "
    "branch_id, depth} or {change, user_id}); and, without an id, presence ({here, "
    "writing}) whenever who is here or writing changes, and reply_text ({ticket, user_id, "
    "text}: the reply being written, as far as it is) whenever it grew",
}


@router.get(
    "/api/adventures/{adventure_id}/events",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {"schema": FEED_STREAM}}}},
)
async def adventure_events(
    adventure_id: RowId,
    request: Request,
    after: int | None = Query(None, ge=0, le=MAX_ID, description="the last event seen"),
    follow: bool = Query(True, description="false: send what there is, then end"),
    who: Asker = Depends(sharer),
    rt: Runtime = Depends(runtime),
) -> StreamingResponse:
    start = after if after is not None else _last_seen(request)
    first = await asyncio.to_thread(_read, rt, adventure_id, who, start)  # refusals first
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    stream = _stream(rt, adventure_id, who, (start, first), follow)
    return StreamingResponse(stream, media_type="text/event-stream", headers=headers)


def _last_seen(request: Request) -> int:
    raw = request.headers.get("last-event-id", "0").strip() or "0"
    if not raw.isdigit() or int(raw) > MAX_ID:
        raise InvalidInput(
            f"Last-Event-ID must be the id of an event this stream sent (0 to {MAX_ID})."
        )
    return int(raw)


def _read(rt: Runtime, adventure_id: int, who: Asker, after: int) -> list[FeedView]:
    with read_scope(rt.sessions) as session:
        return sharing.feed_after(session, adventure_id, who, after)


def _follow(rt: Runtime, adventure_id: int, who: Asker, after: int) -> tuple[list[FeedView], bytes]:
    """The events after ``after``, and the reply being written as a ``reply_text`` event
    (empty bytes when none is), in one read."""
    with read_scope(rt.sessions) as session:
        events = sharing.feed_after(session, adventure_id, who, after)
        now = queue.speaking(session, adventure_id)
    if now is None:
        return events, b""
    data = ReplyTextOut.model_validate(now).model_dump_json()
    return events, f"event: reply_text\ndata: {data}\n\n".encode()


def _here(rt: Runtime, adventure_id: int, who: Asker, touch: bool) -> bytes:
    """Who is here and writing, as a ``presence`` event; ``touch``: first say the reader
    is (a write, every ``presence.TOUCH_S``; otherwise a read)."""
    scope = session_scope if touch else read_scope
    with scope(rt.sessions) as session:
        adventure = load_adventure(session, adventure_id, who.uid, MemberRole.VIEWER)
        if touch:
            presence.touch(session, adventure_id, who.uid)
            session.flush()
        view = PresenceOut.model_validate(presence.now(session, adventure))
    return f"event: presence\ndata: {view.model_dump_json()}\n\n".encode()


async def _stream(
    rt: Runtime,
    adventure_id: int,
    who: Asker,
    opened: tuple[int, list[FeedView]],
    follow: bool,
) -> AsyncIterator[bytes]:
    """The events after ``opened``'s id, starting with those already read; while it
    follows, each poll's reply being written after its events (when it grew), and who is
    here every ``PRESENCE_POLLS`` polls (when it changed)."""
    last, events = opened
    quiet, polls, shown, so_far, sent = 0.0, 0, b"", b"", b""
    while True:
        for event in events:
            data = json.dumps(event.data)
            yield f"id: {event.id}\nevent: {event.kind}\ndata: {data}\n\n".encode()
            last, quiet = event.id, 0.0
        if so_far and so_far != sent:
            yield so_far
            quiet = 0.0
        sent = so_far
        if not follow:
            return
        try:
            if polls % PRESENCE_POLLS == 0:
                touch = polls % TOUCH_POLLS == 0
                here = await asyncio.to_thread(_here, rt, adventure_id, who, touch)
                if here != shown:
                    yield here
                    shown, quiet = here, 0.0
            polls += 1
            await asyncio.sleep(POLL_S)
            quiet += POLL_S
            if quiet >= QUIET_S:
                yield HEARTBEAT
                quiet = 0.0
            events, so_far = await asyncio.to_thread(_follow, rt, adventure_id, who, last)
        except NotFound:  # removed, or sharing ended: this reader sees no more of it
            yield b"event: removed\ndata: {}\n\n"
            return
        except DatabaseBusy:  # this read waits for the next poll; the stream goes on
            events, so_far = [], sent
