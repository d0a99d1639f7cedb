"""Playing: turns (JSON or server-sent events), retry, takes, undo/redo, edit, delete, fork,
branches, the tree and Insights.

A turn answers in one of two shapes, chosen by the ``Accept`` header:

- JSON (default): ``200 {"action", "reply", "insights"}`` once the reply is
  complete; a model failure is a 502/504 whose error says the action is saved,
  a reply that could not be saved (the database stayed busy) a 503 with
  ``Retry-After``, and an error after the reply was written carries its text
  (``reply_text``) in the error.
- ``text/event-stream``: events ``queued`` (``{"ahead"}``: how many turns of the
  adventure go before this one, sent while it waits), ``action`` (the saved player
  action), ``chunk``
  (``{"text"}`` pieces as they are generated), then always ``reply`` or
  ``error`` (with the same fields as the JSON error); a ``: heartbeat`` comment
  while the turn is silent. The turn is detached from the connection
  (``web/streaming.py``): a client that leaves does not stop it, and the reply is
  saved for the next read of the story.

Everything that can be refused (bad input, unknown ids, a retry with nothing
to retry) is refused before the stream starts, as a JSON 4xx. Ids and depths
are bounded like every id (``RowId``, ``MAX_ID``), so none reaches the database
as an integer it cannot hold.
"""

from __future__ import annotations

import asyncio
from typing import Any, TypeVar

from fastapi import APIRouter, Body, Depends, Query, Request
from fastapi.responses import StreamingResponse
from sqlalchemy.orm import Session

from talekeeper.bootstrap import Runtime
from talekeeper.core.errors import NotFound
from talekeeper.services.common.limits import MAX_ID
from talekeeper.services.common.units import read_scope
from talekeeper.services.endpoints.models import ModelSet
from talekeeper.services.prompt import insights
from talekeeper.services.prompt.insights import Snapshot
from talekeeper.services.story import sharing
from talekeeper.services.story.tree import Story, action_adventure
from talekeeper.services.story.turns import Pending
from talekeeper.services.story.view import ActionView, Author, StoryPage, TreeView
from talekeeper.services.world import derive as world
from talekeeper.web.deps import (
    DB,
    RowId,
    Strict,
    adventure_story,
    followed_story,
    runtime,
    user_id,
)
from talekeeper.web.errors import answer
from talekeeper.web.schemas.story import (
    ActionOut,
    BranchRef,
    DeletedOut,
    ForkedOut,
    RedoneOut,
    StateOut,
    StoryPageOut,
    TakesOut,
    TreeOut,
    TurnOut,
    UndoneOut,
    event_json,
)
from talekeeper.web.streaming import TurnStreams

router = APIRouter(tags=["story"])

T = TypeVar("T", bound=StateOut)

MAX_PAGE = 500  # actions per page of the story
# With ``Accept: text/event-stream`` a turn answers as events (the module's docstring).
STREAM = {
    "type": "string",
    "description": "server-sent events: queued ({ahead}) while other turns go first, "
    "action (the saved action), chunk ({text})..., then reply (as the JSON answer) or error",
}


class TurnIn(Strict):
    type: str = "do"
    text: str = ""


class TextIn(Strict):
    text: str


class ForkIn(Strict):
    name: str = ""


class TakeIn(Strict):
    take: int


class BranchIn(Strict):
    branch_id: int


async def _models(rt: Runtime, uid: int) -> ModelSet:
    settings = await asyncio.to_thread(rt.settings_for, uid)
    return rt.models_for(settings, uid)


def _wants_stream(request: Request) -> bool:
    return "text/event-stream" in request.headers.get("accept", "")


async def _respond(request: Request, rt: Runtime, pending: Pending, models: ModelSet) -> Any:
    events = rt.turns.run(pending, models)
    if _wants_stream(request):
        streams: TurnStreams = request.app.state.streams
        headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
        return StreamingResponse(
            streams.stream(events), media_type="text/event-stream", headers=headers
        )
    async for event in events:
        if event.kind == "reply":
            return event_json(event.data)
        if event.kind == "error" and event.error is not None:
            details = {k: v for k, v in event_json(event.data).items() if k != "error"}
            return answer(event.error, event.data["error"]["message"], **details)
    raise AssertionError("a turn always ends with a reply or an error")  # pragma: no cover


def action_story(
    action_id: RowId,
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> Story:
    """The tree of the adventure that ``action_id`` belongs to."""
    adventure_id = action_adventure(session, action_id)
    missing = NotFound(f"There is no action {action_id}.")
    if adventure_id is None:
        raise missing
    try:
        return Story.load(session, adventure_id, uid, rt.memory)
    except NotFound:  # someone else's action reads as no action at all, not as their story
        raise missing from None


@router.post(
    "/api/adventures/{adventure_id}/actions",
    response_model=TurnOut,
    response_model_exclude_unset=True,  # an action's takes, an Insights key that does not apply
    responses={200: {"content": {"text/event-stream": {"schema": STREAM}}}},
)
async def take_turn(
    adventure_id: RowId,
    request: Request,
    body: TurnIn,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> Any:
    # The host's settings, models and usage, whoever of its players acts (docs/sharing.md).
    host, author = await asyncio.to_thread(_taker, rt, adventure_id, uid)
    models = await _models(rt, host)
    pending = await asyncio.to_thread(
        rt.turns.begin, adventure_id, host, body.type, body.text, models, author
    )
    return await _respond(request, rt, pending, models)


def _taker(rt: Runtime, adventure_id: int, uid: int) -> tuple[int, Author | None]:
    with read_scope(rt.sessions) as session:
        return sharing.turn_taker(session, adventure_id, uid)


@router.post(
    "/api/adventures/{adventure_id}/retry",
    response_model=TurnOut,
    response_model_exclude_unset=True,  # an action's takes, an Insights key that does not apply
    responses={200: {"content": {"text/event-stream": {"schema": STREAM}}}},
)
async def retry(
    adventure_id: RowId,
    request: Request,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> Any:
    host = await asyncio.to_thread(_changer, rt, adventure_id, uid, None)
    models = await _models(rt, host)
    pending = await asyncio.to_thread(rt.turns.begin_retry, adventure_id, host, models, uid)
    return await _respond(request, rt, pending, models)


def _changer(rt: Runtime, adventure_id: int, uid: int, action_id: int | None) -> int:
    with read_scope(rt.sessions) as session:
        return sharing.may_change(session, adventure_id, uid, action_id)


# Insights answer the stored document itself: ``Snapshot`` is a versioned format, declared
# once, and the API shows it as it was stored (an older snapshot's keys included).
@router.post(
    "/api/adventures/{adventure_id}/insights/dry-run",
    response_model=Snapshot,
    response_model_exclude_unset=True,  # a key that does not apply stays absent
)
async def dry_run(
    adventure_id: RowId,
    body: TurnIn = Body(TurnIn(type="continue")),
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> Snapshot:
    models = await _models(rt, uid)
    return await rt.turns.dry_run(adventure_id, uid, models, body.type, body.text)


@router.get(
    "/api/actions/{action_id}/insights",
    response_model=Snapshot,
    response_model_exclude_unset=True,  # a snapshot is answered with the keys it was stored with
)
def read_insights(action_id: RowId, story: Story = Depends(action_story)) -> Snapshot:
    return insights.of_action(story, action_id)


# -- the story --------------------------------------------------------------------------


@router.get("/api/adventures/{adventure_id}/actions", response_model=StoryPageOut)
def read_story(
    limit: int = Query(100, ge=1, le=MAX_PAGE),
    before_depth: int | None = Query(
        None, ge=0, le=MAX_ID, description="only actions above this depth"
    ),
    story: Story = Depends(followed_story),
) -> StoryPage:
    """The current path, a page at a time: the newest ``limit`` actions, oldest first
    (for every member of a shared adventure)."""
    return story.page(limit, before_depth)


def _state(model: type[T], story: Story, **extra: object) -> T:
    """Where the player stands after a change, with what the change names."""
    state = story.state()
    fields = {"awaiting_reply": state.awaiting_reply, "can_redo": state.can_redo}
    return model.model_validate(
        {"head": state.head, "branch_id": state.branch_id, **fields, **extra}
    )


@router.post("/api/adventures/{adventure_id}/undo", response_model=UndoneOut)
def undo(story: Story = Depends(adventure_story)) -> UndoneOut:
    return _state(UndoneOut, story, undone=ActionView.of(story.undo()))


@router.post("/api/adventures/{adventure_id}/redo", response_model=RedoneOut)
def redo(story: Story = Depends(adventure_story)) -> RedoneOut:
    return _state(RedoneOut, story, redone=ActionView.of(story.redo()))


@router.get("/api/adventures/{adventure_id}/takes", response_model=TakesOut)
def takes(story: Story = Depends(adventure_story)) -> TakesOut:
    return TakesOut.model_validate({"takes": [ActionView.of(t) for t in story.takes()]})


@router.post("/api/adventures/{adventure_id}/switch-take", response_model=StateOut)
def switch_take(body: TakeIn, story: Story = Depends(adventure_story)) -> StateOut:
    story.switch_take(body.take)
    return _state(StateOut, story)


def editable_story(
    action_id: RowId,
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> Story:
    """The tree of the adventure that ``action_id`` belongs to, when ``uid`` may edit the
    action: its host, or a player their own newest action (docs/sharing.md)."""
    adventure_id = action_adventure(session, action_id)
    missing = NotFound(f"There is no action {action_id}.")
    if adventure_id is None:
        raise missing
    try:
        host = sharing.may_change(session, adventure_id, uid, action_id)
    except NotFound:  # someone else's action reads as no action at all, not as their story
        raise missing from None
    return Story.load(session, adventure_id, host, rt.memory)


@router.patch("/api/actions/{action_id}", response_model=ActionOut)
def edit_action(
    action_id: RowId, body: TextIn, story: Story = Depends(editable_story)
) -> ActionView:
    row = story.edit(action_id, body.text)
    world.rederive(story, row)  # what the new text states of the world
    return ActionView.of(row)


@router.delete("/api/actions/{action_id}", response_model=DeletedOut)
def delete_action(action_id: RowId, story: Story = Depends(action_story)) -> DeletedOut:
    removed = story.delete(action_id)
    return _state(DeletedOut, story, deleted=[r.id for r in removed])


@router.post("/api/actions/{action_id}/fork", status_code=201, response_model=ForkedOut)
def fork(
    action_id: RowId,
    body: ForkIn = Body(ForkIn()),
    story: Story = Depends(action_story),
) -> ForkedOut:
    branch = story.fork(action_id, body.name)
    return _state(ForkedOut, story, branch=BranchRef(id=branch.id, name=branch.name))


@router.post("/api/adventures/{adventure_id}/switch-branch", response_model=StateOut)
def switch_branch(body: BranchIn, story: Story = Depends(adventure_story)) -> StateOut:
    story.switch_branch(body.branch_id)
    return _state(StateOut, story)


@router.get("/api/adventures/{adventure_id}/tree", response_model=TreeOut)
def tree(story: Story = Depends(adventure_story)) -> TreeView:
    return story.tree()
