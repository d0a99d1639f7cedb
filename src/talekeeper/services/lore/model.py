"""The neutral types every lore reader returns and every writer takes.

Invariants:

- A ``CardDraft`` is a ``Card`` (its fields, in its order, then the draft's own) that
  already holds to a story card's limits: a name of at most
  ``limits.CARD_NAME_MAX`` characters, at most ``limits.CARD_KEYWORDS_MAX``
  keywords (primary and secondary each) of at most ``limits.CARD_KEYWORD_MAX``
  characters, de-duplicated ignoring case, an entry of at most
  ``limits.CARD_ENTRY_MAX`` and notes of at most ``limits.CARD_NOTES_MAX``
  characters, and a type from ``CARD_TYPES``. What it took to get there is in
  the report; nothing is cut without a report item saying so.
- A draft is never written anywhere by this package: it is a preview until the
  player confirms.
- A report opens with its totals: how many cards, and per level the sum of the
  items' counts (an entry changed in two ways counts twice under "changed").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypedDict

from talekeeper.services.cards.model import Card, CardJsonValue, card_json


class LoreFormat(StrEnum):
    """Every file shape Talekeeper recognises, one member each."""

    AIDUNGEON_CARDS = "aidungeon_cards"
    AIDUNGEON_WORLD_INFO = "aidungeon_world_info"
    AIDUNGEON_SCENARIO = "aidungeon_scenario"
    AIDUNGEON_ADVENTURE = "aidungeon_adventure"
    NOVELAI_LOREBOOK = "novelai_lorebook"
    NOVELAI_SCENARIO = "novelai_scenario"
    NOVELAI_STORY = "novelai_story"
    SILLYTAVERN_WORLD_INFO = "sillytavern_world_info"
    CHARACTER_BOOK = "character_book"
    LOREBOOK_V3 = "lorebook_v3"
    CHARACTER_CARD_V1 = "character_card_v1"
    CHARACTER_CARD_V2 = "character_card_v2"
    CHARACTER_CARD_V3 = "character_card_v3"
    AGNAI_MEMORY_BOOK = "agnai_memory_book"
    RISU_LOREBOOK = "risu_lorebook"
    KOBOLD_STORY = "koboldai_story"
    KOBOLD_UNITED_STORY = "koboldai_united_story"
    KOBOLD_LITE_SCENARIO = "kobold_lite_scenario"
    KOBOLD_WORLD_INFO = "kobold_world_info"

    @property
    def label(self) -> str:
        """The format as a player knows it (provenance notes, messages)."""
        return LABELS[self]


LABELS = {
    LoreFormat.AIDUNGEON_CARDS: "AI Dungeon story cards",
    LoreFormat.AIDUNGEON_WORLD_INFO: "AI Dungeon World Info",
    LoreFormat.AIDUNGEON_SCENARIO: "AI Dungeon scenario",
    LoreFormat.AIDUNGEON_ADVENTURE: "AI Dungeon adventure",
    LoreFormat.NOVELAI_LOREBOOK: "NovelAI lorebook",
    LoreFormat.NOVELAI_SCENARIO: "NovelAI scenario",
    LoreFormat.NOVELAI_STORY: "NovelAI story",
    LoreFormat.SILLYTAVERN_WORLD_INFO: "SillyTavern World Info",
    LoreFormat.CHARACTER_BOOK: "character book (Character Card V2)",
    LoreFormat.LOREBOOK_V3: "Character Card V3 lorebook",
    LoreFormat.CHARACTER_CARD_V1: "Character Card V1",
    LoreFormat.CHARACTER_CARD_V2: "Character Card V2",
    LoreFormat.CHARACTER_CARD_V3: "Character Card V3",
    LoreFormat.AGNAI_MEMORY_BOOK: "Agnai memory book",
    LoreFormat.RISU_LOREBOOK: "RisuAI lorebook",
    LoreFormat.KOBOLD_STORY: "KoboldAI story",
    LoreFormat.KOBOLD_UNITED_STORY: "KoboldAI United story",
    LoreFormat.KOBOLD_LITE_SCENARIO: "KoboldAI Lite scenario",
    LoreFormat.KOBOLD_WORLD_INFO: "KoboldAI World Info",
}


class ReportItemJson(TypedDict):
    level: str
    message: str
    path: str
    count: int


class ReportJson(TypedDict):
    totals: dict[str, int]  # "cards", then one per ``ReportLevel``
    items: list[ReportItemJson]


class LoreImportJson(TypedDict):
    format: str
    report: ReportJson
    cards: list[dict[str, CardJsonValue]]  # ``card_json`` of each draft


class ScenarioDraftJson(TypedDict):
    format: str
    report: ReportJson
    title: str
    description: str
    opening: str
    alternate_greetings: list[str]
    ai_instructions: str
    plot_essentials: str
    authors_note: str
    cards: list[dict[str, CardJsonValue]]  # ``card_json`` of each draft


class ReportLevel(StrEnum):
    REFUSED = "refused"  # an entry not made into a card, with the reason
    CHANGED = "changed"  # made, but not as the file had it
    LOST = "lost"  # a setting Talekeeper has no equivalent for, counted per setting
    INFO = "info"  # worth knowing; nothing was altered


@dataclass(frozen=True)
class ReportItem:
    level: ReportLevel
    message: str
    path: str = ""  # where in the file: a JSON path, or a byte offset for containers
    count: int = 1  # entries this item stands for

    def to_json(self) -> ReportItemJson:
        return {
            "level": str(self.level),
            "message": self.message,
            "path": self.path,
            "count": self.count,
        }


@dataclass(frozen=True)
class Report:
    items: tuple[ReportItem, ...] = ()

    def of(self, level: ReportLevel) -> list[ReportItem]:
        return [item for item in self.items if item.level is level]

    def totals(self, cards: int) -> dict[str, int]:
        totals = {"cards": cards}
        for level in ReportLevel:
            totals[str(level)] = sum(item.count for item in self.of(level))
        return totals

    def to_json(self, cards: int) -> ReportJson:
        """Totals first, then the items grouped by level in the order of ``ReportLevel``."""
        return {
            "totals": self.totals(cards),
            "items": [item.to_json() for level in ReportLevel for item in self.of(level)],
        }


@dataclass(frozen=True)
class CardDraft(Card):
    """A story card as it would be made: a ``Card`` and where it came from. ``order`` is
    its place (1, 2, ...) in the creation order; ``source`` the JSON path of the entry it
    came from."""

    disabled: bool = False
    order: int = 0
    instruction_like: bool = False  # an always-on entry that reads as an instruction
    source: str = ""


@dataclass(frozen=True)
class LoreImport:
    """Cards read from a lore file, and what the reading changed or lost."""

    format: LoreFormat
    cards: tuple[CardDraft, ...]
    report: Report = field(default_factory=Report)

    def to_json(self) -> LoreImportJson:
        return {
            "format": str(self.format),
            "report": self.report.to_json(len(self.cards)),
            "cards": [card_json(card) for card in self.cards],
        }


@dataclass(frozen=True)
class ScenarioDraft:
    """A new adventure as a file would start it: its plot components, opening (with the
    file's other greetings offered as choices) and cards."""

    format: LoreFormat
    title: str
    opening: str
    alternate_greetings: tuple[str, ...] = ()
    ai_instructions: str = ""
    plot_essentials: str = ""
    authors_note: str = ""
    description: str = ""
    cards: tuple[CardDraft, ...] = ()
    report: Report = field(default_factory=Report)

    def to_json(self) -> ScenarioDraftJson:
        return {
            "format": str(self.format),
            "report": self.report.to_json(len(self.cards)),
            "title": self.title,
            "description": self.description,
            "opening": self.opening,
            "alternate_greetings": list(self.alternate_greetings),
            "ai_instructions": self.ai_instructions,
            "plot_essentials": self.plot_essentials,
            "authors_note": self.authors_note,
            "cards": [card_json(card) for card in self.cards],
        }
