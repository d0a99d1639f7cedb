"""Playing: turns (JSON or server-sent events), retry, takes, undo/redo, edit, delete, fork,
branches, the tree and Insights.

A turn answers in one of two shapes, chosen by the ``Accept`` header:

- JSON (default): ``200 {"action", "reply", "insights"}`` once the reply is
  complete; a model failure is a 502/504 whose error says the action is saved,
  a reply that could not be saved (the database stayed busy) a 503 with
  ``Retry-After``, and an error after the reply was written carries its text
  (``reply_text``) in the error.
- ``text/event-stream``: events ``action`` (the saved player action), ``chunk``
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
from typing import Any

from fastapi import APIRouter, Body, Depends, Query, Request
from fastapi.responses import StreamingResponse
from sqlalchemy.orm import Session

from talekeeper.bootstrap import Runtime
from talekeeper.core.errors import NotFound
from talekeeper.services.limits import MAX_ID
from talekeeper.services.models import ModelSet
from talekeeper.services.tree import Story, action_adventure, action_view
from talekeeper.services.turns import Pending
from talekeeper.web.deps import DB, RowId, Strict, adventure_story, runtime, user_id
from talekeeper.web.errors import answer
from talekeeper.web.streaming import TurnStreams

router = APIRouter(tags=["story"])

MAX_PAGE = 500  # actions per page of the story


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
            return event.data
        if event.kind == "error" and event.error is not None:
            details = {k: v for k, v in event.data.items() if k != "error"}
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


@router.post("/api/adventures/{adventure_id}/actions")
async def take_turn(
    adventure_id: RowId,
    request: Request,
    body: TurnIn,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> Any:
    models = await _models(rt, uid)
    pending = await asyncio.to_thread(
        rt.turns.begin, adventure_id, uid, body.type, body.text, models
    )
    return await _respond(request, rt, pending, models)


@router.post("/api/adventures/{adventure_id}/retry")
async def retry(
    adventure_id: RowId,
    request: Request,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> Any:
    models = await _models(rt, uid)
    pending = await asyncio.to_thread(rt.turns.begin_retry, adventure_id, uid, models)
    return await _respond(request, rt, pending, models)


@router.post("/api/adventures/{adventure_id}/insights/dry-run")
async def dry_run(
    adventure_id: RowId,
    body: TurnIn = Body(TurnIn(type="continue")),
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> dict[str, Any]:
    models = await _models(rt, uid)
    return await rt.turns.dry_run(adventure_id, uid, models, body.type, body.text)


@router.get("/api/actions/{action_id}/insights")
def read_insights(action_id: RowId, story: Story = Depends(action_story)) -> dict[str, Any]:
    return story.insights(action_id)


# -- the story --------------------------------------------------------------------------


@router.get("/api/adventures/{adventure_id}/actions")
def read_story(
    limit: int = Query(100, ge=1, le=MAX_PAGE),
    before_depth: int | None = Query(
        None, ge=0, le=MAX_ID, description="only actions above this depth"
    ),
    story: Story = Depends(adventure_story),
) -> dict[str, Any]:
    """The current path, a page at a time: the newest ``limit`` actions, oldest first."""
    rows = story.repo.newest(story.lineage(), limit + 1, below_depth=before_depth)
    more = len(rows) > limit
    rows = rows[:limit][::-1]
    with_insights = {s.action_id for s in story.repo.insights_for([r.id for r in rows])}
    actions = []
    for row in rows:
        view = action_view(row)
        view["has_insights"] = row.id in with_insights
        actions.append(view)
    head = story.head_view()
    if head is not None and actions and actions[-1]["id"] == head["id"]:
        actions[-1]["takes"] = head["takes"]
    return {"actions": actions, "more_before": more, "branch_id": story.branch.id}


def _state(story: Story, **extra: Any) -> dict[str, Any]:
    return {**extra, **story.state()}


@router.post("/api/adventures/{adventure_id}/undo")
def undo(
    story: Story = Depends(adventure_story),
) -> dict[str, Any]:
    return _state(story, undone=action_view(story.undo()))


@router.post("/api/adventures/{adventure_id}/redo")
def redo(
    story: Story = Depends(adventure_story),
) -> dict[str, Any]:
    return _state(story, redone=action_view(story.redo()))


@router.get("/api/adventures/{adventure_id}/takes")
def takes(
    story: Story = Depends(adventure_story),
) -> dict[str, Any]:
    return {"takes": [action_view(t) for t in story.takes()]}


@router.post("/api/adventures/{adventure_id}/switch-take")
def switch_take(
    body: TakeIn,
    story: Story = Depends(adventure_story),
) -> dict[str, Any]:
    story.switch_take(body.take)
    return _state(story)


@router.patch("/api/actions/{action_id}")
def edit_action(
    action_id: RowId, body: TextIn, story: Story = Depends(action_story)
) -> dict[str, Any]:
    return action_view(story.edit(action_id, body.text))


@router.delete("/api/actions/{action_id}")
def delete_action(action_id: RowId, story: Story = Depends(action_story)) -> dict[str, Any]:
    removed = story.delete(action_id)
    return _state(story, deleted=[r.id for r in removed])


@router.post("/api/actions/{action_id}/fork", status_code=201)
def fork(
    action_id: RowId,
    body: ForkIn = Body(ForkIn()),
    story: Story = Depends(action_story),
) -> dict[str, Any]:
    branch = story.fork(action_id, body.name)
    return _state(story, branch={"id": branch.id, "name": branch.name})


@router.post("/api/adventures/{adventure_id}/switch-branch")
def switch_branch(
    body: BranchIn,
    story: Story = Depends(adventure_story),
) -> dict[str, Any]:
    story.switch_branch(body.branch_id)
    return _state(story)


@router.get("/api/adventures/{adventure_id}/tree")
def tree(story: Story = Depends(adventure_story)) -> dict[str, Any]:
    return story.tree()
