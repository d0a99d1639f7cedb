"""SillyTavern World Info: ``{"entries": {"<uid>": {...}}}``.

Invariants:

- Name ``comment``, keys ``key`` (a list: anything else refuses the entry), text
  ``content``; ``constant`` is always on, ``disable`` disabled, ``order`` orders
  the cards (ascending; 100 when missing).
- ``keysecondary`` with ``selectiveLogic`` keeps SillyTavern's rule: AND ANY (0)
  → any, NOT ANY (2) → none, AND ALL (3) → all. NOT ALL (1) has no equivalent:
  those secondary keys go to the notes, reported. Secondary keys of an entry
  that is not ``selective`` go to the notes.
- A key is a pattern only when written ``/…/``: SillyTavern marks many plain keys
  as regex, so that mark is not trusted.
- Reported lost, when not SillyTavern's default: ``position`` (not 0), ``depth``
  (at position 4), ``probability`` (under 100 while used), ``caseSensitive``
  (true), ``matchWholeWords`` (false), ``group``, ``scanDepth``.
- ``originalData`` (the character book the file was made from) is not read: the
  entries are the same book as SillyTavern last saved it.
"""

from __future__ import annotations

from talekeeper.services.cards.rules import SecondaryRule
from talekeeper.services.lore.books import secondary_keys
from talekeeper.services.lore.fields import (
    JsonObject,
    as_object,
    check_count,
    flag,
    item_path,
    number,
    opt_text,
    show,
    text,
    text_list,
)
from talekeeper.services.lore.keywords import KeyMode
from talekeeper.services.lore.mapping import RawEntry, Source, collect, own_fields

RULES = {0: SecondaryRule.ANY, 2: SecondaryRule.NONE, 3: SecondaryRule.ALL}
NOT_ALL = 1
DEFAULT_ORDER = 100.0


def _secondary(obj: JsonObject, path: str, raw: RawEntry) -> None:
    keys = text_list(obj, "keysecondary", path)
    logic = number(obj.get("selectiveLogic"))
    active = flag(obj.get("selective"), True)
    if keys and active and logic == NOT_ALL:
        raw.notes.append("Secondary keys (NOT ALL rule): " + ", ".join(keys))
        raw.lost.append(("not_all", "selectiveLogic NOT ALL"))
        return
    secondary_keys(raw, keys, active=active)
    rule = int(logic) if logic is not None and logic.is_integer() else 0
    raw.rule = RULES.get(rule, SecondaryRule.ANY)


def _lost(obj: JsonObject, raw: RawEntry) -> None:
    position = number(obj.get("position"))
    if position is not None and position != 0:
        raw.lost.append(("position", f"position {show(position)}"))
        depth = number(obj.get("depth"))
        if position == 4 and depth is not None:
            raw.lost.append(("depth", f"depth {show(depth)}"))
    probability = number(obj.get("probability"))
    if flag(obj.get("useProbability"), True) and probability is not None and probability < 100:
        raw.lost.append(("probability", f"probability {show(probability)}"))
    if obj.get("caseSensitive") is True:
        raw.lost.append(("case_sensitive", "caseSensitive true"))
    if obj.get("matchWholeWords") is False:
        raw.lost.append(("whole_words", "matchWholeWords false"))
    group = opt_text(obj, "group").strip()
    if group:
        raw.lost.append(("group", f"group {group}"))
    scan = number(obj.get("scanDepth"))
    if scan is not None:
        raw.lost.append(("scan_depth", f"scanDepth {show(scan)}"))


def _entry(obj: JsonObject, path: str) -> RawEntry:
    uid = number(obj.get("uid"))
    order = number(obj.get("order"))
    raw = RawEntry(
        path=path,
        label=f"entry uid {show(uid)}" if uid is not None else f"entry {path}",
        title=opt_text(obj, "comment"),
        keys=text_list(obj, "key", path),
        text=text(obj, "content", path),
        mode=KeyMode.SLASHED,
        always_on=flag(obj.get("constant")),
        disabled=flag(obj.get("disable")),
        order=DEFAULT_ORDER if order is None else order,
        own=own_fields(obj.get("extensions")),
    )
    _secondary(obj, path, raw)
    _lost(obj, raw)
    return raw


def world_info(value: JsonObject, src: Source) -> list[RawEntry]:
    entries = as_object(value.get("entries")) or {}
    check_count(len(entries), "entries")
    members = ((item_path("entries", key), entry) for key, entry in entries.items())
    return collect(members, _entry, src)
