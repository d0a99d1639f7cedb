"""NovelAI: a ``.lorebook``, a ``.scenario`` and a ``.story`` (its lorebook and context).

Invariants:

- Lorebook entries: name ``displayName``, keys ``keys`` (a list; ``/…/flags`` is
  a pattern), text ``text``; ``forceActivation`` is always on, ``enabled:
  false`` disabled, ``contextConfig.budgetPriority`` orders the cards
  (ascending); ``category`` names one of the book's ``categories``, whose name
  gives the type.
- ``contextConfig`` settings have no equivalent and are reported lost when not
  NovelAI's defaults: ``prefix`` (not empty), ``suffix`` (not a line break),
  ``tokenBudget`` (not 1 or 2048), ``insertionPosition`` (not -1).
- Scenario: ``title``, ``description``, ``prompt`` (the opening), ``context[0]``
  (Memory → Plot Essentials), ``context[1]`` (Author's Note), ``lorebook``.
  Placeholders (``${name}``) are left as written, reported.
- Story: ``metadata.title``/``description``; ``content.story.fragments`` joined
  make the opening; ``content.context`` and ``content.lorebook`` as a scenario's.
  A story whose text is stored only as an encoded ``document`` keeps an empty
  opening, reported.
"""

from __future__ import annotations

from collections.abc import Callable

from talekeeper.services.lore.fields import (
    JsonObject,
    as_list,
    as_object,
    check_count,
    field_path,
    file_object,
    flag,
    item_path,
    list_field,
    number,
    object_field,
    opt_text,
    quote,
    show,
    text,
    text_list,
)
from talekeeper.services.lore.keywords import KeyMode
from talekeeper.services.lore.mapping import RawEntry, Source, collect, own_fields
from talekeeper.services.lore.model import LoreFormat
from talekeeper.services.lore.scenario import Parts

TOKEN_BUDGET_DEFAULTS = (1.0, 2048.0)


def _categories(book: JsonObject) -> dict[str, str]:
    found: dict[str, str] = {}
    for item in as_list(book.get("categories")) or []:
        category = as_object(item)
        ident = category.get("id") if category else None
        if category and isinstance(ident, str):
            found[ident] = opt_text(category, "name")
    return found


def _lost(config: JsonObject, raw: RawEntry) -> None:
    prefix, suffix = config.get("prefix"), config.get("suffix")
    if isinstance(prefix, str) and prefix:
        raw.lost.append(("prefix", f"prefix {quote(prefix)}"))
    if isinstance(suffix, str) and suffix != "\n":
        raw.lost.append(("suffix", f"suffix {quote(suffix)}"))
    budget = number(config.get("tokenBudget"))
    if budget is not None and budget not in TOKEN_BUDGET_DEFAULTS:
        raw.lost.append(("token_budget", f"tokenBudget {show(budget)}"))
    position = number(config.get("insertionPosition"))
    if position is not None and position != -1:
        raw.lost.append(("position", f"insertionPosition {show(position)}"))


def _reader(categories: dict[str, str]) -> Callable[[JsonObject, str], RawEntry]:
    def read(obj: JsonObject, path: str) -> RawEntry:
        config = as_object(obj.get("contextConfig")) or {}
        category = obj.get("category")
        ident = opt_text(obj, "id")
        raw = RawEntry(
            path=path,
            label=f"entry id {ident}" if ident else f"entry {path}",
            title=opt_text(obj, "displayName"),
            keys=text_list(obj, "keys", path),
            text=text(obj, "text", path),
            mode=KeyMode.SLASHED,
            always_on=flag(obj.get("forceActivation")),
            disabled=not flag(obj.get("enabled"), True),
            order=number(config.get("budgetPriority")),
            type_text=categories.get(category, "") if isinstance(category, str) else "",
            own=own_fields(obj.get("extensions")),
        )
        _lost(config, raw)
        return raw

    return read


def lorebook_entries(book: JsonObject, path: str, src: Source) -> list[RawEntry]:
    where = field_path(path, "entries")
    entries = list_field(book.get("entries"), where, "a list of entries")
    check_count(len(entries), where)
    members = ((item_path(where, i), entry) for i, entry in enumerate(entries))
    return collect(members, _reader(_categories(book)), src)


def _context(context: object, parts: Parts) -> None:
    """Memory and Author's Note: the first two items of a NovelAI ``context`` list."""
    items = [as_object(item) for item in (as_list(context) or [])[:2]]
    texts = [opt_text(item, "text") if item is not None else "" for item in items]
    texts += ["", ""]
    parts.plot_essentials, parts.authors_note = texts[0], texts[1]


def _placeholders(parts: Parts, src: Source) -> None:
    fields = (parts.opening, parts.plot_essentials, parts.authors_note, parts.description)
    if any("${" in value for value in fields):
        src.report.info(
            "Placeholders (${...}) were left as written: edit them once the adventure is made."
        )


def _lore(holder: JsonObject, path: str, src: Source) -> list[RawEntry]:
    if holder.get("lorebook") is None:
        return []
    book = object_field(holder["lorebook"], field_path(path, "lorebook"), "an object")
    return lorebook_entries(book, field_path(path, "lorebook"), src)


def _story_text(content: JsonObject, src: Source) -> str:
    story = as_object(content.get("story")) or {}
    fragments = as_list(story.get("fragments"))
    if fragments is not None:
        found = (as_object(fragment) for fragment in fragments)
        return "".join(opt_text(f, "data") for f in found if f is not None)
    if content.get("document") is not None:
        src.report.lose_whole(
            "The story's text is stored in an encoded document Talekeeper cannot read; "
            "the opening is empty.",
            "content.document",
        )
    return ""


def read(fmt: LoreFormat, value: object, src: Source) -> tuple[list[RawEntry], Parts | None]:
    obj = file_object(value)
    if fmt is LoreFormat.NOVELAI_LOREBOOK:
        return lorebook_entries(obj, "", src), None
    parts = Parts()
    if fmt is LoreFormat.NOVELAI_SCENARIO:
        parts.title, parts.description = opt_text(obj, "title"), opt_text(obj, "description")
        parts.opening = opt_text(obj, "prompt")
        _context(obj.get("context"), parts)
        entries = _lore(obj, "", src)
    else:
        content = object_field(obj.get("content"), "content", "an object")
        meta = as_object(obj.get("metadata")) or {}
        parts.title, parts.description = opt_text(meta, "title"), opt_text(meta, "description")
        parts.opening = _story_text(content, src)
        _context(content.get("context"), parts)
        entries = _lore(content, "content", src)
    _placeholders(parts, src)
    return entries, parts
