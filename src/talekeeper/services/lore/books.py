"""Character books: a card's ``character_book`` (V2), the V3 lorebook (inside a card or
standalone as ``lorebook_v3``) and a bare book file.

Invariants:

- An entry's name is its ``name``, else its ``comment`` (a comment next to a name
  goes to the notes); keys are ``keys`` (a list), text is ``content``.
- ``constant`` makes an always-on card; so does an ``@@activate`` line at the top
  of the content (V3 decorators). Every leading ``@@`` line leaves the entry's
  text for its notes; decorators other than ``@@activate`` are reported lost.
- ``selective`` with ``secondary_keys``: the keys are kept with the rule "any".
  Secondary keys of an entry that is not selective never mattered to the tool;
  they go to the notes.
- ``enabled: false`` is disabled; ``insertion_order`` orders the cards (ascending).
- A key written ``/…/`` is a pattern, and every key of a ``use_regex`` entry is.
- ``case_sensitive: true``, a ``priority`` and ``position: after_char`` are reported
  lost; the book's own scan depth, token budget and recursion settings too.
- ``extensions.talekeeper`` (written by Talekeeper's export) gives back a card's
  type, notes, always-on flag and secondary keywords and rule exactly.
"""

from __future__ import annotations

from talekeeper.services.lore.fields import (
    JsonObject,
    check_count,
    field_path,
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
from talekeeper.services.lore.mapping import RawEntry, Source, collect, own_fields

BOOK_SETTINGS = ("scan_depth", "token_budget", "recursive_scanning")


def decorators(content: str) -> tuple[str, list[str]]:
    """The content without its leading ``@@`` lines, and those lines."""
    lines = content.split("\n")
    count = 0
    while count < len(lines) and lines[count].lstrip().startswith("@@"):
        count += 1
    return "\n".join(lines[count:]), [line.strip() for line in lines[:count]]


def apply_decorators(raw: RawEntry) -> None:
    """Move ``raw``'s decorator lines to its notes; ``@@activate`` makes it always on."""
    raw.text, lines = decorators(raw.text)
    if not lines:
        return
    raw.always_on = raw.always_on or "@@activate" in lines
    raw.notes.append("Decorators: " + "; ".join(lines))
    ignored = [line for line in lines if line != "@@activate"]
    if ignored:
        raw.lost.append(("decorators", " ".join(ignored)))


def secondary_keys(raw: RawEntry, keys: list[str], *, active: bool) -> None:
    """Keep ``keys`` as the entry's secondary keys (rule: any) when the tool used them."""
    if keys and active:
        raw.secondary = keys
    elif keys:
        inactive_secondary(raw, keys)


def inactive_secondary(raw: RawEntry, keys: list[str]) -> None:
    """Secondary keys the tool did not use: kept in the notes, reported."""
    raw.notes.append("Secondary keys (switched off in the file): " + ", ".join(keys))
    raw.lost.append(("inactive_secondary", "inactive secondary keys"))


def _entry(obj: JsonObject, path: str) -> RawEntry:
    keys = text_list(obj, "keys", path)
    name, comment = opt_text(obj, "name"), opt_text(obj, "comment")
    ident = number(obj.get("id"))
    raw = RawEntry(
        path=path,
        label=f"entry id {show(ident)}" if ident is not None else f"entry {path}",
        title=name or comment,
        keys=keys,
        text=text(obj, "content", path),
        mode=KeyMode.PATTERN if flag(obj.get("use_regex")) else KeyMode.SLASHED,
        always_on=flag(obj.get("constant")),
        disabled=not flag(obj.get("enabled"), True),
        order=number(obj.get("insertion_order")),
        comment=comment if name and comment != name else "",
        own=own_fields(obj.get("extensions")),
    )
    seconds = text_list(obj, "secondary_keys", path)
    secondary_keys(raw, seconds, active=flag(obj.get("selective")))
    apply_decorators(raw)
    if flag(obj.get("case_sensitive")):
        raw.lost.append(("case_sensitive", "case_sensitive true"))
    priority = number(obj.get("priority"))
    if priority is not None:
        raw.lost.append(("priority", f"priority {show(priority)}"))
    if obj.get("position") == "after_char":
        raw.lost.append(("position", "position after_char"))
    return raw


def book_entries(book: JsonObject, path: str, src: Source) -> list[RawEntry]:
    """The entries of a character book or V3 lorebook object at ``path``."""
    where = field_path(path, "entries")
    entries = list_field(book.get("entries"), where, "a list of entries")
    check_count(len(entries), where)
    settings = [name for name in BOOK_SETTINGS if book.get(name) not in (None, False)]
    if settings:
        src.report.lose_whole(
            f"The book's own settings ({', '.join(settings)}) have no equivalent; its cards "
            "follow Talekeeper's rules.",
            path,
        )
    members = ((item_path(where, i), entry) for i, entry in enumerate(entries))
    return collect(members, _entry, src)
