"""The knowledge library over HTTP: sources, search, and the sources attached to adventures.

- ``POST /api/library?filename=NAME``: the file is the raw request body (any Content-Type;
  .txt, .md, .html, .pdf or .epub, recognised by what it holds). 201 with the source;
  its vectors are made in the background (``state``, ``embedded``, ``progress``).
- ``GET /api/library``: the user's sources; ``GET``/``DELETE /api/library/{id}``;
  ``POST /api/library/{id}/reindex``: terms, full-text rows and vectors made again.
- ``GET /api/library/search?q=...&limit=N``: the best passages of all the user's sources,
  with their scores.
- ``PUT /api/adventures/{id}/knowledge`` ``{"source_ids": [...]}``: exactly those sources
  are attached; ``GET`` lists them with their state.

Invariants: the file is read and split with no transaction open, in a child process whose
CPU time, memory and wall time are bounded (``services.library.parsing``), then stored in
one write unit (a refused file leaves nothing); its size is capped by the guard before it
is read (``web.guard.BODY_LIMITS``). A user's second upload while the first is still being
read is refused before its body is read (429 ``one_upload_at_a_time``); at most
``parsing.AT_ONCE`` files are read at once, the others wait their turn. Another user's
source or adventure is a 404.
"""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass
from typing import Annotated

import anyio
from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, Field, StrictInt
from sqlalchemy.orm import Session

from talekeeper.bootstrap import Runtime
from talekeeper.services.common.units import read_scope, session_scope
from talekeeper.services.common.vocabulary import MemberRole, SourceState
from talekeeper.services.library import parsing, store
from talekeeper.services.library.search import Hit
from talekeeper.services.story.access import load_adventure
from talekeeper.web.deps import DB, RowId, Strict, runtime, user_id

router = APIRouter(tags=["library"])

# Checked by ``store.clean_filename`` (its refusals say how to name the file), before the
# body is read: a bad name never costs the reading of 50 MB.
Filename = Annotated[str, Query(description="the file's name, with its extension")]
SEARCH_MAX = 50
QUERY_MAX = 2000


class SourceOut(BaseModel):
    id: int
    title: str
    filename: str
    kind: str
    size_bytes: int
    characters: int
    passage_count: int
    token_count: int
    state: SourceState
    embedding_model: str | None
    embedded: int
    progress: float
    error: str | None
    retry_at: str | None
    created_at: str | None
    attached_to: int = 0  # how many adventures it is attached to


class SourceList(BaseModel):
    sources: list[SourceOut]


class SearchOut(BaseModel):
    query: str
    hits: list[Hit]  # the search's own dataclass: source, place, scores and ranks
    considered: int
    note: str
    input_terms: list[str]


class KnowledgeIn(Strict):
    source_ids: Annotated[list[StrictInt], Field(max_length=store.MAX_ATTACHED * 10)]


class KnowledgeOut(BaseModel):
    adventure_id: int
    sources: list[SourceOut]


def _views(session: Session, rows: list[store.LibrarySource]) -> list[SourceOut]:
    counts = store.attached_counts(session, [r.id for r in rows])
    return [SourceOut(**store.source_view(r, counts.get(r.id, 0))) for r in rows]


def _embedding_model(rt: Runtime, uid: int) -> str | None:
    models = rt.models_for_user(uid)
    return models.embedding.model if models.embedding else None


@router.post("/api/library", status_code=201, response_model=SourceOut)
async def upload(
    request: Request,
    filename: Filename = "",
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> SourceOut:
    name = store.clean_filename(filename)
    readers = _readers(request)
    with readers.files.claim(uid, name):  # before the body: a second file is not even read
        await asyncio.to_thread(_room, rt, uid)  # a full library is refused before reading
        data = await request.body()
        read = functools.partial(parsing.prepare, filename, data)
        # The place among the readers is waited for on the event loop, not in a thread.
        prepared = await anyio.to_thread.run_sync(read, limiter=readers.places)
    model = await asyncio.to_thread(_embedding_model, rt, uid)

    def write() -> SourceOut:
        with session_scope(rt.sessions) as session:
            row = store.store(session, uid, prepared, model)
            session.flush()
            if rt.indexer is not None:  # its vectors, asked for with the source itself
                rt.indexer.schedule(session, [row.id])
            return SourceOut(**store.source_view(row, 0))

    return await asyncio.to_thread(write)


@dataclass(frozen=True)
class _Readers:
    """This app's uploads being read: one per user, ``parsing.AT_ONCE`` in all."""

    files: parsing.Readers
    places: anyio.CapacityLimiter


def _readers(request: Request) -> _Readers:
    # Made on first use, on the event loop (no await between the look and the set), so
    # each app (the tests run several in one process) has its own.
    readers: _Readers | None = getattr(request.app.state, "library_readers", None)
    if readers is None:
        readers = _Readers(parsing.Readers(), anyio.CapacityLimiter(parsing.AT_ONCE))
        request.app.state.library_readers = readers
    return readers


def _room(rt: Runtime, uid: int) -> None:
    with read_scope(rt.sessions) as session:
        store.check_room(session, uid)


@router.post("/api/library/{source_id}/retry", response_model=SourceOut)
def retry(
    source_id: RowId,
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> SourceOut:
    """A failed source is tried again now, from where it stopped (reindex starts over)."""
    row = store.source(session, uid, source_id)  # another user's is a 404
    if rt.indexer is not None:  # as a turn that used it: its run asked for now
        rt.indexer.catch_up(session, [row.id])
    session.refresh(row)
    return _views(session, [row])[0]


@router.get("/api/library", response_model=SourceList)
def listing(session: Session = DB, uid: int = Depends(user_id)) -> SourceList:
    return SourceList(sources=_views(session, store.sources(session, uid)))


@router.get("/api/library/search", response_model=SearchOut)
async def search(
    q: Annotated[str, Query(min_length=1, max_length=QUERY_MAX, description="the words")],
    limit: Annotated[int, Query(ge=1, le=SEARCH_MAX)] = 10,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> SearchOut:
    models = await asyncio.to_thread(rt.models_for_user, uid)
    searcher = rt.knowledge
    found = await searcher.search(uid, None, q, "", limit, models, floor=False)
    return SearchOut(
        query=q,
        hits=found.used,
        considered=found.considered,
        note=found.note,
        input_terms=list(found.query.get("input_terms", [])),
    )


@router.get("/api/library/{source_id}", response_model=SourceOut)
def one(source_id: RowId, session: Session = DB, uid: int = Depends(user_id)) -> SourceOut:
    return _views(session, [store.source(session, uid, source_id)])[0]


@router.delete("/api/library/{source_id}", status_code=204, response_class=Response)
def remove(source_id: RowId, session: Session = DB, uid: int = Depends(user_id)) -> Response:
    store.remove(session, uid, source_id)
    return Response(status_code=204)


@router.post("/api/library/{source_id}/reindex", response_model=SourceOut)
async def reindex(
    source_id: RowId, uid: int = Depends(user_id), rt: Runtime = Depends(runtime)
) -> SourceOut:
    model = await asyncio.to_thread(_embedding_model, rt, uid)

    def write() -> SourceOut:
        with session_scope(rt.sessions) as session:
            row = store.reindex(session, uid, source_id, model)
            session.flush()
            if rt.indexer is not None:
                rt.indexer.schedule(session, [row.id])
            return _views(session, [row])[0]

    return await asyncio.to_thread(write)


@router.get("/api/adventures/{adventure_id}/knowledge", response_model=KnowledgeOut)
def knowledge(
    adventure_id: RowId, session: Session = DB, uid: int = Depends(user_id)
) -> KnowledgeOut:
    adventure = load_adventure(session, adventure_id, uid)
    return KnowledgeOut(
        adventure_id=adventure.id, sources=_views(session, store.attached(session, adventure.id))
    )


@router.put("/api/adventures/{adventure_id}/knowledge", response_model=KnowledgeOut)
def attach(
    adventure_id: RowId, body: KnowledgeIn, session: Session = DB, uid: int = Depends(user_id)
) -> KnowledgeOut:
    adventure = load_adventure(session, adventure_id, uid, MemberRole.HOST)  # the host's library
    store.set_attached(session, adventure, list(body.source_ids))
    return KnowledgeOut(
        adventure_id=adventure.id, sources=_views(session, store.attached(session, adventure.id))
    )
