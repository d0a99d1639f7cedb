"""The world over JSON (docs/world.md): the state at an action of the current path, the
path's events, and the player's own events.

Like every route, a request is one unit of work (``web.deps.db``). Bodies are ``Strict``
models; names and values are checked by the service (``services.world.events``), which
answers a 400 that says what to fix. Another user's adventure or event is "not found".
An event's secret (``known_by``) is set with the event or by a PATCH (``marks``).
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Response
from sqlalchemy.orm import Session

from talekeeper.services.common.limits import MAX_ID
from talekeeper.services.common.vocabulary import EventKind
from talekeeper.services.story.tree import Story
from talekeeper.services.world import events, marks
from talekeeper.services.world.events import EventView, GivenEvent, WorldView
from talekeeper.web.deps import DB, RowId, Strict, adventure_story, user_id
from talekeeper.web.schemas.world import EventOut, WorldOut

router = APIRouter(tags=["world"])


class EventIn(Strict):
    kind: EventKind
    subject: str | None = None
    object: str | None = None
    value: str | None = None
    known_by: list[str] | None = None  # names (checked by the service); null: no secret


class EventPatch(Strict):
    # Names (checked by the service, which says what to send); null clears the secret.
    known_by: list[str] | None


@router.get("/api/adventures/{adventure_id}/world", response_model=WorldOut)
def world(
    at: int | None = Query(
        None, ge=1, le=MAX_ID, description="an action of the current path (default: the head)"
    ),
    story: Story = Depends(adventure_story),
) -> WorldView:
    return events.world_at(story, at)


@router.get("/api/adventures/{adventure_id}/world/events", response_model=list[EventOut])
def world_events(story: Story = Depends(adventure_story)) -> list[EventView]:
    return events.path_events(story)


@router.post(
    "/api/adventures/{adventure_id}/world/events", status_code=201, response_model=EventOut
)
def add_event(body: EventIn, story: Story = Depends(adventure_story)) -> EventView:
    given = GivenEvent(body.kind, body.subject, body.object, body.value, body.known_by)
    return events.add_player_event(story, given)


@router.delete("/api/world/events/{event_id}", status_code=204, response_class=Response)
def remove_event(event_id: RowId, session: Session = DB, uid: int = Depends(user_id)) -> Response:
    marks.remove_event(session, uid, event_id)
    return Response(status_code=204)


@router.patch("/api/world/events/{event_id}", response_model=EventOut)
def mark_event(
    event_id: RowId, body: EventPatch, session: Session = DB, uid: int = Depends(user_id)
) -> EventView:
    return marks.mark_event(session, uid, event_id, body.known_by)
