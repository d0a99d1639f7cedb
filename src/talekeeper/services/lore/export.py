"""Story cards written out for other tools: AI Dungeon story cards, SillyTavern World Info,
a Character Card V3 ``lorebook_v3`` and a NovelAI ``.lorebook``.

Invariants:

- Reading an export back (``read_lore``) gives the same cards, in the same order: name,
  type, keywords, entry, notes, always-on flag, secondary keywords and rule. What a
  format cannot say itself is written under the entry's ``extensions.talekeeper``,
  which the other tools ignore and Talekeeper reads first; a card read back from it
  keeps its notes as written, without a provenance line.
- Whatever the other tool itself will not do as Talekeeper does is a warning of the
  export, never silent: an AI Dungeon entry over 1,000 characters, a keyword with a
  comma in AI Dungeon's comma-separated keys, always-on cards and secondary keywords
  where the tool has none, secondary rules other than "any" where the tool knows only
  that one.
- A keyword that would read as a pattern (``/…/``) is written as the pattern of
  exactly its text where the tool reads patterns; an entry that starts with ``@@`` is
  written after a line break in a V3 lorebook, so it is not read as a decorator.
- Pure: cards in, bytes out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from talekeeper.core.errors import InvalidInput
from talekeeper.services.cards.rules import SecondaryRule
from talekeeper.services.lore.fields import JsonObject
from talekeeper.services.lore.keywords import written_key
from talekeeper.services.lore.report import counted

AIDUNGEON_VALUE_MAX = 1_000  # characters AI Dungeon keeps of a story card's entry
ST_LOGIC = {SecondaryRule.ANY: 0, SecondaryRule.NONE: 2, SecondaryRule.ALL: 3}


class ExportFormat(StrEnum):
    AIDUNGEON = "aidungeon"
    SILLYTAVERN = "sillytavern"
    CCV3 = "ccv3"
    NOVELAI = "novelai"


class CardLike(Protocol):
    """What an export needs of a card: ``Card``'s fields, read from a ``Card`` (a stored one,
    a draft) or any object that has them."""

    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def keywords(self) -> Sequence[str]: ...
    @property
    def entry(self) -> str: ...
    @property
    def notes(self) -> str: ...
    @property
    def always_on(self) -> bool: ...
    @property
    def secondary_keywords(self) -> Sequence[str]: ...
    @property
    def secondary_rule(self) -> str: ...


@dataclass(frozen=True)
class ExportFile:
    format: ExportFormat
    filename: str
    data: bytes
    warnings: tuple[str, ...] = ()


def _rule(card: CardLike) -> SecondaryRule:
    rules = {str(rule): rule for rule in SecondaryRule}
    return rules.get(str(card.secondary_rule), SecondaryRule.ANY)


def _own(card: CardLike, *fields: str) -> JsonObject:
    """``extensions.talekeeper``: the named fields a format cannot carry itself."""
    values: JsonObject = {
        "type": card.type,
        "notes": card.notes,
        "always_on": card.always_on,
        "secondary_keywords": list(card.secondary_keywords),
        "secondary_rule": str(_rule(card)),
    }
    return {"talekeeper": {name: values[name] for name in fields}}


class _Warnings:
    """Counts of what the target tool will not do as Talekeeper does, as sentences."""

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self.lines: list[str] = []

    def count(self, cards: Sequence[CardLike], test: Callable[[CardLike], bool], says: str) -> None:
        found = sum(1 for card in cards if test(card))
        if found:
            self.lines.append(f"{counted(found, 'card')}: {says.format(tool=self.tool)}")


def _aidungeon(cards: Sequence[CardLike], warn: _Warnings) -> list[JsonObject]:
    for card in cards:
        if len(card.entry) > AIDUNGEON_VALUE_MAX:
            warn.lines.append(
                f"{card.name!r}: its entry is {len(card.entry):,} characters; AI Dungeon keeps "
                f"{AIDUNGEON_VALUE_MAX:,} of a story card's"
            )
        for keyword in card.keywords:
            if "," in keyword:
                warn.lines.append(
                    f"{card.name!r}: keyword {keyword!r} holds a comma; AI Dungeon reads it as "
                    "separate keywords"
                )
    warn.count(cards, lambda c: c.always_on, "always on; {tool} has no always-on cards")
    warn.count(cards, lambda c: bool(c.secondary_keywords), "{tool} has no secondary keywords")
    return [
        {
            "title": card.name,
            "type": card.type,
            "keys": ",".join(card.keywords),
            "value": card.entry,
            "description": card.notes,
            "useForCharacterCreation": False,
            "extensions": _own(card, "always_on", "secondary_keywords", "secondary_rule"),
        }
        for card in cards
    ]


def _sillytavern(cards: Sequence[CardLike]) -> JsonObject:
    entries: JsonObject = {}
    for uid, card in enumerate(cards):
        entries[str(uid)] = {
            "uid": uid,
            "key": [written_key(k) for k in card.keywords],
            "keysecondary": [written_key(k) for k in card.secondary_keywords],
            "comment": card.name,
            "content": card.entry,
            "constant": card.always_on,
            "selective": True,
            "selectiveLogic": ST_LOGIC[_rule(card)],
            "order": uid + 1,
            "position": 0,
            "disable": False,
            "addMemo": True,
            "excludeRecursion": False,
            "probability": 100,
            "useProbability": True,
            "depth": 4,
            "group": "",
            "scanDepth": None,
            "caseSensitive": False,
            "matchWholeWords": True,
            "displayIndex": uid,
            "extensions": _own(card, "type", "notes"),
        }
    return {"entries": entries}


def _entry_text(entry: str) -> str:
    return "\n" + entry if entry.startswith("@@") else entry  # not a decorator line


def _ccv3(cards: Sequence[CardLike], warn: _Warnings, title: str) -> JsonObject:
    warn.count(
        cards,
        lambda c: bool(c.secondary_keywords) and _rule(c) is not SecondaryRule.ANY,
        "a secondary rule other than 'any'; other tools read V3 secondary keys as 'any'",
    )
    entries = [
        {
            "keys": [written_key(k) for k in card.keywords],
            "content": _entry_text(card.entry),
            "extensions": _own(card, "type", "notes", "secondary_rule"),
            "enabled": True,
            "insertion_order": order,
            "use_regex": False,
            "constant": card.always_on,
            "selective": bool(card.secondary_keywords),
            "secondary_keys": [written_key(k) for k in card.secondary_keywords],
            "name": card.name,
            "comment": "",
            "id": order,
            "case_sensitive": False,
        }
        for order, card in enumerate(cards, 1)
    ]
    book: JsonObject = {"name": title, "description": "", "extensions": {}, "entries": entries}
    return {"spec": "lorebook_v3", "data": book}


def _novelai(cards: Sequence[CardLike], warn: _Warnings) -> JsonObject:
    warn.count(cards, lambda c: bool(c.secondary_keywords), "{tool} has no secondary keywords")
    types = list(dict.fromkeys(card.type for card in cards))
    config: JsonObject = {
        "prefix": "",
        "suffix": "\n",
        "tokenBudget": 1,
        "reservedTokens": 0,
        "trimDirection": "trimBottom",
        "insertionType": "newline",
        "maximumTrimType": "sentence",
        "insertionPosition": -1,
    }
    entries = [
        {
            "text": card.entry,
            "contextConfig": {**config, "budgetPriority": order},
            "displayName": card.name,
            "id": f"talekeeper-card-{order}",
            "keys": [written_key(k) for k in card.keywords],
            "searchRange": 1000,
            "enabled": True,
            "forceActivation": card.always_on,
            "keyRelative": False,
            "nonStoryActivatable": False,
            "category": f"talekeeper-{card.type}",
            "loreBiasGroups": [],
            "extensions": _own(card, "notes", "secondary_keywords", "secondary_rule"),
        }
        for order, card in enumerate(cards, 1)
    ]
    categories = [
        {
            "name": kind.capitalize(),
            "id": f"talekeeper-{kind}",
            "enabled": True,
            "createSubcontext": False,
            "useCategoryDefaults": False,
            "categoryBiasGroups": [],
        }
        for kind in types
    ]
    return {
        "lorebookVersion": 5,
        "entries": entries,
        "settings": {"orderByKeyLocations": False},
        "categories": categories,
    }


TOOLS = {
    ExportFormat.AIDUNGEON: ("AI Dungeon", "story-cards.json"),
    ExportFormat.SILLYTAVERN: ("SillyTavern", "world-info.json"),
    ExportFormat.CCV3: ("Character Card V3", "lorebook.json"),
    ExportFormat.NOVELAI: ("NovelAI", "lorebook"),
}


def _slug(title: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", title).strip("-").lower()[:60] or "talekeeper"


def export_cards(
    cards: Sequence[CardLike], fmt: ExportFormat | str, *, title: str = "Talekeeper cards"
) -> ExportFile:
    """``cards``, in their order, as a file of ``fmt`` (see the module's invariants)."""
    formats = {str(f): f for f in ExportFormat}
    if str(fmt) not in formats:
        raise InvalidInput(f"Cards can be exported as {', '.join(formats)}; got {fmt!r}.")
    target = formats[str(fmt)]
    tool, suffix = TOOLS[target]
    warn = _Warnings(tool)
    value: JsonObject | list[JsonObject]
    if target is ExportFormat.AIDUNGEON:
        value = _aidungeon(cards, warn)
    elif target is ExportFormat.SILLYTAVERN:
        value = _sillytavern(cards)  # says all a card says: nothing to warn of
    elif target is ExportFormat.CCV3:
        value = _ccv3(cards, warn, title)
    else:
        value = _novelai(cards, warn)
    data = json.dumps(value, ensure_ascii=False, indent=2).encode("utf-8")
    return ExportFile(target, f"{_slug(title)}.{suffix}", data, tuple(warn.lines))
