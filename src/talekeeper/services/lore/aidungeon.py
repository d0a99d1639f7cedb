"""AI Dungeon: story cards, legacy World Info, and scenario or adventure exports.

Invariants:

- Story cards ``[{title, type, keys, value, description}]``: name ``title``, keys
  one comma-separated text (a list refuses the entry), text ``value``, type from
  ``type``, ``description`` into the notes; cards keep the file's order.
  ``useForCharacterCreation`` is not required (older exporters omit it).
- Legacy World Info ``[{keys, entry}]``: named after its first key.
- AI Dungeon keys match as plain text; none is a pattern. AI Dungeon finds a key
  inside words, Talekeeper only as a whole word: every reading says so.
- Scenario / adventure (``data.scenario`` / ``data.adventure``): ``title``,
  ``description``, ``prompt`` (the opening; an adventure's ``actions`` texts
  follow it), ``memory`` (Plot Essentials), ``authorsNote``, ``instructions``
  (AI Instructions; also read from ``state``), ``storyCards``. Scripts
  (``gameCode…``, ``scripts``) are never run: "scripts were not imported".
- A card Talekeeper exported (``extensions.talekeeper``) keeps its description
  as its notes, without a provenance line, and gets back its always-on flag and
  secondary keywords.
"""

from __future__ import annotations

from dataclasses import replace

from talekeeper.services.lore.fields import (
    JsonList,
    JsonObject,
    as_list,
    as_object,
    check_count,
    comma_text,
    field_path,
    file_list,
    file_object,
    item_path,
    list_field,
    object_field,
    opt_text,
    text,
)
from talekeeper.services.lore.mapping import RawEntry, Source, collect, own_fields
from talekeeper.services.lore.model import LoreFormat
from talekeeper.services.lore.scenario import Parts

SCRIPT_FIELDS = (
    "gameCodeSharedLibrary",
    "gameCodeOnInput",
    "gameCodeOnOutput",
    "gameCodeOnModelContext",
    "scripts",
)
SUBSTRINGS = (
    "AI Dungeon fires a key found inside a word; Talekeeper fires a keyword only as a whole "
    'word ("drag" no longer fires on "dragon"), except in scripts written without spaces.'
)
SCRIPTS_NOT_IMPORTED = "The file's scripts were not imported: Talekeeper never runs a file's code."


def _card(obj: JsonObject, path: str) -> RawEntry:
    description = opt_text(obj, "description")
    own = own_fields(obj.get("extensions"))
    if own is not None and own.notes is None:
        own = replace(own, notes=description)
    return RawEntry(
        path=path,
        label=f"card {path}",
        title=opt_text(obj, "title"),
        keys=comma_text(obj, "keys", path),
        text=text(obj, "value", path),
        type_text=opt_text(obj, "type"),
        comment=description,
        own=own,
    )


def _world_info(obj: JsonObject, path: str) -> RawEntry:
    return RawEntry(
        path=path,
        label=f"entry {path}",
        title="",
        keys=comma_text(obj, "keys", path),
        text=text(obj, "entry", path),
    )


def cards(items: JsonList, path: str, src: Source, *, legacy: bool = False) -> list[RawEntry]:
    check_count(len(items), path or "The list")
    members = ((item_path(path, i), item) for i, item in enumerate(items))
    return collect(members, _world_info if legacy else _card, src)


def _instructions(inner: JsonObject) -> str:
    found = inner.get("instructions")
    if isinstance(found, str):
        return found
    state = as_object(inner.get("state")) or {}
    found = state.get("instructions")
    if isinstance(found, str):
        return found
    nested = as_object(found) or {}
    return next((v for v in nested.values() if isinstance(v, str) and v.strip()), "")


def _opening(inner: JsonObject) -> str:
    texts = [opt_text(inner, "prompt")]
    for action in as_list(inner.get("actions")) or []:
        step = as_object(action)
        texts.append(opt_text(step, "text") if step is not None else "")
    return "".join(texts)


def read(fmt: LoreFormat, value: object, src: Source) -> tuple[list[RawEntry], Parts | None]:
    src.report.info(SUBSTRINGS)
    if fmt in (LoreFormat.AIDUNGEON_CARDS, LoreFormat.AIDUNGEON_WORLD_INFO):
        legacy = fmt is LoreFormat.AIDUNGEON_WORLD_INFO
        return cards(file_list(value), "", src, legacy=legacy), None
    key = "scenario" if fmt is LoreFormat.AIDUNGEON_SCENARIO else "adventure"
    path = f"data.{key}"
    # Recognised by an object ``data`` whose ``key`` is an object: these hold.
    data = object_field(file_object(value).get("data"), "data", "an object")
    inner = object_field(data.get(key), path, "an object")
    where = field_path(path, "storyCards")
    entries = cards(list_field(inner.get("storyCards"), where, "a list"), where, src)
    if any(inner.get(name) for name in SCRIPT_FIELDS):
        src.report.lose_whole(SCRIPTS_NOT_IMPORTED, path)
    state = as_object(inner.get("state")) or {}
    parts = Parts(
        title=opt_text(inner, "title"),
        description=opt_text(inner, "description"),
        opening=_opening(inner),
        plot_essentials=opt_text(inner, "memory") or opt_text(state, "memory"),
        authors_note=opt_text(inner, "authorsNote") or opt_text(state, "authorsNote"),
        ai_instructions=_instructions(inner),
    )
    return entries, parts
