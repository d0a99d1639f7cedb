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

from typing import Any

from talekeeper.services.lore.fields import (
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
from talekeeper.services.lore.mapping import RawEntry, Source, collect
from talekeeper.services.lore.model import LoreFormat
from talekeeper.services.lore.scenario import Parts


def _entry(obj: dict[str, Any], path: str) -> RawEntry:
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


def read(fmt: LoreFormat, value: Any, src: Source) -> tuple[list[RawEntry], Parts | None]:
    entries: list[Any] = value["entries"]
    check_count(len(entries), "entries")
    members = ((item_path("entries", i), entry) for i, entry in enumerate(entries))
    return collect(members, _entry, src), None
