"""``talekeeper lore import|export`` and ``talekeeper new --from-file``: other tools' lore.

Invariants:

- A file is read by ``services.lore`` exactly as the web API reads it (the same options,
  the same caps: a file over the cap is refused before it is read whole), so the
  terminal and the browser make the same cards and the same report. It is read with
  no transaction open, so a slow file never holds the database's writer lock.
- ``--dry-run`` prints the preview (the cards as they would be made and the report,
  totals first) and writes nothing; without it the preview's cards are made and the
  report is printed all the same: nothing read is changed or lost silently.
- ``lore export`` writes the file to standard output (or ``--output``), its warnings to
  standard error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from talekeeper.cli.common import with_runtime
from talekeeper.core.errors import InvalidInput

if TYPE_CHECKING:  # the services load only when a lore command runs
    from talekeeper.services.lore.model import CardDraft, Report

HELP = {
    "lore import": "Import another tool's lorebook or cards into an adventure (--adventure).",
    "lore export": "Write an adventure's story cards in another tool's format (--format).",
}
FORMATS = ("aidungeon", "sillytavern", "ccv3", "novelai")


def read_file(path: str) -> bytes:
    """The file's bytes, refused past the reader's cap before it is read whole."""
    from talekeeper.services.lore.fields import MAX_FILE_BYTES

    try:
        size = Path(path).stat().st_size
        if size > MAX_FILE_BYTES:
            raise InvalidInput(
                f"{path} is {size:,} bytes; a lore file may be at most {MAX_FILE_BYTES:,}."
            )
        return Path(path).read_bytes()
    except OSError as exc:
        raise InvalidInput(f"Cannot read {path}: {exc.strerror}.") from None


def add_reading_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dry-run", action="store_true", help="print what would be made; write nothing"
    )
    parser.add_argument(
        "--include-disabled", action="store_true", help="make cards of disabled entries too"
    )
    parser.add_argument(
        "--split-long",
        action="store_true",
        help="split an entry over 8,000 characters into parts instead of refusing it",
    )
    parser.add_argument(
        "--move-instructions",
        action="store_true",
        help="always-on entries that read as instructions go to AI Instructions, not cards",
    )


def options_of(args: argparse.Namespace) -> Any:
    from talekeeper.services.story.lore_apply import ReadOptions

    return ReadOptions(args.include_disabled, args.split_long, args.move_instructions)


def add_parsers(
    sub: Any, adventure_id: Callable[[str], int], acting: Callable[[Any], None]
) -> None:
    """``lore import`` and ``lore export`` under ``sub``; ``acting`` adds ``--user``."""
    lore = sub.add_parser("lore", help="Lorebooks and cards of other tools, in and out.")
    verbs = lore.add_subparsers(dest="lore", required=True)
    imp = verbs.add_parser("import", help=HELP["lore import"])
    imp.add_argument("file", help="the file, as that tool saved it (recognised by its content)")
    imp.add_argument("--adventure", type=adventure_id, required=True, help="adventure id")
    add_reading_options(imp)
    imp.set_defaults(run=run_import)
    export = verbs.add_parser("export", help=HELP["lore export"])
    export.add_argument("adventure", type=adventure_id, help="adventure id")
    export.add_argument("--format", required=True, choices=FORMATS, help="the tool to write for")
    export.add_argument("--output", metavar="FILE", help="write here, not to standard output")
    export.set_defaults(run=run_export)
    for parser in (imp, export):
        acting(parser)


def report_lines(report: Report, cards: int) -> list[str]:
    from talekeeper.services.lore.model import ReportLevel

    found = report.to_json(cards)
    totals = found["totals"]
    lines = [", ".join(f"{n} {name}" for name, n in totals.items())]
    for level in ReportLevel:
        items = report.of(level)
        if items:
            lines.append(f"{level}:")
            for item in items:
                count = f" (x{item.count})" if item.count > 1 else ""
                where = f" [{item.path}]" if item.path else ""
                lines.append(f"  - {item.message}{count}{where}")
    return lines


def card_lines(cards: Sequence[CardDraft]) -> list[str]:
    lines = []
    for card in cards:
        flags = [f for f, on in (("always on", card.always_on), ("disabled", card.disabled)) if on]
        also = f" [{', '.join(flags)}]" if flags else ""
        keys = ", ".join(card.keywords)
        if card.secondary_keywords:
            keys += f" + {card.secondary_rule} of: " + ", ".join(card.secondary_keywords)
        lines.append(f"- {card.name} ({card.type}){also}: {keys}")
    return lines


def run_import(settings: Any, args: argparse.Namespace) -> int:
    from talekeeper.services.common.units import read_scope, session_scope
    from talekeeper.services.story import lore_apply
    from talekeeper.services.story.access import load_adventure

    data = read_file(args.file)
    name = Path(args.file).name
    options = options_of(args)

    async def work(rt: Any, uid: int) -> int:
        # As the web API: the owner is checked in a read, the file is read with no
        # transaction open, and only what was read is written, in one short unit.
        with read_scope(rt.sessions) as session:
            load_adventure(session, args.adventure, uid)
        found, moved = lore_apply.read_lore_file(data, name, options)
        if not args.dry_run:
            with session_scope(rt.sessions) as session:
                adventure = load_adventure(session, args.adventure, uid)
                lore_apply.add_lore(session, adventure, found, moved)
        verb = "would make" if args.dry_run else "made"
        print(f"{found.format.label}: {verb} {len(found.cards)} story cards")
        print("\n".join(card_lines(found.cards) + report_lines(found.report, len(found.cards))))
        return 0

    return with_runtime(settings, args.as_user, work)


def run_export(settings: Any, args: argparse.Namespace) -> int:
    from talekeeper.services.common.units import read_scope
    from talekeeper.services.lore import export_cards
    from talekeeper.services.story import adventures
    from talekeeper.services.story.access import load_adventure

    async def work(rt: Any, uid: int) -> int:
        with read_scope(rt.sessions) as session:
            adventure = load_adventure(session, args.adventure, uid)
            exported = export_cards(
                adventures.cards(session, adventure), args.format, title=adventure.title
            )
        for warning in exported.warnings:
            print(f"talekeeper: {warning}", file=sys.stderr)
        if args.output:
            try:
                Path(args.output).write_bytes(exported.data)
            except OSError as exc:
                raise InvalidInput(f"Cannot write {args.output}: {exc.strerror}.") from None
        else:
            sys.stdout.buffer.write(exported.data)
            sys.stdout.flush()
        return 0

    return with_runtime(settings, args.as_user, work)


def new_from_file(rt: Any, uid: int, args: argparse.Namespace) -> int:
    """``talekeeper new --from-file``: the preview with ``--dry-run``, else the adventure."""
    from talekeeper.services.common.units import session_scope
    from talekeeper.services.story import lore_apply

    data = read_file(args.from_file)
    draft = lore_apply.read_scenario_file(data, Path(args.from_file).name, options_of(args))
    opening = lore_apply.opening_of(draft, args.greeting)
    if args.dry_run:
        print(f"{draft.format.label}: would start {draft.title!r}")
        for number, greeting in enumerate((draft.opening, *draft.alternate_greetings)):
            mark = "*" if greeting == opening else " "
            print(f"{mark} greeting {number}: {greeting[:100]}")
        lines = card_lines(draft.cards) + report_lines(draft.report, len(draft.cards))
        print("\n".join(lines))
        return 0
    with session_scope(rt.sessions) as session:
        story = lore_apply.adventure_from_file(session, uid, rt.memory, draft, args.greeting)
        adventure_id = story.adventure.id
    print(adventure_id)
    print("\n".join(report_lines(draft.report, len(draft.cards))), file=sys.stderr)
    return 0
