"""Character cards V1, V2 and V3 (JSON, PNG or CHARX): a character, its book, a scenario.

Invariants:

- The character becomes a character card: named after ``name``, keyed by the
  name and its first word, its entry ``description`` then ``personality``; its
  notes keep ``mes_example`` (example dialogue), ``creator_notes``, ``tags``,
  ``creator``, a V3 ``nickname`` and a depth prompt. It comes first.
- ``character_book`` entries follow as cards (see ``books``).
- As a scenario: ``first_mes`` is the opening (``alternate_greetings`` offered as
  choices), ``scenario`` Plot Essentials, ``system_prompt`` AI Instructions,
  ``post_history_instructions`` the Author's Note, ``creator_notes`` the
  description.
- Every text, book entries included, goes through ``Placeholders``.
- V1 also reads Pygmalion's names (``char_name``, ``char_persona``,
  ``world_scenario``, ``char_greeting``, ``example_dialogue``).
- Scripts (SillyTavern ``regex_scripts``, RisuAI trigger scripts, custom scripts
  and background HTML) are never run or kept: "scripts were not imported".
"""

from __future__ import annotations

from talekeeper.services.lore.books import book_entries
from talekeeper.services.lore.fields import (
    JsonObject,
    as_list,
    as_object,
    field_path,
    file_object,
    object_field,
    opt_text,
)
from talekeeper.services.lore.mapping import RawEntry, Source
from talekeeper.services.lore.model import LoreFormat
from talekeeper.services.lore.placeholders import Placeholders
from talekeeper.services.lore.report import counted
from talekeeper.services.lore.scenario import Parts

PYGMALION = {
    "name": "char_name",
    "description": "char_persona",
    "scenario": "world_scenario",
    "first_mes": "char_greeting",
    "mes_example": "example_dialogue",
}
RISU_SCRIPTS = ("triggerscript", "customScripts", "backgroundHTML")
SCRIPTS_NOT_IMPORTED = "The card's scripts were not imported: Talekeeper never runs a file's code."


def _field(data: JsonObject, name: str) -> str:
    return opt_text(data, name) or opt_text(data, PYGMALION.get(name, name))


def _texts(value: object) -> list[str]:
    return [item for item in as_list(value) or [] if isinstance(item, str)]


def _extensions(data: JsonObject, path: str, src: Source, notes: list[str]) -> None:
    ext = as_object(data.get("extensions")) or {}
    risu = as_object(ext.get("risuai")) or {}
    if ext.get("regex_scripts") or any(risu.get(name) for name in RISU_SCRIPTS):
        src.report.lose_whole(SCRIPTS_NOT_IMPORTED, field_path(path, "extensions"))
    depth = as_object(ext.get("depth_prompt")) or {}
    if opt_text(depth, "prompt").strip():
        notes.append(f"Depth prompt: {opt_text(depth, 'prompt').strip()}")
        src.report.lose_whole(
            "The card's depth prompt (a note placed at a depth) has no equivalent; it is in "
            "the character card's notes.",
            field_path(field_path(path, "extensions"), "depth_prompt"),
        )
    assets = data.get("assets")
    if isinstance(assets, list) and assets:
        src.report.info(f"{counted(len(assets), 'asset')} of the card not imported.")
    groups = _texts(data.get("group_only_greetings"))
    if groups:
        src.report.info(f"{counted(len(groups), 'group-only greeting')} not offered.")


def _character(data: JsonObject, path: str, name: str, src: Source) -> RawEntry:
    notes: list[str] = []
    for label, key in (("Nickname", "nickname"), ("Creator", "creator")):
        if _field(data, key).strip():
            notes.append(f"{label}: {_field(data, key).strip()}")
    tags = [tag.strip() for tag in _texts(data.get("tags")) if tag.strip()]
    if tags:
        notes.append("Tags: " + ", ".join(tags))
    if _field(data, "creator_notes").strip():
        notes.append(f"Creator's notes: {_field(data, 'creator_notes').strip()}")
    if _field(data, "mes_example").strip():
        notes.append(f"Example dialogue:\n{_field(data, 'mes_example').strip()}")
    _extensions(data, path, src, notes)
    body = [_field(data, "description").strip(), _field(data, "personality").strip()]
    first = name.split()[0] if name.split() else name
    return RawEntry(
        path=path or "(the card)",
        label="the character",
        title=name,
        keys=[name, first],
        text="\n\n".join(part for part in body if part),
        type_text="character",
        notes=notes,
        order=float("-inf"),  # the character comes before its book
    )


def _substitute(entry: RawEntry, names: Placeholders) -> None:
    entry.title, entry.text, entry.comment = (
        names(entry.title),
        names(entry.text),
        names(entry.comment),
    )
    entry.keys = [names(key) for key in entry.keys]
    entry.secondary = [names(key) for key in entry.secondary]
    entry.notes = [names(line) for line in entry.notes]


def read(fmt: LoreFormat, value: object, src: Source) -> tuple[list[RawEntry], Parts | None]:
    v1 = fmt is LoreFormat.CHARACTER_CARD_V1
    card = file_object(value)
    data = card if v1 else object_field(card.get("data"), "data", "an object")
    path = "" if v1 else "data"
    name = " ".join(_field(data, "name").split())
    if not name:
        name = "Unnamed character"
        src.report.change("The card names no character; it is called 'Unnamed character'")
    names = Placeholders(" ".join(opt_text(data, "nickname").split()) or name, src.persona_name)
    entries = [_character(data, path, name, src)]
    if data.get("character_book") is not None:
        where = field_path(path, "character_book")
        book = object_field(data["character_book"], where, "an object")
        entries += book_entries(book, where, src)
    for entry in entries:
        _substitute(entry, names)
    parts = Parts(
        title=name,
        opening=names(_field(data, "first_mes")),
        alternate_greetings=[names(g) for g in _texts(data.get("alternate_greetings"))],
        ai_instructions=names(opt_text(data, "system_prompt")),
        plot_essentials=names(_field(data, "scenario")),
        authors_note=names(opt_text(data, "post_history_instructions")),
        description=names(opt_text(data, "creator_notes")),
    )
    names.report(src.report)
    return entries, parts
