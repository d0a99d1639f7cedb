"""Recognising a file by its content, never by its name.

Invariants:

- The size cap is checked first, on the bytes, before anything is decoded.
- Containers by their magic bytes: a PNG's card chunk, a ZIP's ``card.json``
  (``containers``). Then JSON, whose shape decides, in this order; the first
  match wins:

  object: ``spec`` chara_card_v3 / chara_card_v2 / lorebook_v3 (each needs an
  object ``data``); ``lorebookVersion`` + ``entries`` list: NovelAI lorebook;
  ``scenarioVersion``: NovelAI scenario; ``storyContainerVersion``: NovelAI
  story; ``kind`` "memory" + ``entries`` list: Agnai memory book; ``type`` "risu"
  + ``data`` list: RisuAI lorebook (an object ``data`` is a Risu memory preset,
  refused); ``entries`` an object of entries with ``uid``/``key``: SillyTavern
  World Info; ``entries`` a list of entries with a ``keys`` list and ``content``:
  a bare character book; ``gamestarted``: a KoboldAI story save (United with
  ``worldinfo_v2`` or ``file_version``); ``prompt`` + ``memory`` + ``worldinfo``:
  a KoboldAI Lite scenario; ``data.scenario``/``data.adventure`` holding
  ``storyCards``: an AI Dungeon scenario/adventure; ``name`` (or Pygmalion's
  ``char_name``) and two more card fields, no ``spec``: Character Card V1.

  array: an item with text ``keys`` and ``value``: AI Dungeon story cards; text
  ``keys`` and ``entry``: AI Dungeon World Info; text ``key`` and ``content``:
  KoboldAI World Info.
- Anything else is refused as "not a lore file Talekeeper recognises", with the
  list of what is accepted. Invalid JSON is refused with its line and column.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from talekeeper.core.errors import InvalidInput
from talekeeper.services.lore.containers import (
    PNG_MAGIC,
    ZIP_MAGICS,
    charx_payload,
    png_payload,
)
from talekeeper.services.lore.fields import (
    MAX_FILE_BYTES,
    JsonList,
    JsonObject,
    as_object,
    list_field,
    mend,
    number,
    object_field,
    wrong_kind,
)
from talekeeper.services.lore.model import LABELS, LoreFormat

V1_FIELDS = ("description", "personality", "scenario", "first_mes", "mes_example")
PYGMALION_FIELDS = ("char_persona", "world_scenario", "char_greeting", "example_dialogue")
UNRECOGNISED = (
    "not a lore file Talekeeper recognises. It reads, as JSON or inside a PNG or CHARX "
    "character card: " + "; ".join(LABELS.values()) + "."
)


@dataclass(frozen=True)
class Detected:
    format: LoreFormat
    value: object  # the parsed JSON, narrowed by the reader of its format
    notes: tuple[str, ...] = ()  # what the container said, for the report
    mended: int = 0  # texts that held characters no story can store


def parse_json(data: bytes, where: str) -> tuple[object, str]:
    """``data`` as JSON (and as text), or a refusal naming ``where`` and the line and
    column."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"{where} is not UTF-8 text (bad byte at offset {exc.start}): {UNRECOGNISED}"
        ) from None
    if text.lstrip()[:1] not in ("{", "["):
        raise InvalidInput(f"{where} is {UNRECOGNISED}")
    try:
        value: object = json.loads(text)
        return value, text
    except json.JSONDecodeError as exc:
        raise InvalidInput(
            f"{where} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}."
        ) from None
    except RecursionError:
        raise InvalidInput(f"{where} nests its JSON too deeply to be a lore file.") from None
    except ValueError as exc:  # e.g. a number of more digits than Python converts
        raise InvalidInput(f"{where} is not valid JSON: {exc}.") from None


def detect(data: bytes) -> Detected:
    """The format of a file's bytes, and its parsed JSON."""
    if len(data) > MAX_FILE_BYTES:
        raise InvalidInput(
            f"The file is {len(data):,} bytes; Talekeeper reads lore files of at most "
            f"{MAX_FILE_BYTES // (1024 * 1024)} MB."
        )
    if data.startswith(PNG_MAGIC):
        inner = png_payload(data)
    elif data.startswith(ZIP_MAGICS):
        inner = charx_payload(data)
    else:
        value, mended = mend(*parse_json(data, "The file"))
        return Detected(recognise(value), value, (), mended)
    value, mended = mend(*parse_json(inner.payload, inner.where[0].upper() + inner.where[1:]))
    return Detected(recognise(value), value, inner.notes, mended)


def recognise(value: object) -> LoreFormat:
    if isinstance(value, dict):
        found = _object_format(value)
    elif isinstance(value, list):
        found = _array_format(value)
    else:
        found = None
    if found is None:
        if value == [] or value == {}:
            raise InvalidInput("The file holds nothing: an empty list or object, no entries.")
        obj = as_object(value)
        if obj is not None and "entries" in obj:
            entries = obj["entries"]
            if not isinstance(entries, list | dict):
                raise wrong_kind(entries, "entries", "a list or an object")
        raise InvalidInput(f"The file is {UNRECOGNISED}")
    return found


def _spec_format(obj: JsonObject) -> LoreFormat | None:
    specs = {
        "chara_card_v3": LoreFormat.CHARACTER_CARD_V3,
        "chara_card_v2": LoreFormat.CHARACTER_CARD_V2,
        "lorebook_v3": LoreFormat.LOREBOOK_V3,
    }
    spec = obj.get("spec")
    if not isinstance(spec, str) or spec not in specs:
        return None
    object_field(obj.get("data"), "data", f"an object in a {spec} file")
    return specs[spec]


def _entry_has(value: object, *names: str) -> bool:
    return isinstance(value, dict) and any(name in value for name in names)


def _book_entry(value: object) -> bool:
    return isinstance(value, dict) and isinstance(value.get("keys"), list) and "content" in value


def _object_format(obj: JsonObject) -> LoreFormat | None:
    found = _spec_format(obj)
    entries = obj.get("entries")
    if found is not None:
        return found
    if number(obj.get("lorebookVersion")) is not None and "entries" in obj:
        list_field(entries, "entries", "a list in a NovelAI lorebook")
        return LoreFormat.NOVELAI_LOREBOOK
    if "scenarioVersion" in obj:
        return LoreFormat.NOVELAI_SCENARIO
    if "storyContainerVersion" in obj:
        return LoreFormat.NOVELAI_STORY
    if obj.get("kind") == "memory" and isinstance(entries, list):
        return LoreFormat.AGNAI_MEMORY_BOOK
    if obj.get("type") == "risu":
        if isinstance(obj.get("data"), list):
            return LoreFormat.RISU_LOREBOOK
        if isinstance(obj.get("data"), dict):
            raise InvalidInput(
                "This is a RisuAI memory preset, not a lorebook; Talekeeper has nothing to "
                "import from it."
            )
    if isinstance(entries, dict) and (
        not entries or any(_entry_has(e, "uid", "key") for e in entries.values())
    ):
        return LoreFormat.SILLYTAVERN_WORLD_INFO
    if isinstance(entries, list) and (not entries or any(_book_entry(e) for e in entries)):
        return LoreFormat.CHARACTER_BOOK
    return _story_format(obj)


def _story_format(obj: JsonObject) -> LoreFormat | None:
    if "gamestarted" in obj:
        if "worldinfo_v2" in obj or "file_version" in obj:
            return LoreFormat.KOBOLD_UNITED_STORY
        return LoreFormat.KOBOLD_STORY
    if all(name in obj for name in ("prompt", "memory", "worldinfo")):
        return LoreFormat.KOBOLD_LITE_SCENARIO
    data = obj.get("data")
    if isinstance(data, dict):
        if _entry_has(data.get("scenario"), "storyCards"):
            return LoreFormat.AIDUNGEON_SCENARIO
        if _entry_has(data.get("adventure"), "storyCards"):
            return LoreFormat.AIDUNGEON_ADVENTURE
    if "spec" not in obj:
        if "name" in obj and sum(name in obj for name in V1_FIELDS) >= 2:
            return LoreFormat.CHARACTER_CARD_V1
        if "char_name" in obj and sum(name in obj for name in PYGMALION_FIELDS) >= 2:
            return LoreFormat.CHARACTER_CARD_V1
    return None


def _array_format(items: JsonList) -> LoreFormat | None:
    objects = [obj for item in items if (obj := as_object(item)) is not None]

    def texts(*names: str) -> bool:
        return any(all(isinstance(o.get(n), str) for n in names) for o in objects)

    if texts("keys", "value"):
        return LoreFormat.AIDUNGEON_CARDS
    if texts("keys", "entry"):
        return LoreFormat.AIDUNGEON_WORLD_INFO
    if texts("key", "content"):
        return LoreFormat.KOBOLD_WORLD_INFO
    return None


def not_a_scenario(fmt: LoreFormat) -> InvalidInput:
    return InvalidInput(
        f"The file is lore only ({fmt.label}), with no opening to start an adventure from. "
        "Import it into an adventure's story cards instead."
    )
