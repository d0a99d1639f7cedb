"""The export file's format: its name, versions and sections, every field and the values it
takes, and the limits an import holds a file to.

The file is a data format, so it is declared as pydantic models (the one part of the
services that uses pydantic): ``AdventureFileV1`` to ``V5``, one per version, each
refusing a field it does not declare (``extra="forbid"``). The export builds a ``V2``, a
``V3``, a ``V4`` or a ``V5`` and dumps it; an import validates the file against the model of its
version (the values, and how one is refused: ``values``).

Fields are declared in the order the export writes them, and every field is written,
``null`` included, so a file written comes back byte for byte.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import (
    Field,
    JsonValue,
    PlainValidator,
    ValidationInfo,
    model_validator,
)

from talekeeper.core.errors import InvalidInput
from talekeeper.services.cards.match import CARD_TYPES
from talekeeper.services.cards.model import card_json
from talekeeper.services.cards.rules import SecondaryRule, clean_card
from talekeeper.services.common import limits
from talekeeper.services.common.rendering import ACTION_TYPES
from talekeeper.services.exchange import proposal_entries
from talekeeper.services.exchange.proposal_entries import ProposalEntry
from talekeeper.services.exchange.values import (
    ENTRY,
    FIELD,
    Count,
    Depth,
    Entry,
    Flag,
    Key,
    MaybeCount,
    MaybeKey,
    MaybeTime,
    Time,
    chars,
    choice,
    importing,
    maybe_chars,
    names_list,
    refusal,
    shown,
)
from talekeeper.services.library import store as library
from talekeeper.services.memory import scene as scenes
from talekeeper.services.memory import summary as summaries
from talekeeper.services.memory.manage import EVERY_STATUS, MEMORY_TEXT_MAX
from talekeeper.services.prompt import budgets
from talekeeper.services.world.secrets import KNOWN_BY_MAX
from talekeeper.storage.models import LibrarySource
from talekeeper.storage.models.world import ALIASES_MAX, NAME_MAX, VALUE_MAX
from talekeeper.storage.vocabulary import (
    ActionState,
    Authority,
    EntityKind,
    EventKind,
    EventOrigin,
    MemoryOrigin,
    SummaryTrigger,
    WitnessMode,
)

FORMAT: Final = "talekeeper-adventure"
VERSION: Final = 2  # what an export is written as, unless it holds a section of a later version
KNOWLEDGE_VERSION: Final = 3  # version 2 with ``knowledge``: the attached library sources
WORLD_VERSION: Final = 4  # version 3 with the world: ``world_entities`` and ``world_events``
PROPOSALS_VERSION: Final = proposal_entries.PROPOSALS_VERSION  # 4 with ``card_proposals``
STATES = tuple(ActionState)  # active, take, undone, removed
KIND_MAX = 16  # a source's kind ("pdf", "epub", ...), as a reference names it
AUTHORITIES = tuple(Authority)
ORIGINS = tuple(MemoryOrigin)
TRIGGERS = tuple(SummaryTrigger)
RULES = tuple(SecondaryRule)
WRITER_MAX = 255  # a model name, as the column holds it
SCENARIO_MAX = 64  # a scenario id, as the column holds it
# How deep any value of a file may nest. An export nests about 8 deep (the memories an
# Insights snapshot lists); the bound keeps every later reading of a value copied verbatim
# (the export, the Insights page) far from the recursion limit.
MAX_NESTING = 32

# The most entries of each list a file may hold: what one adventure may hold. Insights
# snapshots are one per reply, so no more than actions; Story Summary versions (one per 15
# actions, plus the player's edits) are held to the same number.
ENTRY_CAPS = {
    "branches": (limits.MAX_BRANCHES, "branches"),
    "actions": (limits.MAX_ACTIONS, "actions (every state: takes, undone and removed ones too)"),
    "cards": (limits.MAX_CARDS, "story cards"),
    "memories": (limits.MAX_MEMORIES, "memories (every status)"),
    "insights": (limits.MAX_ACTIONS, "Insights snapshots (one per action)"),
    "summaries": (limits.MAX_ACTIONS, "Story Summary versions"),
    "knowledge": (library.MAX_ATTACHED, "attached library sources"),
    "world_entities": (limits.MAX_WORLD_ENTITIES, "world entities"),
    "world_events": (limits.MAX_WORLD_EVENTS, "world events"),
    "card_proposals": proposal_entries.CAP,
}
EVIDENCE_MAX = limits.NARRATION_MAX  # an event's sentence: never longer than its action

# Replies' uses of memories (``used_by`` entries) in one file: every reply of the largest
# adventure (half its rows) using 40 memories, eight times the most a turn retrieves.
USES_MAX = limits.MAX_ACTIONS * 20


def _scenario(value: object, info: ValidationInfo) -> str | None:
    if value is not None and (
        not isinstance(value, str) or (importing(info) and len(value) > SCENARIO_MAX)
    ):
        raise refusal(FIELD, f"must be null or a scenario id of at most {SCENARIO_MAX}")
    return value


def _budgets(value: object, info: ValidationInfo) -> dict[str, dict[str, float]]:
    """The adventure's own section budgets, checked as the adventure routes check them."""
    try:
        return budgets.clean_overrides({} if value is None else value)
    except InvalidInput as exc:
        raise refusal(FIELD, exc.message.rstrip(".")) from None


# -- the adventure ---------------------------------------------------------------------------


class Persona(Entry):
    name: Annotated[str, chars(limits.PERSONA_NAME_MAX)] = ""
    pronouns: Annotated[str, chars(limits.PERSONA_PRONOUNS_MAX)] = ""
    description: Annotated[str, chars(limits.PERSONA_DESCRIPTION_MAX)] = ""


class Scene(Entry):
    location: Annotated[str, chars(scenes.LOCATION_MAX)] = ""
    present: Annotated[list[str], names_list(scenes.SCENE_NAMES, scenes.NAME_MAX)] = Field(
        default_factory=list
    )
    summary: Annotated[str, chars(scenes.SUMMARY_MAX)] = ""
    by_player: Flag = False


class AdventureMeta(Entry):
    """The adventure's own fields; its branch in play named by its file key."""

    title: Annotated[str, chars(limits.TITLE_MAX, required=True)]
    scenario: Annotated[str | None, PlainValidator(_scenario)] = None
    persona: Persona = Field(default_factory=Persona)
    ai_instructions: Annotated[str, chars(limits.COMPONENT_MAX)] = ""
    plot_essentials: Annotated[str, chars(limits.COMPONENT_MAX)] = ""
    authors_note: Annotated[str, chars(limits.COMPONENT_MAX)] = ""
    auto_summarize: Flag = True
    memory_bank: Flag = True
    # Written only when not the default, so a file of an adventure that never changed it
    # reads as it did before there was one (and comes back byte for byte).
    witness_mode: Annotated[str, choice(tuple(WitnessMode))] = Field(
        default=WitnessMode.LABEL.value, exclude_if=lambda mode: mode == WitnessMode.LABEL
    )
    # Written only when on (the lore clerk's proposals become cards without asking).
    auto_accept_cards: Flag = Field(default=False, exclude_if=lambda on: not on)
    # Also written only when set: the shares and ceilings the player gave (``budgets``).
    section_budgets: Annotated[dict[str, dict[str, int | float]], PlainValidator(_budgets)] = Field(
        default_factory=dict, exclude_if=lambda given: not given
    )
    scene: Scene = Field(default_factory=Scene)
    current_branch: MaybeKey = None  # an import refuses a key that names no branch
    created_at: Time
    updated_at: Time


class LegacyAdventureMeta(AdventureMeta):
    """Version 1's: the Story Summary was a field of the adventure."""

    story_summary: Annotated[str, chars(limits.COMPONENT_MAX)] = ""


# -- the story -------------------------------------------------------------------------------


class BranchEntry(Entry):
    key: Key
    parent: MaybeKey = None
    fork_depth: Count
    forked_from_action: MaybeKey = None
    name: Annotated[str, chars(limits.BRANCH_NAME_MAX)] = ""
    created_at: Time


class ActionEntry(Entry):
    key: Key
    branch: Key
    depth: Count
    type: Annotated[str, choice(ACTION_TYPES)]
    text: Annotated[str, chars(limits.NARRATION_MAX)] = ""
    state: Annotated[str, choice(STATES)]
    take: Key
    created_at: Time
    edited_at: MaybeTime = None
    # The persona a shared adventure's player wrote it as (docs/sharing.md); written only
    # where there is one, so a file of single play reads as one from before sharing.
    author: Annotated[
        Annotated[str, chars(limits.PERSONA_NAME_MAX)] | None,
        Field(exclude_if=lambda name: name is None),
    ] = None

    @model_validator(mode="before")
    @classmethod
    def _kind(cls, data: object, info: ValidationInfo) -> object:
        """An import names a bad type or state together with the values both may take."""
        if importing(info) and isinstance(data, dict):
            kind, state = data.get("type"), data.get("state")
            if kind not in ACTION_TYPES or state not in STATES:
                raise refusal(
                    FIELD,
                    f"has type {shown(kind)} / state {shown(state)}; types are "
                    f"{', '.join(ACTION_TYPES)}, states {', '.join(STATES)}",
                )
        return data


# A memory's, a card's or an event's secret: the characters it names (docs/world.md, "Who
# knows what"); null: none. Written only for a secret, so a file of a story without
# secrets reads as one from before them.
KnownBy = Annotated[
    Annotated[list[str], names_list(KNOWN_BY_MAX, NAME_MAX)] | None,
    Field(exclude_if=lambda names: names is None),
]


class CardEntry(Entry):
    """A story card; a file from before the rules (``always_on`` and the secondary
    keywords) holds none, and its cards take the defaults."""

    name: Annotated[str, chars(limits.CARD_NAME_MAX, required=True)]
    type: Annotated[str, choice(CARD_TYPES)] = "other"
    keywords: list[str] = Field(default_factory=list)
    entry: Annotated[str, chars(limits.CARD_ENTRY_MAX)] = ""
    notes: Annotated[str, chars(limits.CARD_NOTES_MAX)] = ""
    always_on: Flag = False
    secondary_keywords: list[str] = Field(default_factory=list)
    secondary_rule: Annotated[str, choice(RULES)] = SecondaryRule.ANY.value
    known_by: KnownBy = None
    created_at: Time
    updated_at: Time

    @model_validator(mode="before")
    @classmethod
    def _cleaned(cls, data: object, info: ValidationInfo) -> object:
        """An import reads a card as the card routes do (``clean_card``): stripped, the
        type in lower case, keywords without repeats."""
        if not importing(info) or not isinstance(data, dict):
            return data
        try:
            return data | card_json(clean_card(data))
        except InvalidInput as exc:
            raise refusal(ENTRY, exc.message) from None


class InsightEntry(Entry):
    """An Insights snapshot, copied verbatim: what the model was shown for a reply."""

    action: Key
    data: dict[str, JsonValue]
    created_at: Time

    @model_validator(mode="before")
    @classmethod
    def _snapshot(cls, data: object, info: ValidationInfo) -> object:
        if importing(info) and isinstance(data, dict) and not isinstance(data.get("data"), dict):
            raise refusal(FIELD, "is malformed")
        return data


# -- the memory ------------------------------------------------------------------------------


class MemoryEntry(Entry):
    key: Key
    branch: Key
    depth: Depth
    action: MaybeKey = None
    source_start: MaybeCount = None
    source_end: MaybeCount = None
    text: Annotated[str, chars(MEMORY_TEXT_MAX)] = ""
    authority: Annotated[str, choice(AUTHORITIES)]
    origin: Annotated[str, choice(ORIGINS)]
    writer: Annotated[str, chars(WRITER_MAX)] = ""
    status: Annotated[str, choice(EVERY_STATUS)]
    pinned: Flag = False
    stale: Flag = False
    use_count: Count
    last_used_at: MaybeTime = None
    created_at: Time
    updated_at: Time
    used_by: list[int] = Field(default_factory=list)  # replies, by action key
    known_by: KnownBy = None


class SummaryEntry(Entry):
    key: Key
    branch: Key
    depth: Depth
    action: MaybeKey = None
    covers_to: Depth
    text: Annotated[str, chars(summaries.SUMMARY_MAX)] = ""
    trigger: Annotated[str, choice(TRIGGERS)]
    writer: Annotated[str, chars(WRITER_MAX)] = ""
    base: MaybeKey = None
    refreshes: MaybeKey = None
    stale: Flag = False
    created_at: Time


class SourceRef(Entry):
    """An attached library source as the file names it (``knowledge``): enough to find it
    in a library again, never its text, which stays in its owner's library."""

    title: Annotated[str, chars(library.TITLE_MAX, required=True)]
    filename: Annotated[str, chars(library.FILENAME_MAX, required=True)]
    kind: Annotated[str, chars(KIND_MAX)] = ""
    size_bytes: Count
    passage_count: Count

    @classmethod
    def of(cls, source: LibrarySource) -> SourceRef:
        return cls(
            title=source.title,
            filename=source.filename,
            kind=source.kind,
            size_bytes=source.size_bytes,
            passage_count=source.passage_count,
        )


# -- the world -------------------------------------------------------------------------------


class EntityEntry(Entry):
    """A named thing of the world; events name it by its ``key`` (its place in the list)."""

    key: Key
    kind: Annotated[str, choice(tuple(EntityKind))]
    name: Annotated[str, chars(NAME_MAX, required=True)]
    aliases: Annotated[list[str], names_list(ALIASES_MAX, NAME_MAX)] = Field(default_factory=list)
    created_at: Time


class EventEntry(Entry):
    """One change an action says, on its node (``branch``, ``depth``): its entities by their
    keys in ``world_entities``, its action by its key in ``actions``."""

    action: Key
    branch: Key
    depth: Count
    kind: Annotated[str, choice(tuple(EventKind))]
    subject: MaybeKey = None
    object: MaybeKey = None
    target: MaybeKey = None
    value: Annotated[str | None, maybe_chars(VALUE_MAX)] = None
    origin: Annotated[str, choice(tuple(EventOrigin))]
    evidence: Annotated[str, chars(EVIDENCE_MAX)] = ""
    dismissed: Flag = False
    known_by: KnownBy = None
    created_at: Time


# -- the file --------------------------------------------------------------------------------


class AdventureFile(Entry):
    """What every version holds."""

    format: Literal["talekeeper-adventure"]
    version: int
    adventure: AdventureMeta
    branches: list[BranchEntry] = Field(default_factory=list)
    actions: list[ActionEntry] = Field(default_factory=list)
    cards: list[CardEntry] = Field(default_factory=list)
    insights: list[InsightEntry] = Field(default_factory=list)


class AdventureFileV1(AdventureFile):
    version: Literal[1]
    adventure: LegacyAdventureMeta


class MemoryFile(AdventureFile):
    """Version 2 on: the memories and the Story Summary versions."""

    memories: list[MemoryEntry] = Field(default_factory=list)
    summaries: list[SummaryEntry] = Field(default_factory=list)


class AdventureFileV2(MemoryFile):
    version: Literal[2]


class AdventureFileV3(MemoryFile):
    version: Literal[3]
    knowledge: list[SourceRef] = Field(default_factory=list)


class AdventureFileV4(MemoryFile):
    """Version 3 with the world: its entities and every event, on any branch."""

    version: Literal[4]
    knowledge: list[SourceRef] = Field(default_factory=list)
    world_entities: list[EntityEntry] = Field(default_factory=list)
    world_events: list[EventEntry] = Field(default_factory=list)


class AdventureFileV5(AdventureFileV4):
    """Version 4 with the lore clerk's card proposals, in every state."""

    version: Literal[5]  # type: ignore[assignment]
    card_proposals: list[ProposalEntry] = Field(default_factory=list)


AnyFile = AdventureFileV1 | AdventureFileV2 | AdventureFileV3 | AdventureFileV4 | AdventureFileV5
ExportedFile = Annotated[
    AdventureFileV2 | AdventureFileV3 | AdventureFileV4 | AdventureFileV5,
    Field(discriminator="version"),
]
FILES: dict[int, type[AdventureFile]] = {
    1: AdventureFileV1,
    2: AdventureFileV2,
    3: AdventureFileV3,
    4: AdventureFileV4,
    5: AdventureFileV5,
}
SECTIONS = {version: frozenset(model.model_fields) for version, model in FILES.items()}
