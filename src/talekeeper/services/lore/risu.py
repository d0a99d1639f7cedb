"""RisuAI lorebooks: ``{"type": "risu", "data": [...]}``.

Invariants:

- Name ``comment``, keys ``key`` (one comma-separated text), text ``content``;
  ``alwaysActive`` (or mode "constant") is always on; ``insertorder`` orders the
  cards (ascending). ``secondkey`` on a ``selective`` entry keeps the rule "any".
- Folder entries (mode "folder") make no card: their ``comment`` names the
  folder, and an entry's ``folder`` (the folder's ``key``) gives its type.
- ``useRegex`` makes every key a pattern; otherwise keys are plain text.
- Leading ``@@`` decorator lines go to the notes (``@@activate``: always on).
- ``activationPercent`` under 100 is reported lost as a probability.
- A RisuAI memory preset (``data`` an object) is refused when the file is
  recognised.
"""

from __future__ import annotations

from collections.abc import Callable

from talekeeper.services.lore.books import apply_decorators, secondary_keys
from talekeeper.services.lore.fields import (
    JsonList,
    JsonObject,
    as_object,
    check_count,
    comma_text,
    file_object,
    flag,
    item_path,
    list_field,
    number,
    opt_text,
    show,
    text,
)
from talekeeper.services.lore.keywords import KeyMode
from talekeeper.services.lore.mapping import RawEntry, Source, collect
from talekeeper.services.lore.model import LoreFormat
from talekeeper.services.lore.scenario import Parts

FOLDER = "folder"


def _reader(folders: dict[str, str]) -> Callable[[JsonObject, str], RawEntry | None]:
    def read(obj: JsonObject, path: str) -> RawEntry | None:
        if obj.get("mode") == FOLDER:
            return None
        folder = obj.get("folder")
        raw = RawEntry(
            path=path,
            label=f"entry {path}",
            title=opt_text(obj, "comment"),
            keys=comma_text(obj, "key", path),
            text=text(obj, "content", path),
            mode=KeyMode.PATTERN if flag(obj.get("useRegex")) else KeyMode.PLAIN,
            always_on=flag(obj.get("alwaysActive")) or obj.get("mode") == "constant",
            order=number(obj.get("insertorder")),
            type_text=folders.get(folder, "") if isinstance(folder, str) else "",
        )
        seconds = [key for key in comma_text(obj, "secondkey", path) if key.strip()]
        secondary_keys(raw, seconds, active=flag(obj.get("selective")))
        apply_decorators(raw)
        chance = number(obj.get("activationPercent"))
        if chance is not None and chance < 100:
            raw.lost.append(("probability", f"activationPercent {show(chance)}"))
        return raw

    return read


def _folders(items: JsonList) -> dict[str, str]:
    """Folder entries' keys, and the folder names (their ``comment``) they stand for."""
    folders: dict[str, str] = {}
    for item in items:
        obj = as_object(item)
        key = obj.get("key") if obj is not None else None
        if obj is not None and obj.get("mode") == FOLDER and isinstance(key, str):
            folders[key] = opt_text(obj, "comment")
    return folders


def read(fmt: LoreFormat, value: object, src: Source) -> tuple[list[RawEntry], Parts | None]:
    book = file_object(value)
    items = list_field(book.get("data"), "data", "a list")
    check_count(len(items), "data")
    folders = _folders(items)
    members = ((item_path("data", i), item) for i, item in enumerate(items))
    return collect(members, _reader(folders), src), None
