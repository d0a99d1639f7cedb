"""Lore and scenarios of other tools, read into Talekeeper's story cards and written back.

Pure: bytes in, drafts and a report out; no database, no web. Nothing read is
kept until the player confirms the preview.

Invariants:

- ``read_lore`` and ``read_scenario`` recognise a file by its content
  (``detect``), never by its name, and either return a preview or refuse the
  whole file with ``InvalidInput`` whose message says what is wrong and where (a
  JSON line and column, a JSON path or a byte offset). No other exception leaves
  them, whatever the bytes.
- Caps are checked before the work they bound: ``fields.MAX_FILE_BYTES`` on the
  bytes before any decoding, ``fields.MAX_ENTRIES`` on a list's length before any
  of its entries is read.
- One bad entry is refused in the report and the rest are read.
- Nothing in a file is ever executed; scripts are reported as not imported.
- ``export_cards`` writes cards in four formats; reading an export back gives the same
  cards (name, type, keywords, entry, notes, always-on, secondary keywords and
  rule).
"""

from __future__ import annotations

from collections.abc import Callable

from talekeeper.services.lore import (
    agnai,
    aidungeon,
    charcard,
    kobold,
    novelai,
    risu,
    sillytavern,
)
from talekeeper.services.lore.books import book_entries
from talekeeper.services.lore.detect import detect, not_a_scenario
from talekeeper.services.lore.export import CardLike, ExportFile, ExportFormat, export_cards
from talekeeper.services.lore.fields import file_object, object_field
from talekeeper.services.lore.mapping import RawEntry, Source, build_cards
from talekeeper.services.lore.model import (
    CardDraft,
    LoreFormat,
    LoreImport,
    Report,
    ReportItem,
    ReportLevel,
    ScenarioDraft,
)
from talekeeper.services.lore.report import counted
from talekeeper.services.lore.scenario import ALSO_A_SCENARIO, Parts, finish

# A reader takes the parsed JSON of a file recognised as its format, and narrows it.
Reader = Callable[[LoreFormat, object, Source], tuple[list[RawEntry], Parts | None]]


def _books(fmt: LoreFormat, value: object, src: Source) -> tuple[list[RawEntry], Parts | None]:
    book = file_object(value)
    if fmt is LoreFormat.SILLYTAVERN_WORLD_INFO:
        return sillytavern.world_info(book, src), None
    if fmt is LoreFormat.LOREBOOK_V3:
        return book_entries(object_field(book.get("data"), "data", "an object"), "data", src), None
    return book_entries(book, "", src), None


READERS: dict[LoreFormat, Reader] = {
    **dict.fromkeys(
        (LoreFormat.SILLYTAVERN_WORLD_INFO, LoreFormat.LOREBOOK_V3, LoreFormat.CHARACTER_BOOK),
        _books,
    ),
    **dict.fromkeys(
        (
            LoreFormat.AIDUNGEON_CARDS,
            LoreFormat.AIDUNGEON_WORLD_INFO,
            LoreFormat.AIDUNGEON_SCENARIO,
            LoreFormat.AIDUNGEON_ADVENTURE,
        ),
        aidungeon.read,
    ),
    **dict.fromkeys(
        (LoreFormat.NOVELAI_LOREBOOK, LoreFormat.NOVELAI_SCENARIO, LoreFormat.NOVELAI_STORY),
        novelai.read,
    ),
    **dict.fromkeys(
        (
            LoreFormat.CHARACTER_CARD_V1,
            LoreFormat.CHARACTER_CARD_V2,
            LoreFormat.CHARACTER_CARD_V3,
        ),
        charcard.read,
    ),
    **dict.fromkeys(
        (
            LoreFormat.KOBOLD_WORLD_INFO,
            LoreFormat.KOBOLD_STORY,
            LoreFormat.KOBOLD_UNITED_STORY,
            LoreFormat.KOBOLD_LITE_SCENARIO,
        ),
        kobold.read,
    ),
    LoreFormat.AGNAI_MEMORY_BOOK: agnai.read,
    LoreFormat.RISU_LOREBOOK: risu.read,
}


def _read(data: bytes, src: Source) -> tuple[list[RawEntry], Parts | None]:
    found = detect(data)
    src.format = found.format
    for note in found.notes:
        src.report.info(note)
    if found.mended:
        src.report.change(
            f"{counted(found.mended, 'text')} held characters no story can store (NUL or a "
            "broken surrogate); NULs were dropped and the rest replaced with \ufffd",
            count=found.mended,
        )
    return READERS[found.format](found.format, found.value, src)


def read_lore(
    data: bytes, filename: str, *, include_disabled: bool = False, split_long: bool = False
) -> LoreImport:
    """The story cards a lore file (or the lore of a scenario file) would make."""
    src = Source(filename=filename, include_disabled=include_disabled, split_long=split_long)
    entries, parts = _read(data, src)
    cards = build_cards(entries, src)
    if parts is not None:
        src.report.info(ALSO_A_SCENARIO)
    return LoreImport(src.format, cards, src.report.build())


def read_scenario(
    data: bytes,
    filename: str,
    *,
    persona_name: str | None = None,
    include_disabled: bool = False,
    split_long: bool = False,
) -> ScenarioDraft:
    """A new adventure as a character card or a scenario/story file would start it."""
    src = Source(
        filename=filename,
        include_disabled=include_disabled,
        split_long=split_long,
        persona_name=persona_name,
    )
    entries, parts = _read(data, src)
    if parts is None:
        raise not_a_scenario(src.format)
    return finish(parts, build_cards(entries, src), src)


__all__ = [
    "CardDraft",
    "CardLike",
    "ExportFile",
    "ExportFormat",
    "LoreFormat",
    "LoreImport",
    "Report",
    "ReportItem",
    "ReportLevel",
    "ScenarioDraft",
    "export_cards",
    "read_lore",
    "read_scenario",
]
