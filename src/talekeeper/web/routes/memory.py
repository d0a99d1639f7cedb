"""The memory system over JSON: the Memory Bank, the Story Summary, the Scene and the
state of background work.

Like every route, a request is one unit of work (``web.deps.db``): it commits when the
handler returns and rolls back if it raised. Bodies are ``Strict`` models and ids are
``RowId``s; lengths and emptiness are checked by the services. A memory of someone
else's adventure is "not found", like an unknown id. A memory's source (the actions it
was written from and its evidence passages) is a typed ``MemorySource``.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Response
from pydantic import BaseModel
from sqlalchemy.orm import Session

from talekeeper.bootstrap import Runtime
from talekeeper.services.memory import manage, summary
from talekeeper.services.memory.manage import EvidenceState
from talekeeper.services.memory.scene import current_scene, set_scene
from talekeeper.services.memory.service import derived_view
from talekeeper.services.tree import Story, load_adventure
from talekeeper.settings import NO_EMBEDDINGS
from talekeeper.web.deps import DB, RowId, Strict, adventure_story, runtime, user_id

router = APIRouter(tags=["memory"])


class MemoryIn(Strict):
    text: str
    pinned: bool = False


class MemoryPatch(Strict):
    text: str | None = None
    pinned: bool | None = None


class SummaryIn(Strict):
    text: str


class SceneIn(Strict):
    location: str | None = None
    present: list[str] | None = None
    summary: str | None = None
    clear: bool | None = None


class MemoryOut(BaseModel):
    """A memory as the Memory Bank shows it (``manage.memory_view``)."""

    id: int
    text: str
    status: str
    pinned: bool
    authority: str
    source_start: int | None
    source_end: int | None
    use_count: int
    last_used_at: str | None
    embedded: bool
    stale: bool
    origin: str
    writer: str
    branch_id: int
    depth: int
    created_at: str
    updated_at: str
    used_by: list[int]


class SourceAction(BaseModel):
    """One action of a memory's source block, as the story shows it."""

    id: int
    type: str
    text: str
    rendered: str
    depth: int
    branch_id: int


class EvidencePassage(BaseModel):
    """A passage of the source block the memory is also retrieved by."""

    id: int
    depth: int  # the action it comes from
    text: str
    embedded: bool  # has a vector: retrieval can find the memory through it by meaning


class MemorySource(BaseModel):
    memory: MemoryOut
    branch_id: int  # the branch the source is read along
    actions: list[SourceAction]
    note: str | None = None  # only when there are no actions: why
    evidence: list[EvidencePassage]  # in story order
    evidence_state: EvidenceState
    evidence_note: str | None  # why there is no evidence (null when there is)


# -- memories -----------------------------------------------------------------------------


@router.get("/api/adventures/{adventure_id}/memories")
def list_memories(
    include: str = Query(
        "", description="'all': also withdrawn and deleted memories, and other branches'"
    ),
    story: Story = Depends(adventure_story),
) -> list[dict[str, Any]]:
    return manage.listing(story, manage.include_all(include))


@router.post("/api/adventures/{adventure_id}/memories", status_code=201)
def create_memory(
    body: MemoryIn,
    story: Story = Depends(adventure_story),
    uid: int = Depends(user_id),
) -> dict[str, Any]:
    row = manage.create(story, body.text, body.pinned, story.memory, uid)
    return manage.one_view(story.session, row)


@router.patch("/api/memories/{memory_id}")
def edit_memory(
    memory_id: RowId,
    body: MemoryPatch,
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> dict[str, Any]:
    row = manage.memory_row(session, memory_id, uid)
    manage.edit(session, row, body.model_dump(exclude_unset=True), rt.memory, uid)
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


# Unset fields stay out: ``note`` is present only when there are no actions, as before.
@router.get("/api/memories/{memory_id}/source", response_model_exclude_unset=True)
def memory_source(
    memory_id: RowId,
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> MemorySource:
    """The actions a memory was written from and the passages it is also retrieved by."""
    row = manage.memory_row(session, memory_id, uid)
    embeds = rt.user_settings(session, uid).embedding_model != NO_EMBEDDINGS
    view = manage.source_view(session, row, embeds=embeds)
    return MemorySource.model_validate(view)


@router.get("/api/memories/{memory_id}/uses")
def memory_uses(
    memory_id: RowId,
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> dict[str, Any]:
    """The replies that used the memory, each marked on the current path or not."""
    row = manage.memory_row(session, memory_id, uid)
    return manage.uses_view(Story.load(session, row.adventure_id, uid, rt.memory), row)


# -- the Story Summary ----------------------------------------------------------------------


@router.get("/api/adventures/{adventure_id}/summary")
def read_summary(
    adventure_id: RowId,
    session: Session = DB,
    uid: int = Depends(user_id),
) -> dict[str, Any]:
    return summary.summary_view(session, load_adventure(session, adventure_id, uid))


@router.put("/api/adventures/{adventure_id}/summary")
def edit_summary(
    adventure_id: RowId,
    body: SummaryIn,
    session: Session = DB,
    uid: int = Depends(user_id),
) -> dict[str, Any]:
    adventure = load_adventure(session, adventure_id, uid)
    summary.edit_summary(session, adventure, body.text)
    return summary.summary_view(session, adventure)


# -- background work ----------------------------------------------------------------------


@router.get("/api/adventures/{adventure_id}/derived")
def read_derived(
    adventure_id: RowId,
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> dict[str, Any]:
    load_adventure(session, adventure_id, uid)
    return derived_view(session, adventure_id, rt.background)


# -- the Scene ------------------------------------------------------------------------------


@router.get("/api/adventures/{adventure_id}/scene")
def read_scene(story: Story = Depends(adventure_story)) -> dict[str, Any]:
    return current_scene(story).view()


@router.put("/api/adventures/{adventure_id}/scene")
def put_scene(body: SceneIn, story: Story = Depends(adventure_story)) -> dict[str, Any]:
    """The player's scene (fields left out are empty), or ``{"clear": true}`` to hand the
    scene back to the story cards."""
    fields = body.model_dump(exclude_none=True)
    if fields.get("clear") is False:
        del fields["clear"]  # "clear": false asks for nothing
    set_scene(story.adventure, fields)
    story.touch()
    return current_scene(story).view()
