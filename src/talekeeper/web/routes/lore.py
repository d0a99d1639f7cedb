"""Other tools' lore in and out: import into an adventure, an adventure from a file, export.

- ``POST /api/adventures/{id}/lore/import?filename=NAME[&dry_run=true]``: the file is the
  raw request body (any Content-Type; it is recognised by what it holds). A dry run
  answers the cards as they would be made and writes nothing; otherwise the cards are
  made. Both answer 200 with ``{"format", "cards", "report"}``.
- ``POST /api/adventures/from-file?filename=NAME[&dry_run=true][&greeting=N]``: a new
  adventure from a character card or a scenario/story file; 201 with the adventure as
  ``POST /api/adventures`` answers it plus ``"format"`` and ``"report"``; a dry run is a
  200 with the preview and no adventure.
- ``GET /api/adventures/{id}/lore/export?format=aidungeon|sillytavern|ccv3|novelai``: the
  adventure's cards as a file of that tool, to download.

Invariants: a file is read only by ``services.lore`` (bytes in; nothing in it runs), so a
refused file is a 4xx whose message says what and where, never a 500; the body is
capped by the guard (``web.guard.BODY_LIMITS``) before it is read and by the reader
before it is decoded. Options are the same for the preview and the confirm.

The file is read with no transaction open, in the server's thread pool (the routes are
plain functions), so a slow or hostile file holds neither the event loop nor the
database's writer lock: an import first checks in a read unit that the adventure is the
user's (another user's is a 404 before the file is looked at), then reads the file, then
writes what it read in one short write unit. A dry run opens no write unit at all, so it
never takes or waits for the writer lock.
"""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel
from sqlalchemy.orm import Session

from talekeeper.bootstrap import Runtime
from talekeeper.services.cards.rules import CardView
from talekeeper.services.common.units import read_scope, session_scope
from talekeeper.services.lore import (
    CardDraft,
    ExportFormat,
    LoreFormat,
    Report,
    ReportLevel,
    export_cards,
)
from talekeeper.services.story import adventures, lore_apply
from talekeeper.services.story.access import load_adventure
from talekeeper.services.story.tree import Story
from talekeeper.web.deps import DB, RowId, runtime, user_id
from talekeeper.web.schemas.adventures import AdventureOut, CardFields

router = APIRouter(tags=["lore"])

FILENAME_MAX = 255
Filename = Annotated[
    str,
    Query(
        min_length=1,
        max_length=FILENAME_MAX,
        description="the file's name as the player chose it (shown in provenance notes)",
    ),
]
DryRun = Annotated[bool, Query(description="answer the preview and write nothing")]
IncludeDisabled = Annotated[bool, Query(description="make cards of disabled entries too")]
SplitLong = Annotated[
    bool, Query(description="split an entry over 8,000 characters into parts, not refuse it")
]
MoveInstructions = Annotated[
    bool,
    Query(description="always-on entries that read as instructions go to AI Instructions"),
]
Greeting = Annotated[
    int, Query(ge=0, le=1000, description="0: the opening; N: the file's Nth alternate greeting")
]
UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._ -]+")


async def file_body(request: Request) -> bytes:
    """The request's raw body: the file, whatever Content-Type it came with."""
    return await request.body()


FileBody = Depends(file_body)


class ReportItemOut(BaseModel):
    level: ReportLevel
    message: str
    path: str
    count: int


class ReportOut(BaseModel):
    totals: dict[str, int]
    items: list[ReportItemOut]

    @classmethod
    def of(cls, report: Report, cards: int) -> ReportOut:
        return cls.model_validate(report.to_json(cards))


class LoreCard(CardFields):
    """A card as the file makes it; ``id`` once it is made (not on a dry run)."""

    id: int | None = None
    disabled: bool
    instruction_like: bool
    source: str

    @classmethod
    def of(cls, draft: CardDraft, made: CardView | None = None) -> LoreCard:
        card = cls.model_validate(draft)  # by attribute: the draft has no id
        return card if made is None else card.model_copy(update={"id": made.id})


class LoreImportOut(BaseModel):
    format: LoreFormat
    cards: list[LoreCard]
    report: ReportOut


class ScenarioPreview(BaseModel):
    format: LoreFormat
    title: str
    description: str
    opening: str
    alternate_greetings: list[str]
    ai_instructions: str
    plot_essentials: str
    authors_note: str
    cards: list[LoreCard]
    report: ReportOut


class FromFileHead(BaseModel):
    """The keys an adventure made from a file begins with: its id and title, then the
    file's format and the report of reading it."""

    id: int
    title: str
    format: LoreFormat
    report: ReportOut


# AdventureOut first among the bases: pydantic orders fields from the last base to the
# first, so the head's keys come first and the answer keeps the order it has always had.
class FromFileOut(AdventureOut, FromFileHead):
    """The adventure as ``POST /api/adventures`` answers it, plus the file's report."""


def read_options(
    include_disabled: IncludeDisabled = False,
    split_long: SplitLong = False,
    move_instructions: MoveInstructions = False,
) -> lore_apply.ReadOptions:
    """How to read the file: the same query parameters on both ways in."""
    return lore_apply.ReadOptions(include_disabled, split_long, move_instructions)


Options = Depends(read_options)


def _check_owned(rt: Runtime, adventure_id: int, uid: int) -> None:
    """Someone else's adventure, or none, is a 404: from a read unit, which takes no lock."""
    with read_scope(rt.sessions) as session:
        load_adventure(session, adventure_id, uid)


@router.post("/api/adventures/{adventure_id}/lore/import", response_model=LoreImportOut)
def import_lore(
    adventure_id: RowId,
    filename: Filename,
    dry_run: DryRun = False,
    options: lore_apply.ReadOptions = Options,
    data: bytes = FileBody,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> LoreImportOut:
    _check_owned(rt, adventure_id, uid)  # before any reading: no oracle, no wasted work
    found, moved = lore_apply.read_lore_file(data, filename, options)  # no transaction open
    if dry_run:
        cards = [LoreCard.of(c) for c in found.cards]
    else:
        with session_scope(rt.sessions) as session:
            adventure = load_adventure(session, adventure_id, uid)  # deleted meanwhile: a 404
            made = lore_apply.add_lore(session, adventure, found, moved)
            cards = [LoreCard.of(c, m) for c, m in zip(found.cards, made, strict=True)]
    return LoreImportOut(
        format=found.format, cards=cards, report=ReportOut.of(found.report, len(cards))
    )


@router.post(
    "/api/adventures/from-file",
    status_code=201,
    response_model=FromFileOut | ScenarioPreview,
    responses={200: {"model": ScenarioPreview, "description": "the preview (dry_run=true)"}},
)
def adventure_from_file(
    response: Response,
    filename: Filename,
    dry_run: DryRun = False,
    greeting: Greeting = 0,
    options: lore_apply.ReadOptions = Options,
    data: bytes = FileBody,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> FromFileOut | ScenarioPreview:
    draft = lore_apply.read_scenario_file(data, filename, options)  # no transaction open
    lore_apply.opening_of(draft, greeting)  # a greeting the file lacks is refused now
    report = ReportOut.of(draft.report, len(draft.cards))
    if dry_run:
        response.status_code = 200
        preview = {k: v for k, v in draft.to_json().items() if k not in ("cards", "report")}
        cards = [LoreCard.of(c) for c in draft.cards]
        return ScenarioPreview.model_validate({**preview, "cards": cards, "report": report})
    with session_scope(rt.sessions) as session:
        story = lore_apply.adventure_from_file(session, uid, rt.memory, draft, greeting)
        view = adventures.adventure_view(Story.load(session, story.adventure.id, uid, rt.memory))
    shown = AdventureOut.model_validate(view)
    return FromFileOut(**dict(shown), format=draft.format, report=report)


@router.get(
    "/api/adventures/{adventure_id}/lore/export",
    response_class=Response,
    responses={
        200: {
            "description": "the file",
            "content": {
                "application/json": {
                    # Another tool's format (AI Dungeon, SillyTavern, Character Card V3,
                    # NovelAI): that tool's schema, not ours.
                    "schema": {"type": "object", "description": "the chosen tool's card file"}
                }
            },
        }
    },
)
def export_lore(
    adventure_id: RowId,
    format: Annotated[ExportFormat, Query(description="the tool whose format to write")],
    session: Session = DB,
    uid: int = Depends(user_id),
) -> Response:
    adventure = load_adventure(session, adventure_id, uid)
    cards = adventures.cards(session, adventure)
    exported = export_cards(cards, format, title=adventure.title)
    # The exporter names the file after the title; a header carries only plain ASCII.
    name = UNSAFE_NAME.sub("", exported.filename).strip(" .") or f"cards.{format}"
    headers = {"Content-Disposition": f'attachment; filename="{name}"'}
    if exported.warnings:  # e.g. AI Dungeon values over 1,000 characters
        headers["X-Talekeeper-Warnings"] = str(len(exported.warnings))
    return Response(exported.data, media_type="application/json", headers=headers)
