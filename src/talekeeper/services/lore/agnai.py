"""Agnai memory books: ``{"kind": "memory", "entries": [...]}``.

Invariants:

- Name ``name``, keys ``keywords`` (a list; anything else refuses the entry),
  text ``entry``; ``enabled: false`` is disabled; ``weight`` orders the cards
  (ascending). Agnai has no always-on entries.
- A keyword with a wildcard (``*``, ``?``) has no equivalent: it goes to the
  notes, reported.
- ``priority`` (when not 0) is reported lost.
"""

from __future__ import annotations

from talekeeper.services.lore.fields import (
    JsonObject,
    check_count,
    file_object,
    flag,
    item_path,
    list_field,
    number,
    opt_text,
    show,
    text,
    text_list,
)
from talekeeper.services.lore.keywords import KeyMode
from talekeeper.services.lore.mapping import RawEntry, Source, collect
from talekeeper.services.lore.model import LoreFormat
from talekeeper.services.lore.scenario import Parts


def _entry(obj: JsonObject, path: str) -> RawEntry:
    raw = RawEntry(
        path=path,
        label=f"entry {path}",
        title=opt_text(obj, "name"),
        keys=text_list(obj, "keywords", path),
        text=text(obj, "entry", path),
        mode=KeyMode.WILDCARD,
        disabled=not flag(obj.get("enabled"), True),
        order=number(obj.get("weight")),
    )
    priority = number(obj.get("priority"))
    if priority:
        raw.lost.append(("priority", f"priority {show(priority)}"))
    return raw


def read(fmt: LoreFormat, value: object, src: Source) -> tuple[list[RawEntry], Parts | None]:
    book = file_object(value)
    entries = list_field(book.get("entries"), "entries", "a list")
    check_count(len(entries), "entries")
    members = ((item_path("entries", i), entry) for i, entry in enumerate(entries))
    return collect(members, _entry, src), None
