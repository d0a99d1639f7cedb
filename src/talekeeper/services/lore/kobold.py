"""KoboldAI and KoboldAI Lite: World Info lists, story saves (classic and United) and Lite
scenarios.

Invariants:

- World Info entry: name ``comment``, keys ``key`` (one comma-separated text; in
  United's ``worldinfo_v2`` a list), text ``content``; ``constant`` is always
  on, ``widisabled`` disabled; cards keep the file's order. The folder (a
  ``wigroup`` or ``folder`` name, or a classic save's folder number looked up in
  ``wifolders_d``) gives the type.
- ``keysecondary`` on a ``selective`` entry keeps the rule "any"; ``keyanti``
  alone becomes secondary keys with the rule "none". An entry with both keeps
  the secondary keys; its anti-keys go to the notes, reported.
- ``probability`` under 100 is reported lost.
- Story save: ``prompt`` and the ``actions`` after it make the opening,
  ``memory`` Plot Essentials, ``authorsnote`` (United: ``authornote``) the
  Author's Note, ``story_name`` the title. Lite scenario: ``title``, ``desc``,
  ``prompt``, ``memory``, ``authorsnote``, ``worldinfo``.
"""

from __future__ import annotations

from collections.abc import Callable

from talekeeper.services.cards.rules import SecondaryRule
from talekeeper.services.lore.books import inactive_secondary, secondary_keys
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
    flag,
    item_path,
    list_field,
    number,
    object_field,
    opt_text,
    show,
    text,
    text_list,
)
from talekeeper.services.lore.mapping import RawEntry, Source, collect
from talekeeper.services.lore.model import LoreFormat
from talekeeper.services.lore.scenario import Parts

Keys = Callable[[JsonObject, str, str], list[str]]


def _folder(obj: JsonObject, folders: dict[str, str]) -> str:
    group = opt_text(obj, "wigroup") or opt_text(obj, "folder")
    if group and not group.strip().isdigit():
        return group
    ident = number(obj.get("folder"))
    return folders.get(show(ident), "") if ident is not None else ""


def _keys(raw: RawEntry, obj: JsonObject, path: str, keys: Keys) -> None:
    secondary = [key for key in keys(obj, "keysecondary", path) if key.strip()]
    anti = [key for key in comma_text(obj, "keyanti", path) if key.strip()]
    active = flag(obj.get("selective"))
    both = bool(anti and secondary and active)
    if anti and not both:
        raw.secondary, raw.rule = anti, SecondaryRule.NONE
        if secondary:
            inactive_secondary(raw, secondary)
        return
    secondary_keys(raw, secondary, active=active)
    if both:
        raw.notes.append("Anti-keys: " + ", ".join(anti))
        raw.lost.append(("anti_keys", "keyanti"))


def _reader(folders: dict[str, str], keys: Keys) -> Callable[[JsonObject, str], RawEntry]:
    def read(obj: JsonObject, path: str) -> RawEntry:
        uid = number(obj.get("uid"))
        raw = RawEntry(
            path=path,
            label=f"entry uid {show(uid)}" if uid is not None else f"entry {path}",
            title=opt_text(obj, "title") or opt_text(obj, "comment"),
            keys=keys(obj, "key", path),
            text=text(obj, "content", path),
            always_on=flag(obj.get("constant")),
            disabled=flag(obj.get("widisabled")),
            type_text=_folder(obj, folders),
            comment=opt_text(obj, "comment") if opt_text(obj, "title") else "",
        )
        _keys(raw, obj, path, keys)
        probability = number(obj.get("probability"))
        if probability is not None and probability < 100:
            raw.lost.append(("probability", f"probability {show(probability)}"))
        return raw

    return read


def world_info(items: JsonList, path: str, src: Source, folders: dict[str, str]) -> list[RawEntry]:
    check_count(len(items), path or "The list")
    members = ((item_path(path, i), item) for i, item in enumerate(items))
    return collect(members, _reader(folders, comma_text), src)


def _united(obj: JsonObject, src: Source) -> list[RawEntry]:
    book = object_field(obj.get("worldinfo_v2"), "worldinfo_v2", "an object")
    where = "worldinfo_v2.entries"
    entries = object_field(book.get("entries") or {}, where, "an object of entries")
    check_count(len(entries), where)
    members = ((item_path(where, key), entry) for key, entry in entries.items())
    return collect(members, _reader({}, text_list), src)


def _classic(obj: JsonObject, src: Source) -> list[RawEntry]:
    folders: dict[str, str] = {}
    for key, folder in (as_object(obj.get("wifolders_d")) or {}).items():
        named = as_object(folder)
        folders[key] = opt_text(named, "name") if named is not None else ""
    items = obj.get("worldinfo")
    if items is None:
        return []
    return world_info(list_field(items, "worldinfo", "a list"), "worldinfo", src, folders)


def _actions(value: object) -> str:
    united = as_object(value)
    if united is not None:  # United: {"actions": {"0": {"Selected Text": ...}}}
        inner = as_object(united.get("actions")) or {}
        actions = (as_object(action) for action in inner.values())
        return "".join(opt_text(a, "Selected Text") for a in actions if a is not None)
    items = as_list(value) or []
    return "".join(item for item in items if isinstance(item, str))


def read(fmt: LoreFormat, value: object, src: Source) -> tuple[list[RawEntry], Parts | None]:
    if fmt is LoreFormat.KOBOLD_WORLD_INFO:
        return world_info(file_list(value), "", src, {}), None
    obj = file_object(value)
    if fmt is LoreFormat.KOBOLD_LITE_SCENARIO:
        parts = Parts(
            title=opt_text(obj, "title"),
            description=opt_text(obj, "desc"),
            opening=opt_text(obj, "prompt"),
            plot_essentials=opt_text(obj, "memory"),
            authors_note=opt_text(obj, "authorsnote"),
        )
        where = field_path("", "worldinfo")
        items = list_field(obj.get("worldinfo"), where, "a list")
        return world_info(items, where, src, {}), parts
    united = fmt is LoreFormat.KOBOLD_UNITED_STORY
    actions = _actions(obj.get("actions"))
    if actions:
        src.report.info("The story's actions follow its prompt in the opening.")
    parts = Parts(
        title=opt_text(obj, "story_name"),
        opening=opt_text(obj, "prompt") + actions,
        plot_essentials=opt_text(obj, "memory"),
        authors_note=opt_text(obj, "authornote" if united else "authorsnote"),
    )
    if united and "worldinfo_v2" in obj:
        return _united(obj, src), parts
    return _classic(obj, src), parts
