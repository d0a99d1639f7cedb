"""Reading values out of parsed JSON that may hold anything, and the caps a file is held to.

Invariants:

- Nothing here raises on a value of an unexpected shape except as documented:
  ``EntryRefused`` (one entry cannot be read: a reader reports it and goes on) and
  ``InvalidInput`` (the whole file is refused). Every message names the JSON path.
- Missing optional fields take their format's default and unknown fields are
  ignored; numeric strings are read as numbers; numbers that are not finite are
  no numbers at all.
- Parsed JSON is typed as what it is: ``object`` until narrowed. A ``JsonObject`` is
  an object whose values are still unknown (its keys are text, as JSON's always
  are); a ``JsonList`` a list whose items are. Every value read out of them is
  checked for its kind before it is used.
"""

from __future__ import annotations

import json
import math
import re

from talekeeper.core.errors import InvalidInput

JsonObject = dict[str, object]  # a JSON object whose values are not yet narrowed
JsonList = list[object]  # a JSON array whose items are not yet narrowed

MAX_FILE_BYTES = 20 * 1024 * 1024  # checked before anything is decoded
MAX_ENTRIES = 5_000  # entries of one list, checked before any entry is read
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


# Characters no story can keep: NUL (PostgreSQL text refuses it) and lone surrogates (not
# UTF-8). JSON can only bring them in as escapes, so a file without these escapes is not
# walked at all.
_UNSTORABLE_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F][0-9a-fA-F]{2})")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(text: str) -> str:
    """``text`` with NULs dropped and lone surrogates replaced by U+FFFD."""
    return _UNSTORABLE.sub(lambda m: "" if m.group() == "\x00" else "\ufffd", text)


def mend(value: object, source: str) -> tuple[object, int]:
    """``value`` (parsed from ``source``) with every text made ``storable``, and how many
    texts changed. Iterative: no recursion into a client's value."""
    if not _UNSTORABLE_ESCAPE.search(source):
        return value, 0
    mended = 0
    root: JsonList = [value]
    stack: list[JsonList | JsonObject] = [root]
    while stack:
        holder = stack.pop()
        if isinstance(holder, list):
            for index, item in enumerate(holder):
                holder[index], changed = _mended(item, stack)
                mended += changed
        else:
            for key, item in holder.items():  # values replaced in place: no key changes
                holder[key], changed = _mended(item, stack)
                mended += changed
    return root[0], mended


def _mended(item: object, stack: list[JsonList | JsonObject]) -> tuple[object, int]:
    """``item`` with its text (or, for an object, its keys) made storable, and whether
    that changed it; a container is pushed on ``stack`` for its members to be walked."""
    if isinstance(item, str):
        kept = storable(item)
        return kept, int(kept != item)
    if isinstance(item, list):
        stack.append(item)
        return item, 0
    if isinstance(item, dict):
        obj: JsonObject = item
        changed = any(_UNSTORABLE.search(k) for k in obj)
        if changed:
            obj = {storable(k): v for k, v in obj.items()}
        stack.append(obj)
        return obj, int(changed)
    return item, 0


class EntryRefused(Exception):
    """One entry cannot be read; its message says which field and why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def quote(text: str, limit: int = 40) -> str:
    """``text`` in double quotes as a message may repeat it, cut short."""
    shown = text if len(text) <= limit else text[: limit - 3] + "..."
    return json.dumps(shown, ensure_ascii=False)


def describe(value: object) -> str:
    """A value's kind, and for scalars the value, for a message: 'text "a, b"'."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return f"number {value!r}"[:40]
    if isinstance(value, str):
        return f"text {quote(value)}"
    return "a list" if isinstance(value, list) else "an object"


def field_path(path: str, name: str) -> str:
    """The path of an object's field: ``data.name`` or ``entries["a b"]``."""
    if _IDENTIFIER.match(name):
        return f"{path}.{name}" if path else name
    return f"{path}[{json.dumps(name, ensure_ascii=False)}]"


def item_path(path: str, key: str | int) -> str:
    """The path of a container's member: ``entries[3]`` in a list, ``entries["7"]`` in an
    object (always bracketed, as the key is data, not a field name)."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}[{json.dumps(key, ensure_ascii=False)}]"


def as_object(value: object) -> JsonObject | None:
    """An object, to read fields of; else None."""
    return value if isinstance(value, dict) else None


def as_list(value: object) -> JsonList | None:
    """A list, to read items of; else None."""
    return value if isinstance(value, list) else None


def all_text(value: object) -> list[str] | None:
    """A list that holds only text, as that text; else None."""
    items = as_list(value)
    if items is None:
        return None
    texts = [item for item in items if isinstance(item, str)]
    return texts if len(texts) == len(items) else None


def number(value: object) -> float | None:
    """A finite number, from a number or a numeric string; else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, int):
        try:
            value = float(value)
        except OverflowError:
            return None
    if isinstance(value, float) and math.isfinite(value):
        return value
    return None


def flag(value: object, default: bool = False) -> bool:
    """A yes/no from a boolean, 0/1, or the text true/false; else ``default``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    amount = number(value)
    if amount in (0.0, 1.0):
        return amount == 1.0
    return default


def text(obj: JsonObject, name: str, path: str) -> str:
    """A required text field; missing or of another kind refuses the entry."""
    if name not in obj or obj[name] is None:
        raise EntryRefused(f"{field_path(path, name)} is missing; an entry needs its text")
    value = obj[name]
    if not isinstance(value, str):
        raise EntryRefused(f"{field_path(path, name)} must be text; got {describe(value)}")
    return value


def opt_text(obj: JsonObject, name: str) -> str:
    """An optional text field: its text, or "" when missing or not text."""
    value = obj.get(name)
    return value if isinstance(value, str) else ""


def text_list(obj: JsonObject, name: str, path: str) -> list[str]:
    """An optional list of text; any other kind refuses the entry, except empty or blank
    text, which exporters of other tools write for "none" (an empty list)."""
    value = obj.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        return []
    where = field_path(path, name)
    if not isinstance(value, list):
        raise EntryRefused(f"{where} must be a list of text; got {describe(value)}")
    for item in value:
        if not isinstance(item, str):
            raise EntryRefused(f"{where} must be a list of text; it holds {describe(item)}")
    return list(value)


def comma_text(obj: JsonObject, name: str, path: str) -> list[str]:
    """Optional keys written as one comma-separated text; any other kind refuses the entry."""
    value = obj.get(name)
    if value is None:
        return []
    if not isinstance(value, str):
        raise EntryRefused(
            f"{field_path(path, name)} must be text (keys separated by commas); "
            f"got {describe(value)}"
        )
    return value.split(",")


def check_count(count: int, path: str) -> None:
    """Refuse the file when one of its lists holds more entries than the cap."""
    if count > MAX_ENTRIES:
        raise InvalidInput(
            f"{path or 'The file'} holds {count:,} entries; Talekeeper reads at most "
            f"{MAX_ENTRIES:,} from one file. Split it into smaller files."
        )


def show(value: float) -> str:
    """A number as a person writes it: 4, not 4.0."""
    return str(int(value)) if value.is_integer() else str(value)


def wrong_kind(value: object, path: str, what: str) -> InvalidInput:
    """The refusal of a file whose ``path`` holds ``value`` where it needs ``what``."""
    return InvalidInput(f"{path} must be {what}; got {describe(value)}.")


def object_field(value: object, path: str, what: str) -> JsonObject:
    """An object the whole file depends on, refused when of another kind."""
    if not isinstance(value, dict):
        raise wrong_kind(value, path, what)
    return value


def list_field(value: object, path: str, what: str) -> JsonList:
    """A list the whole file depends on, refused when of another kind."""
    if not isinstance(value, list):
        raise wrong_kind(value, path, what)
    return value


def file_object(value: object) -> JsonObject:
    """A file's top level, which recognising its format found to be an object."""
    return object_field(value, "The file", "an object")


def file_list(value: object) -> JsonList:
    """A file's top level, which recognising its format found to be a list."""
    return list_field(value, "The file", "a list")
