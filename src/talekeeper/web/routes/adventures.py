"""Scenarios, adventures and story cards over JSON.

Request bodies are ``Strict`` models and ids are ``RowId``s (``web.deps``);
lengths and emptiness are checked by the services, so the terminal gets the
same rules. A story card is answered as a ``CardOut``: its secondary rule is one
of ``SecondaryRule``, and a body with another is refused with the ones it takes.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends, Query
from pydantic import BaseModel, ConfigDict
from sqlalchemy.orm import Session

from talekeeper.bootstrap import Runtime
from talekeeper.core.errors import InvalidInput
from talekeeper.services import adventures, exchange
from talekeeper.services.cards import CardView, SecondaryRule
from talekeeper.services.tree import Story, load_adventure
from talekeeper.web.deps import DB, RowId, Strict, runtime, user_id
from talekeeper.web.errors import NOT_JSON

router = APIRouter(tags=["adventures"])


class Persona(Strict):
    name: str | None = None
    pronouns: str | None = None
    description: str | None = None


class AdventureIn(Strict):
    title: str | None = None
    scenario: str | None = None
    opening: str | None = None
    persona: Persona | None = None
    ai_instructions: str | None = None
    plot_essentials: str | None = None
    authors_note: str | None = None
    story_summary: str | None = None
    auto_summarize: bool | None = None
    memory_bank: bool | None = None


class CardIn(Strict):
    name: str | None = None
    type: str | None = None
    keywords: list[str] | None = None
    entry: str | None = None
    notes: str | None = None
    always_on: bool | None = None
    secondary_keywords: list[str] | None = None
    secondary_rule: SecondaryRule | None = None


class CardFields(BaseModel):
    """What a story card holds, as the API answers it (see ``CardOut``, ``lore.LoreCard``)."""

    name: str
    type: str
    keywords: list[str]
    entry: str
    notes: str
    always_on: bool
    secondary_keywords: list[str]
    secondary_rule: SecondaryRule


class CardOut(CardFields):
    id: int

    @classmethod
    def of(cls, card: CardView) -> CardOut:
        return cls(**card.public())


def given(body: BaseModel, *skip: str) -> dict[str, Any]:
    """The fields the client actually sent (``None`` values dropped)."""
    data = body.model_dump(exclude_unset=True, exclude_none=True)
    return {k: v for k, v in data.items() if k not in skip}


@router.get("/api/scenarios")
def list_scenarios(rt: Runtime = Depends(runtime)) -> list[dict[str, Any]]:
    return [
        {
            "id": s.id,
            "title": s.title,
            "genre": s.genre,
            "description": s.description,
            "persona": s.persona,
            "cards": len(s.cards_for_creation()),
        }
        for s in rt.scenarios.values()
    ]


@router.get("/api/scenarios/{scenario_id}")
def read_scenario(scenario_id: str, rt: Runtime = Depends(runtime)) -> dict[str, Any]:
    s = rt.scenario(scenario_id)
    return {
        "id": s.id,
        "title": s.title,
        "genre": s.genre,
        "description": s.description,
        "opening": s.opening,
        "ai_instructions": s.ai_instructions,
        "plot_essentials": s.plot_essentials,
        "authors_note": s.authors_note,
        "persona": s.persona,
        "story_cards": [
            c.__dict__
            | {"keywords": list(c.keywords), "secondary_keywords": list(c.secondary_keywords)}
            for c in s.cards_for_creation()
        ],
    }


@router.post("/api/adventures", status_code=201)
def create_adventure(
    body: AdventureIn,
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> dict[str, Any]:
    scenario = rt.scenario(body.scenario) if body.scenario else None
    story = adventures.create(session, uid, given(body, "scenario"), rt.memory, scenario)
    return adventures.adventure_view(story)


@router.get("/api/adventures")
def list_adventures(session: Session = DB, uid: int = Depends(user_id)) -> Any:
    return adventures.listing_with_lengths(session, uid)


@router.get("/api/adventures/{adventure_id}")
def read_adventure(
    adventure_id: RowId,
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> dict[str, Any]:
    return adventures.adventure_view(Story.load(session, adventure_id, uid, rt.memory))


@router.patch("/api/adventures/{adventure_id}")
def update_adventure(
    adventure_id: RowId,
    body: AdventureIn,
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> dict[str, Any]:
    fields = given(body)
    for fixed in ("scenario", "opening"):
        if fixed in fields:
            raise InvalidInput(f"'{fixed}' is set when an adventure is created; it cannot change.")
    story = Story.load(session, adventure_id, uid, rt.memory)
    adventures.update(session, story.adventure, fields)
    return adventures.adventure_view(story)


@router.delete("/api/adventures/{adventure_id}")
def delete_adventure(
    adventure_id: RowId,
    session: Session = DB,
    uid: int = Depends(user_id),
) -> dict[str, Any]:
    adventures.delete(session, adventure_id, uid)
    return {"deleted": adventure_id}


@router.get("/api/adventures/{adventure_id}/export")
def export_adventure(
    adventure_id: RowId,
    session: Session = DB,
    uid: int = Depends(user_id),
) -> dict[str, Any]:
    return exchange.export(session, adventure_id, uid)


class SourceRefOut(BaseModel):
    """A library source an export file names (by reference, not its text)."""

    title: str
    filename: str
    kind: str
    size_bytes: int
    passage_count: int


class ImportedOut(BaseModel):
    """The new adventure as ``GET /api/adventures/{id}`` shows it, plus what of the file's
    library references was attached and what the importing user's library lacks."""

    model_config = ConfigDict(extra="allow")
    id: int
    title: str
    attached_sources: list[int]
    unmatched_sources: list[SourceRefOut]
    warnings: list[str]


@router.post("/api/adventures/import", status_code=201, response_model=ImportedOut)
def import_adventure(
    body: Any = Body(...),
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> dict[str, Any]:
    if isinstance(body, bytes):  # FastAPI hands over raw bytes when the Content-Type is not JSON
        raise InvalidInput(NOT_JSON)
    imported = exchange.import_with_report(session, uid, body, rt.memory)
    view = adventures.adventure_view(Story.load(session, imported.adventure.id, uid, rt.memory))
    return view | imported.report()  # the library sources attached, and those not found


# -- story cards --------------------------------------------------------------------------


@router.get("/api/adventures/{adventure_id}/cards", response_model=list[CardOut])
def list_cards(
    adventure_id: RowId,
    q: str = Query("", description="search name, keywords, entry and notes"),
    session: Session = DB,
    uid: int = Depends(user_id),
) -> list[CardOut]:
    adventure = load_adventure(session, adventure_id, uid)
    return [CardOut.of(c) for c in adventures.cards(session, adventure, q)]


@router.post("/api/adventures/{adventure_id}/cards", response_model=CardOut, status_code=201)
def create_card(
    adventure_id: RowId,
    body: CardIn,
    session: Session = DB,
    uid: int = Depends(user_id),
) -> CardOut:
    adventure = load_adventure(session, adventure_id, uid)
    return CardOut.of(adventures.add_card(session, adventure, given(body)))


@router.patch("/api/cards/{card_id}", response_model=CardOut)
def update_card(
    card_id: RowId,
    body: CardIn,
    session: Session = DB,
    uid: int = Depends(user_id),
) -> CardOut:
    row = adventures.card_row(session, card_id, uid)
    return CardOut.of(adventures.update_card(session, row, given(body)))


@router.delete("/api/cards/{card_id}")
def delete_card(
    card_id: RowId, session: Session = DB, uid: int = Depends(user_id)
) -> dict[str, Any]:
    adventures.delete_card(session, adventures.card_row(session, card_id, uid))
    return {"deleted": card_id}
