"""Card proposals over JSON (docs/world.md, "The lore clerk"): the open proposals of the
current path, accepted into a card (optionally edited first) or dismissed.

Bodies are ``Strict`` models; an edited field is checked as any card's is
(``services.cards.rules.clean_card``), which answers a 400 that says what to fix. A
proposal that is not open, or that the path no longer supports, is a 409 that says so;
another user's proposal is "not found".
"""

from __future__ import annotations

from fastapi import Depends
from fastapi.routing import APIRouter
from sqlalchemy.orm import Session

from talekeeper.bootstrap import Runtime
from talekeeper.services.cards.rules import CardView
from talekeeper.services.story import adventures
from talekeeper.services.story.tree import Story
from talekeeper.services.world import proposals
from talekeeper.services.world.proposals import ProposalView
from talekeeper.web.deps import DB, RowId, Strict, adventure_story, runtime, user_id
from talekeeper.web.schemas.adventures import CardOut
from talekeeper.web.schemas.proposals import ProposalOut

router = APIRouter(tags=["cards"])


class ProposalEdit(Strict):
    """The draft's fields the player changed before accepting (others stay the draft's)."""

    name: str | None = None
    type: str | None = None
    keys: list[str] | None = None
    entry: str | None = None


def _story(proposal_id: int, session: Session, uid: int, rt: Runtime) -> Story:
    row = proposals.proposal_row(session, proposal_id, uid)
    return Story.load(session, row.adventure_id, uid, rt.memory)


@router.get("/api/adventures/{adventure_id}/card-proposals", response_model=list[ProposalOut])
def list_proposals(story: Story = Depends(adventure_story)) -> list[ProposalView]:
    return proposals.listed(story)


@router.post("/api/card-proposals/{proposal_id}/accept", response_model=CardOut, status_code=201)
def accept(
    proposal_id: RowId,
    body: ProposalEdit | None = None,
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> CardView:
    edited: dict[str, object] = {}
    if body is not None:
        for name in body.model_fields_set:
            value = getattr(body, name)
            if value is not None:
                edited[name] = value
    return adventures.accept_proposal(_story(proposal_id, session, uid, rt), proposal_id, edited)


@router.post("/api/card-proposals/{proposal_id}/dismiss", response_model=ProposalOut)
def dismiss(
    proposal_id: RowId,
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> ProposalView:
    return proposals.dismiss(_story(proposal_id, session, uid, rt), proposal_id)


@router.post("/api/card-proposals/{proposal_id}/reopen", response_model=ProposalOut)
def reopen(
    proposal_id: RowId,
    session: Session = DB,
    uid: int = Depends(user_id),
    rt: Runtime = Depends(runtime),
) -> ProposalView:
    return proposals.reopen(_story(proposal_id, session, uid, rt), proposal_id)
