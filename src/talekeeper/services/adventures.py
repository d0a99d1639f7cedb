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
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from talekeeper.core.errors import Conflict, InvalidInput, NotFound
from talekeeper.core.lineage import lineage_of
from talekeeper.services import limits
from talekeeper.services.cards import CardView, card_columns, clean_card, matches_search
from talekeeper.services.memory import summary as story_summary
from talekeeper.services.memory.base import MemoryService
from talekeeper.services.memory.scene import current_scene
from talekeeper.services.rendering import NARRATION
from talekeeper.services.scenarios import Scenario
from talekeeper.services.tree import Story, load_adventure
from talekeeper.storage.models import Adventure, Branch, StoryCard
from talekeeper.storage.repositories.story import StoryRepository

COMPONENTS = ("ai_instructions", "plot_essentials", "authors_note")
# The Story Summary is a plot component too, but versioned (``memory.summary``): writing it
# through the adventure adds the player's version, like ``PUT .../summary``.
SUMMARY = "story_summary"
PERSONA = (
    ("name", "persona_name", limits.PERSONA_NAME_MAX),
    ("pronouns", "persona_pronouns", limits.PERSONA_PRONOUNS_MAX),
    ("description", "persona_description", limits.PERSONA_DESCRIPTION_MAX),
)
TOGGLES = ("auto_summarize", "memory_bank")


def _persona(value: Any) -> dict[str, str]:
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


def clean_fields(data: dict[str, Any]) -> dict[str, Any]:
    """Validated adventure columns from a client's fields (only those given)."""
    out: dict[str, Any] = {}
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
    if "persona" in data:
        out.update(_persona(data["persona"]))
    return out


def adventure_view(story: Story) -> dict[str, Any]:
    adventure = story.adventure
    return {
        **summary_view(adventure),
        "persona": {
            "name": adventure.persona_name,
            "pronouns": adventure.persona_pronouns,
            "description": adventure.persona_description,
        },
        **{key: getattr(adventure, key) for key in COMPONENTS},
        SUMMARY: story_summary.text_in_force(story.session, adventure),
        **{key: getattr(adventure, key) for key in TOGGLES},
        "scene": current_scene(story).view(),
        "current_branch_id": adventure.current_branch_id,
        **story.state(),
        "length": story.repo.path_length(story.lineage()),
    }


def summary_view(adventure: Adventure) -> dict[str, Any]:
    return {
        "id": adventure.id,
        "title": adventure.title,
        "scenario": adventure.scenario_id,
        "created_at": adventure.created_at.isoformat(),
        "updated_at": adventure.updated_at.isoformat(),
    }


def create(
    session: Session,
    user_id: int,
    data: dict[str, Any],
    memory: MemoryService,
    scenario: Scenario | None = None,
) -> Story:
    fields: dict[str, Any] = {"title": "", **dict.fromkeys(COMPONENTS, "")}
    opening = ""
    cards: list[dict[str, Any]] = []
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
        cards = [
            {
                "name": c.name,
                "type": c.type,
                "keywords": list(c.keywords),
                "entry": c.entry,
                "notes": c.notes,
                "always_on": c.always_on,
                "secondary_keywords": list(c.secondary_keywords),
                "secondary_rule": c.secondary_rule,
            }
            for c in scenario.cards_for_creation()
        ]
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
    if data.get(SUMMARY):
        story_summary.edit_summary(session, adventure, data[SUMMARY])
    if opening:
        story.append(NARRATION, opening)
    return story


def update(session: Session, adventure: Adventure, data: dict[str, Any]) -> None:
    for key, value in clean_fields(data).items():
        setattr(adventure, key, value)
    if SUMMARY in data and data[SUMMARY] != story_summary.text_in_force(session, adventure):
        story_summary.edit_summary(session, adventure, data[SUMMARY])
    session.flush()


def delete(session: Session, adventure_id: int, user_id: int) -> None:
    StoryRepository(session).delete_adventure(load_adventure(session, adventure_id, user_id))


def listing(session: Session, user_id: int) -> list[dict[str, Any]]:
    return [summary_view(a) for a in StoryRepository(session).adventures(user_id)]


def listing_with_lengths(session: Session, user_id: int) -> list[dict[str, Any]]:
    """``listing`` with each adventure's ``length``: the actions on its current branch's
    path (the opening included), as ``adventure_view`` counts them. One count per adventure,
    so only the adventures list asks for it."""
    repo = StoryRepository(session)
    out = []
    for adventure in repo.adventures(user_id):
        links = repo.links(adventure.id)
        current = adventure.current_branch_id
        length = None  # an adventure without a usable current branch has no length to show
        if current is not None and current in links:
            length = repo.path_length(lineage_of(links, current))
        out.append({**summary_view(adventure), "length": length})
    return out


# -- story cards ----------------------------------------------------------------------------


def add_card(session: Session, adventure: Adventure, data: dict[str, Any]) -> CardView:
    return add_cards(session, adventure, [data])[0]


def add_cards(
    session: Session, adventure: Adventure, cards: list[dict[str, Any]]
) -> list[CardView]:
    """Add ``cards`` in order: all of them, or (past the card limit, or one refused) none,
    with one count of the adventure's cards however many are added."""
    fields = [clean_card(data) for data in cards]
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
    rows = [StoryCard(adventure_id=adventure.id, **card_columns(f)) for f in fields]
    repo.add_cards(rows)
    return [CardView.of(row) for row in rows]


def cards(session: Session, adventure: Adventure, query: str = "") -> list[CardView]:
    views = [CardView.of(row) for row in StoryRepository(session).cards(adventure.id)]
    query = limits.text_field(query, "q", limits.SEARCH_MAX, hint="")
    return [v for v in views if matches_search(v, query)] if query else views


def card_row(session: Session, card_id: int, user_id: int) -> StoryCard:
    row = StoryRepository(session).card(card_id)
    missing = NotFound(f"There is no story card {card_id}.")
    if row is None:
        raise missing
    try:
        load_adventure(session, row.adventure_id, user_id)
    except NotFound:  # someone else's card reads as no card at all, not as their adventure
        raise missing from None
    return row


def update_card(session: Session, row: StoryCard, data: dict[str, Any]) -> CardView:
    for key, value in card_columns(clean_card(data, partial=True)).items():
        setattr(row, key, value)
    session.flush()
    return CardView.of(row)


def delete_card(session: Session, row: StoryCard) -> None:
    StoryRepository(session).delete_card(row)
