"""What the scenario, adventure and story card routes answer.

Read from ``services.story.scenarios``, ``services.story.adventures`` and
``services.cards.rules``. An adventure's answer carries where the player stands
(``StateOut``: ``head``, ``awaiting_reply``, ``can_redo``, ``branch_id``) at its top level,
beside what the adventure is made of; its ``scene`` is the one ``GET .../scene`` answers.
"""

from __future__ import annotations

from talekeeper.services.cards.rules import SecondaryRule
from talekeeper.services.common.vocabulary import MemberRole, TurnOrder, WitnessMode
from talekeeper.services.prompt.budgets import Budgeted
from talekeeper.web.schemas.common import Out, Timestamp
from talekeeper.web.schemas.memory import SceneOut
from talekeeper.web.schemas.story import AuthorOut, StateOut


class CardFields(Out):
    """What a story card holds, as the API answers it: ``Card``'s fields, in its order
    (``CardOut`` adds the stored card's id, ``lore.LoreCard`` a draft's provenance)."""

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
    known_by: list[str] | None  # a secret of these characters; null: no secret


class DeletedIdOut(Out):
    """The id of what was deleted."""

    deleted: int


class ScenarioListedOut(Out):
    """A scenario in the list; ``cards``: how many an adventure made from it starts with."""

    id: str
    title: str
    genre: str
    description: str
    persona: dict[str, str]
    cards: int


class ScenarioOut(Out):
    """A scenario; ``story_cards``: the cards an adventure made from it starts with."""

    id: str
    title: str
    genre: str
    description: str
    opening: str
    ai_instructions: str
    plot_essentials: str
    authors_note: str
    persona: dict[str, str]
    story_cards: list[CardFields]


class AdventureSummaryOut(Out):
    id: int
    title: str
    scenario: str | None  # the scenario's id, when it was made from one
    created_at: Timestamp
    updated_at: Timestamp


class ListedAdventureOut(AdventureSummaryOut):
    length: int | None  # null when the adventure has no usable current branch
    role: MemberRole  # the user's: ``host`` of their own, or as a member (docs/sharing.md)


class PersonaOut(Out):
    name: str
    pronouns: str
    description: str


class SectionBudgetOut(Out):
    """A section's budget (docs/context.md, "Section budgets"): its share of the prompt and
    its ceiling as the adventure has them, the fixed floor, and the defaults."""

    name: Budgeted
    title: str
    share: float
    ceiling: int  # tokens; a memory's or a passage's where ``per`` says so
    floor: int
    per: str
    default_share: float
    default_ceiling: int
    share_set: bool  # the adventure's own, not the default
    ceiling_set: bool


class AdventureSettingsOut(AdventureSummaryOut):
    """What an adventure is made of, without where the player stands in it."""

    persona: PersonaOut
    ai_instructions: str
    plot_essentials: str
    authors_note: str
    story_summary: str
    auto_summarize: bool
    memory_bank: bool
    witness_mode: WitnessMode
    turn_order: TurnOrder  # who may act next while it is shared (docs/sharing.md)
    auto_accept_cards: bool  # the lore clerk's proposals become cards without asking
    section_budgets: list[SectionBudgetOut]
    scene: SceneOut
    current_branch_id: int | None


# StateOut first among the bases: pydantic orders fields from the last base to the first,
# which keeps the keys in the order the API has always written them.
class AdventureOut(StateOut, AdventureSettingsOut):
    length: int  # the actions on the current path, the opening included
    turns: list[AuthorOut]  # whose turns are live: being answered first, then waiting
