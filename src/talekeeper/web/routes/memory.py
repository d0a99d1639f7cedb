"""The memory system over JSON: the Memory Bank, the Story Summary, the Scene and the
state of background work.

Like every route, a request is one unit of work (``web.deps.db``): it commits when the
handler returns and rolls back if it raised. Bodies are ``Strict`` models and ids are
``RowId``s; lengths and emptiness are checked by the services. A memory of someone
else's adventure is "not found", like an unknown id. Every answer is the service's
dataclass, read by its response model (``web.schemas.memory``); the state of background
work is validated into ``DerivedOut`` from the service's mapping.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Response
from sqlalchemy.orm import Session

from talekeeper.bootstrap import Runtime
from talekeeper.services.memory import manage, summary
from talekeeper.services.memory.manage import MemorySource, MemoryUses, MemoryView
from talekeeper.services.memory.scene import Scene, set_scene
from talekeeper.services.memory.service import derived_view
from talekeeper.services.memory.summary import SummaryView
from talekeeper.services.story.access import load_adventure
from talekeeper.services.story.tree import Story
from talekeeper.services.world import secrets
from talekeeper.services.world.scene import scene_now
from talekeeper.services.world.witnessed import with_witnesses
from talekeeper.settings import NO_EMBEDDINGS
from talekeeper.web.deps import DB, RowId, Strict, adventure_story, runtime, user_id
from talekeeper.web.schemas.memory import (
    DerivedOut,
    ListedMemoryOut,
    MemoryOut,
    MemorySourceOut,
    MemoryUsesOut,
    SceneOut,
    SummaryOut,
)

router = APIRouter(tags=["memory"])


class MemoryIn(Strict):
    text: str
    pinned: bool = False


class MemoryPatch(Strict):
    text: str | None = None
    pinned: bool | None = None
    # Names (checked by the service, which says what to send); null clears the secret.
    known_by: list[str] | None = None


class SummaryIn(Strict):
    text: str


class SceneIn(Strict):
    location: str | None = None
    present: list[str] | None = None
    summary: str | None = None
    clear: bool | None = None


# -- memories -----------------------------------------------------------------------------


@router.get("/api/adventures/{adventure_id}/memories", response_model=list[ListedMemoryOut])
def list_memories(
    include: str = Query(
        "", description="'all': also withdrawn and deleted memories, and other branches'"
    ),
    story: Story = Depends(adventure_story),
) -> list[MemoryView]:
    return with_witnesses(story, manage.listing(story, manage.include_all(include)))


@router.post("/api/adventures/{adventure_id}/memories", status_code=201, response_model=MemoryOut)
def create_memory(
    body: MemoryIn,
    story: Story = Depends(adventure_story),
    uid: int = Depends(user_id),
) -> MemoryView:
    row = manage.create(story, body.text, body.pinned, story.memory, uid)
    return manage.one_view(story.session, row)


@router.patch("/api/memories/{memory_id}", response_model=MemoryOut)
def edit_memory(
    memory_id: RowId,
    body: MemoryPatch,
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> MemoryView:
    row = manage.memory_row(session, memory_id, uid)
    secrets.edit_memory(session, row, body.model_dump(exclude_unset=True), rt.memory, uid)
    return manage.one_view(session, row)


@router.delete("/api/memories/{memory_id}", status_code=204)
def delete_memory(
    memory_id: RowId,
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> Response:
    manage.delete(session, manage.memory_row(session, memory_id, uid), rt.memory)
    return Response(status_code=204)


@router.get("/api/memories/{memory_id}/source", response_model=MemorySourceOut)
def memory_source(
    memory_id: RowId,
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> MemorySource:
    """The actions a memory was written from and the passages it is also retrieved by."""
    row = manage.memory_row(session, memory_id, uid)
    embeds = rt.user_settings(session, uid).embedding_model != NO_EMBEDDINGS
    return manage.source_view(session, row, embeds=embeds)


@router.get("/api/memories/{memory_id}/uses", response_model=MemoryUsesOut)
def memory_uses(
    memory_id: RowId,
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> MemoryUses:
    """The replies that used the memory, each marked on the current path or not."""
    row = manage.memory_row(session, memory_id, uid)
    return manage.uses_view(Story.load(session, row.adventure_id, uid, rt.memory), row)


# -- the Story Summary ----------------------------------------------------------------------


@router.get("/api/adventures/{adventure_id}/summary", response_model=SummaryOut)
def read_summary(
    adventure_id: RowId,
    session: Session = DB,
    uid: int = Depends(user_id),
) -> SummaryView:
    return summary.summary_view(session, load_adventure(session, adventure_id, uid))


@router.put("/api/adventures/{adventure_id}/summary", response_model=SummaryOut)
def edit_summary(
    adventure_id: RowId,
    body: SummaryIn,
    session: Session = DB,
    uid: int = Depends(user_id),
) -> SummaryView:
    adventure = load_adventure(session, adventure_id, uid)
    summary.edit_summary(session, adventure, body.text)
    return summary.summary_view(session, adventure)


# -- background work ----------------------------------------------------------------------


@router.get("/api/adventures/{adventure_id}/derived", response_model=DerivedOut)
def read_derived(
    adventure_id: RowId,
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> DerivedOut:
    load_adventure(session, adventure_id, uid)
    return DerivedOut.model_validate(derived_view(session, adventure_id, rt.background))


# -- the Scene ------------------------------------------------------------------------------


@router.get("/api/adventures/{adventure_id}/scene", response_model=SceneOut)
def read_scene(story: Story = Depends(adventure_story)) -> Scene:
    return scene_now(story)


@router.put("/api/adventures/{adventure_id}/scene", response_model=SceneOut)
def put_scene(body: SceneIn, story: Story = Depends(adventure_story)) -> Scene:
    """The player's scene (fields left out are empty), or ``{"clear": true}`` to hand the
    scene back to the story and its cards."""
    fields = body.model_dump(exclude_none=True)
    if fields.get("clear") is False:
        del fields["clear"]  # "clear": false asks for nothing
    set_scene(story.adventure, fields)
    story.touch()
    return scene_now(story)
