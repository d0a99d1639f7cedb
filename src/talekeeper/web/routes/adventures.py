"""Scenarios, adventures and story cards over JSON.

Request bodies are ``Strict`` models and ids are ``RowId``s (``web.deps``);
lengths and emptiness are checked by the services, so the terminal gets the
same rules. A story card is answered as a ``CardOut``: its secondary rule is one
of ``SecondaryRule``, and a body with another is refused with the ones it takes.
Answers are the services' typed results, shown by ``web.schemas.adventures``.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query
from pydantic import BaseModel
from sqlalchemy.orm import Session

from talekeeper.bootstrap import Runtime
from talekeeper.core.errors import InvalidInput
from talekeeper.services.cards.rules import CardView, SecondaryRule
from talekeeper.services.common.vocabulary import MemberRole
from talekeeper.services.story import adventures
from talekeeper.services.story.access import load_adventure
from talekeeper.services.story.adventures import AdventureView, Deleted, ListedAdventure
from talekeeper.services.story.scenarios import ScenarioDetail, ScenarioSummary
from talekeeper.services.story.tree import Story
from talekeeper.web.deps import DB, RowId, Strict, runtime, user_id
from talekeeper.web.schemas.adventures import (
    AdventureOut,
    CardOut,
    DeletedIdOut,
    ListedAdventureOut,
    ScenarioListedOut,
    ScenarioOut,
)

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
    auto_accept_cards: bool | None = None
    # Checked by the service, which names the choices (a bad value is a 400 that says so).
    witness_mode: str | None = None
    turn_order: str | None = None
    # The whole set of the adventure's own section budgets (``{}``: the defaults), checked
    # by the service, which names a bad field and its range.
    section_budgets: dict[str, object] | None = None


class CardIn(Strict):
    """A story card's fields as a client sends them: ``Card``'s, each optional (a change
    gives only the fields it changes; a new card takes the defaults)."""

    name: str | None = None
    type: str | None = None
    keywords: list[str] | None = None
    entry: str | None = None
    notes: str | None = None
    always_on: bool | None = None
    secondary_keywords: list[str] | None = None
    secondary_rule: SecondaryRule | None = None
    # Names (checked by the service, which says what to send); null: no secret.
    known_by: list[str] | None = None


def given(body: BaseModel, *skip: str) -> dict[str, object]:
    """The fields the client actually sent (``None`` values dropped)."""
    data = body.model_dump(exclude_unset=True, exclude_none=True)
    return {k: v for k, v in data.items() if k not in skip}


@router.get("/api/scenarios", response_model=list[ScenarioListedOut])
def list_scenarios(rt: Runtime = Depends(runtime)) -> list[ScenarioSummary]:
    return [s.summary() for s in rt.scenarios.values()]


@router.get("/api/scenarios/{scenario_id}", response_model=ScenarioOut)
def read_scenario(scenario_id: str, rt: Runtime = Depends(runtime)) -> ScenarioDetail:
    return rt.scenario(scenario_id).detail()


@router.post("/api/adventures", status_code=201, response_model=AdventureOut)
def create_adventure(
    body: AdventureIn,
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> AdventureView:
    scenario = rt.scenario(body.scenario) if body.scenario else None
    story = adventures.create(session, uid, given(body, "scenario"), rt.memory, scenario)
    return adventures.adventure_view(story)


@router.get("/api/adventures", response_model=list[ListedAdventureOut])
def list_adventures(session: Session = DB, uid: int = Depends(user_id)) -> list[ListedAdventure]:
    return adventures.listing_with_lengths(session, uid)


@router.get("/api/adventures/{adventure_id}", response_model=AdventureOut)
def read_adventure(
    adventure_id: RowId,
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> AdventureView:
    story = Story.load(session, adventure_id, uid, rt.memory, MemberRole.VIEWER)
    return adventures.adventure_view(story)


@router.patch("/api/adventures/{adventure_id}", response_model=AdventureOut)
def update_adventure(
    adventure_id: RowId,
    body: AdventureIn,
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> AdventureView:
    fields = given(body)
    for fixed in ("scenario", "opening"):
        if fixed in fields:
            raise InvalidInput(f"'{fixed}' is set when an adventure is created; it cannot change.")
    story = Story.load(session, adventure_id, uid, rt.memory)
    adventures.update(session, story.adventure, fields)
    return adventures.adventure_view(story)


@router.delete("/api/adventures/{adventure_id}", response_model=DeletedIdOut)
def delete_adventure(
    adventure_id: RowId,
    session: Session = DB,
    uid: int = Depends(user_id),
) -> Deleted:
    return adventures.delete(session, adventure_id, uid)


# -- story cards --------------------------------------------------------------------------


@router.get("/api/adventures/{adventure_id}/cards", response_model=list[CardOut])
def list_cards(
    adventure_id: RowId,
    q: str = Query("", description="search name, keywords, entry and notes"),
    session: Session = DB,
    uid: int = Depends(user_id),
) -> list[CardView]:
    adventure = load_adventure(session, adventure_id, uid)
    return adventures.cards(session, adventure, q)


@router.post("/api/adventures/{adventure_id}/cards", response_model=CardOut, status_code=201)
def create_card(
    adventure_id: RowId,
    body: CardIn,
    session: Session = DB,
    uid: int = Depends(user_id),
) -> CardView:
    adventure = load_adventure(session, adventure_id, uid)
    return adventures.add_card(session, adventure, _card_fields(body))


@router.patch("/api/cards/{card_id}", response_model=CardOut)
def update_card(
    card_id: RowId,
    body: CardIn,
    session: Session = DB,
    uid: int = Depends(user_id),
) -> CardView:
    row = adventures.card_row(session, card_id, uid)
    return adventures.update_card(session, row, _card_fields(body))


def _card_fields(body: CardIn) -> dict[str, object]:
    """The fields sent, ``known_by`` kept when it is null (null clears a secret)."""
    fields = given(body)
    if "known_by" in body.model_fields_set:
        fields["known_by"] = body.known_by
    return fields


@router.delete("/api/cards/{card_id}", response_model=DeletedIdOut)
def delete_card(card_id: RowId, session: Session = DB, uid: int = Depends(user_id)) -> Deleted:
    return adventures.delete_card(session, adventures.card_row(session, card_id, uid))
