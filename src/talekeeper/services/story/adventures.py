"""Adventures: create (blank or from a scenario), read, update, list, delete; story cards.

Invariants:

- An adventure is created with its root branch (fork depth 0) as the current
  branch; a scenario's opening becomes the first narration (depth 0) and its
  cast becomes character cards, de-duplicated by name (``scenarios``).
- Client values are checked against ``limits`` before anything is written.
- An adventure holds at most ``limits.MAX_CARDS`` story cards: one more is refused
  (one count query) before it is written.
- Deleting an adventure deletes its tree, cards and snapshots with it.
- The listing's ``length`` counts the same actions as the adventure's own view.
- An adventure as clients see it (``AdventureView``) is where the player stands in it
  (``StoryState``) with its plot components, persona, toggles and scene.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from sqlalchemy.orm import Session

from talekeeper.core.errors import Conflict, InvalidInput, NotFound
from talekeeper.core.lineage import lineage_of
from talekeeper.services.cards.model import Card
from talekeeper.services.cards.rules import (
    CardView,
    card_columns,
    clean_card,
    clean_card_changes,
    matches_search,
)
from talekeeper.services.common import limits
from talekeeper.services.common.rendering import NARRATION
from talekeeper.services.memory import summary as story_summary
from talekeeper.services.memory.base import MemoryService
from talekeeper.services.memory.scene import Scene
from talekeeper.services.prompt import budgets
from talekeeper.services.prompt.budgets import BudgetView
from talekeeper.services.story import sharing
from talekeeper.services.story.access import load_adventure, owned
from talekeeper.services.story.scenarios import Scenario
from talekeeper.services.story.tree import Story
from talekeeper.services.story.view import Author, Persona, StoryState
from talekeeper.services.world import card_updates, proposals, secrets
from talekeeper.services.world import derive as world
from talekeeper.services.world.scene import scene_now
from talekeeper.storage.models import Adventure, Branch, StoryCard
from talekeeper.storage.repositories.sharing import SharingRepository
from talekeeper.storage.repositories.story import StoryRepository
from talekeeper.storage.vocabulary import MemberRole, TurnOrder, WitnessMode

COMPONENTS = ("ai_instructions", "plot_essentials", "authors_note")
# The Story Summary is a plot component too, but versioned (``memory.summary``): writing it
# through the adventure adds the player's version, like ``PUT .../summary``.
SUMMARY = "story_summary"
PERSONA = (
    ("name", "persona_name", limits.PERSONA_NAME_MAX),
    ("pronouns", "persona_pronouns", limits.PERSONA_PRONOUNS_MAX),
    ("description", "persona_description", limits.PERSONA_DESCRIPTION_MAX),
)
TOGGLES = ("auto_summarize", "memory_bank", "auto_accept_cards")


@dataclass(frozen=True)
class AdventureSummary:
    """An adventure as the list of them names it."""

    id: int
    title: str
    scenario: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class ListedAdventure(AdventureSummary):
    """``length``: the actions on the current branch's path; None without a usable branch.
    ``role``: the user's in it, ``host`` for their own (docs/sharing.md)."""

    length: int | None
    role: MemberRole = MemberRole.HOST


@dataclass(frozen=True)
class AdventureView(AdventureSummary, StoryState):
    """An adventure: where the player stands (``StoryState``), then what it is made of."""

    persona: Persona
    ai_instructions: str
    plot_essentials: str
    authors_note: str
    story_summary: str  # the version in force on the current path
    auto_summarize: bool
    memory_bank: bool
    witness_mode: WitnessMode
    turn_order: TurnOrder  # who may act next while it is shared
    auto_accept_cards: bool  # the lore clerk's proposals become cards without asking
    section_budgets: list[BudgetView]  # every budgeted section's share and ceiling
    scene: Scene
    current_branch_id: int | None
    length: int  # the actions on the current path, the opening included
    turns: list[Author]  # whose turns are live: being answered first, then waiting


@dataclass(frozen=True)
class Deleted:
    """The id of what was deleted."""

    deleted: int


def _persona(value: object) -> dict[str, str]:
    if not isinstance(value, dict):
        raise InvalidInput('\'persona\' must be an object like {"name": "Mara", "pronouns": ...}.')
    unknown = set(value) - {key for key, _, _ in PERSONA}
    if unknown:
        raise InvalidInput(
            f"'persona' has unknown field(s) {', '.join(sorted(unknown))}; "
            "it takes name, pronouns and description."
        )
    out = {}
    for key, column, limit in PERSONA:
        if key in value:
            if not isinstance(value[key], str):
                raise InvalidInput(f"'persona.{key}' must be text.")
            out[column] = limits.text_field(value[key], f"persona.{key}", limit)
    return out


def _choice(data: Mapping[str, object], key: str, kind: type[StrEnum], doc: str) -> str:
    value = data[key]
    if not isinstance(value, str) or value not in {m.value for m in kind}:
        modes = ", ".join(m.value for m in kind)
        raise InvalidInput(f"'{key}' must be one of {modes} ({doc}).")
    return value


def clean_fields(data: Mapping[str, object]) -> dict[str, str | bool | None]:
    """Validated adventure columns from a client's fields (only those given)."""
    out: dict[str, str | bool | None] = {}
    if "title" in data:
        out["title"] = limits.text_field(data["title"], "title", limits.TITLE_MAX, required=True)
    for key in COMPONENTS:
        if key in data:
            out[key] = limits.text_field(data[key], key, limits.COMPONENT_MAX)
    if SUMMARY in data:
        limits.text_field(data[SUMMARY], SUMMARY, limits.COMPONENT_MAX)  # checked before writing
    for key in TOGGLES:
        if key in data:
            out[key] = bool(data[key])
    if "witness_mode" in data:
        out["witness_mode"] = _choice(data, "witness_mode", WitnessMode, "docs/world.md")
    if "turn_order" in data:
        out["turn_order"] = _choice(data, "turn_order", TurnOrder, "docs/sharing.md")
    if "section_budgets" in data:  # the whole set: what is not given takes the default
        out["section_budgets"] = budgets.stored_text(data["section_budgets"] or {})
    if "persona" in data:
        out.update(_persona(data["persona"]))
    return out


def adventure_view(story: Story) -> AdventureView:
    adventure = story.adventure
    state = story.state()
    return AdventureView(
        id=adventure.id,
        title=adventure.title,
        scenario=adventure.scenario_id,
        created_at=adventure.created_at,
        updated_at=adventure.updated_at,
        head=state.head,
        can_redo=state.can_redo,
        branch_id=state.branch_id,
        persona=Persona(
            name=adventure.persona_name,
            pronouns=adventure.persona_pronouns,
            description=adventure.persona_description,
        ),
        ai_instructions=adventure.ai_instructions,
        plot_essentials=adventure.plot_essentials,
        authors_note=adventure.authors_note,
        story_summary=story_summary.text_in_force(story.session, adventure),
        auto_summarize=adventure.auto_summarize,
        memory_bank=adventure.memory_bank,
        witness_mode=WitnessMode(adventure.witness_mode),
        turn_order=TurnOrder(adventure.turn_order),
        auto_accept_cards=adventure.auto_accept_cards,
        section_budgets=budgets.views(adventure.section_budgets),
        scene=scene_now(story),
        current_branch_id=adventure.current_branch_id,
        length=story.repo.path_length(story.lineage()),
        turns=sharing.turns_now(story.session, adventure),
    )


def create(
    session: Session,
    user_id: int,
    data: Mapping[str, object],
    memory: MemoryService,
    scenario: Scenario | None = None,
) -> Story:
    fields: dict[str, str | bool | None] = {"title": "", **dict.fromkeys(COMPONENTS, "")}
    opening = ""
    cards: list[Card] = []
    if scenario is not None:
        fields.update(
            title=scenario.title,
            ai_instructions=scenario.ai_instructions,
            plot_essentials=scenario.plot_essentials,
            authors_note=scenario.authors_note,
            persona_name=scenario.persona.get("name", ""),
            persona_pronouns=scenario.persona.get("pronouns", ""),
            persona_description=scenario.persona.get("description", ""),
        )
        opening = scenario.opening
        cards = scenario.cards_for_creation()
    fields.update(clean_fields(data))
    if "opening" in data:
        opening = limits.text_field(data["opening"], "opening", limits.NARRATION_MAX)
    if not fields.get("title"):
        raise InvalidInput("'title' must not be empty (or give a 'scenario' to take its title).")
    adventure = Adventure(user_id=user_id, scenario_id=scenario.id if scenario else None, **fields)
    repo = StoryRepository(session)
    repo.add(adventure)
    root = Branch(adventure_id=adventure.id, parent_id=None, fork_depth=0, name="Main")
    repo.add(root)
    adventure.current_branch_id = root.id
    add_cards(session, adventure, cards)
    story = Story.load(session, adventure.id, user_id, memory)
    summary = data.get(SUMMARY)
    if isinstance(summary, str) and summary:  # text, as ``clean_fields`` made sure
        story_summary.edit_summary(session, adventure, summary)
    if opening:
        world.record(story, story.append(NARRATION, opening))
    return story


def update(session: Session, adventure: Adventure, data: Mapping[str, object]) -> None:
    for key, value in clean_fields(data).items():
        setattr(adventure, key, value)
    summary = data.get(SUMMARY)
    # text when given, as ``clean_fields`` made sure
    if isinstance(summary, str) and summary != story_summary.text_in_force(session, adventure):
        story_summary.edit_summary(session, adventure, summary)
    session.flush()


def delete(session: Session, adventure_id: int, user_id: int) -> Deleted:
    adventure = load_adventure(session, adventure_id, user_id, MemberRole.HOST)
    StoryRepository(session).delete_adventure(adventure)
    return Deleted(adventure_id)


def listing(session: Session, user_id: int) -> list[AdventureSummary]:
    return [
        AdventureSummary(
            id=a.id,
            title=a.title,
            scenario=a.scenario_id,
            created_at=a.created_at,
            updated_at=a.updated_at,
        )
        for a in StoryRepository(session).adventures(user_id)
    ]


def listing_with_lengths(session: Session, user_id: int) -> list[ListedAdventure]:
    """The user's own adventures, then those shared with them (each with their ``role``),
    with each adventure's ``length``: the actions on its current branch's
    path (the opening included), as ``adventure_view`` counts them. One count per adventure,
    so only the adventures list asks for it."""
    repo = StoryRepository(session)
    out: list[ListedAdventure] = []
    shared = SharingRepository(session).shared_with(user_id)
    for adventure, role in [(a, None) for a in repo.adventures(user_id)] + shared:
        links = repo.links(adventure.id)
        current = adventure.current_branch_id
        length = None  # an adventure without a usable current branch has no length to show
        if current is not None and current in links:
            length = repo.path_length(lineage_of(links, current))
        out.append(
            ListedAdventure(
                id=adventure.id,
                title=adventure.title,
                scenario=adventure.scenario_id,
                created_at=adventure.created_at,
                updated_at=adventure.updated_at,
                length=length,
                role=MemberRole(role) if role is not None else MemberRole.HOST,
            )
        )
    return out


# -- story cards ----------------------------------------------------------------------------


def add_card(session: Session, adventure: Adventure, data: Mapping[str, object]) -> CardView:
    return add_cards(session, adventure, [data])[0]


def add_cards(
    session: Session, adventure: Adventure, cards: Sequence[Mapping[str, object] | Card]
) -> list[CardView]:
    """Add ``cards`` in order, each as ``clean_card`` makes it (a client's fields, or a
    ``Card`` from a scenario or a file): all of them, or (past the card limit, or one
    refused) none, with one count of the adventure's cards however many are added."""
    fields = [clean_card(card) for card in cards]
    known_by = [secrets.clean_known_by(_secret(card)) for card in cards]
    repo = StoryRepository(session)
    count = repo.count_cards(adventure.id)
    if count + len(fields) > limits.MAX_CARDS:
        adding = "another" if len(fields) == 1 else f"{len(fields):,} more"
        raise Conflict(
            f"Adventure {adventure.id} has {count:,} story cards and one adventure may hold at "
            f"most {limits.MAX_CARDS:,}: delete or merge cards you no longer need before "
            f"adding {adding}.",
            code="limit_reached",
        )
    rows = [
        StoryCard(adventure_id=adventure.id, known_by=secrets.dumps(k), **card_columns(f))
        for f, k in zip(fields, known_by, strict=True)
    ]
    repo.add_cards(rows)
    return [CardView.of(row) for row in rows]


def _secret(card: Mapping[str, object] | Card) -> object:
    """The ``known_by`` a client sent with a card (a ``Card`` from elsewhere has none)."""
    return card.get("known_by") if isinstance(card, Mapping) else None


def accept_proposal(
    story: Story,
    proposal_id: int,
    edited: Mapping[str, object],
    found: Sequence[proposals.Match] | None = None,
) -> CardView:
    """The lore clerk's proposal as an ordinary card (``world.proposals``), made as any
    card is, or (an update) its lines added after its card's entry; the proposal is marked
    accepted in the same unit of work (``found``: the path's ``proposals.matched``, when the
    caller has it)."""
    done = proposals.accepting(story, proposal_id, edited, found)
    if done.card_id is None:
        card = add_card(story.session, story.adventure, done.fields)
    else:  # an update: its lines after the entry, the player's text kept as it is
        row = card_row(story.session, done.card_id, story.adventure.user_id)
        entry = card_updates.added_to(row.entry, done.entry)
        card = update_card(story.session, row, {"entry": entry})
    proposals.accepted(done.row, card.id)
    return card


def cards(session: Session, adventure: Adventure, query: str = "") -> list[CardView]:
    views = [CardView.of(row) for row in StoryRepository(session).cards(adventure.id)]
    query = limits.text_field(query, "q", limits.SEARCH_MAX, hint="")
    return [v for v in views if matches_search(v, query)] if query else views


def card_row(session: Session, card_id: int, user_id: int) -> StoryCard:
    row = StoryRepository(session).card(card_id)
    return owned(session, row, user_id, NotFound(f"There is no story card {card_id}."))


def update_card(session: Session, row: StoryCard, data: Mapping[str, object]) -> CardView:
    """The fields given changed (``known_by``: null clears the secret), all of them checked
    before any changes."""
    changes = card_columns(clean_card_changes(data))
    if "known_by" in data:
        changes["known_by"] = secrets.dumps(secrets.clean_known_by(data["known_by"]))
    for key, value in changes.items():
        setattr(row, key, value)
    session.flush()
    return CardView.of(row)


def delete_card(session: Session, row: StoryCard) -> Deleted:
    card_id = row.id
    StoryRepository(session).delete_card(row)
    return Deleted(card_id)
