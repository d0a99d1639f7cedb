"""What the card proposal routes answer (docs/world.md, "The lore clerk"), read from
``services.world.proposals``."""

from __future__ import annotations

from talekeeper.services.common.vocabulary import ProposalKind, ProposalState
from talekeeper.web.schemas.common import Out


class ProposalEvidenceOut(Out):
    """A sentence of the story a line of the draft rests on, and its action."""

    action_id: int
    text: str


class ProposalOut(Out):
    id: int
    kind: ProposalKind
    name: str
    type: str
    keys: list[str]
    entry: str
    card_id: int | None  # the card an update adds to, or the card it became
    evidence: list[ProposalEvidenceOut]
    state: ProposalState
