"""The card proposals' entries of the export file (version 5, ``card_proposals``): the
fields and the limits an import holds them to. What they mean, and how they are written
and read: ``exchange.proposals``."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from talekeeper.services.cards.match import CARD_TYPES
from talekeeper.services.common import limits
from talekeeper.services.exchange.values import (
    Entry,
    Key,
    MaybeKey,
    Time,
    chars,
    choice,
    maybe_chars,
    names_list,
)
from talekeeper.storage.models.world import NAME_MAX
from talekeeper.storage.vocabulary import ProposalKind, ProposalState

PROPOSALS_VERSION = 5  # version 4 with ``card_proposals``
NAMES_MAX = 200  # a proposal's names: an entity's forms, far fewer in any story
LINES_MAX = 200  # a proposal's evidence: the sentences of an entry of at most a card's size
WRITER_MAX = 255  # a model's name, as the column holds it
CAP = (limits.MAX_WORLD_ENTITIES, "card proposals")  # one an entity at most


class EvidenceLine(Entry):
    """A sentence of the story a line of the draft rests on, and its action's key."""

    action: Key
    text: Annotated[str, chars(limits.NARRATION_MAX)]


class ProposalEntry(Entry):
    kind: Annotated[str, choice(tuple(ProposalKind))]
    state: Annotated[str, choice(tuple(ProposalState))]
    key: Annotated[str, chars(NAME_MAX, required=True)]
    name: Annotated[str, chars(NAME_MAX, required=True)]
    type: Annotated[str, choice(CARD_TYPES)]
    keys: Annotated[list[str], names_list(NAMES_MAX, NAME_MAX)] = Field(default_factory=list)
    entry: Annotated[str, chars(limits.CARD_ENTRY_MAX)] = ""
    evidence: Annotated[list[EvidenceLine], Field(max_length=LINES_MAX)] = Field(
        default_factory=list
    )
    drafter: Annotated[str | None, maybe_chars(WRITER_MAX)] = None
    card: MaybeKey = None
    created_at: Time
    updated_at: Time
