"""``talekeeper library add|list|search|attach|detach|remove|reindex``: the knowledge library
in the terminal.

Invariants:

- Every command calls the services the JSON API calls (``services.library``), so the
  terminal and the browser keep one set of rules: the same caps (a file over
  ``CAPS.file_bytes`` is refused before it is read whole), states, search and scores.
- A file is read and split with no transaction open, then stored in one write unit: a
  refused file leaves nothing behind.
- A stored or reindexed source's run is asked for in the unit that stores it
  (``LibraryIndexer.schedule``). ``--wait`` then runs the background work in this process
  until the source is ready or failed; it takes its share through the queue's claims, so
  a ``serve`` or ``worker`` running meanwhile never runs the source twice at once.
  Without ``--wait`` the vectors are made by ``serve`` or ``play`` (SQLite) or by
  ``worker`` (PostgreSQL); the source is searched by words meanwhile.
- ``attach`` and ``detach`` change one attachment and keep the adventure's others.
- A refusal (a file that cannot be read, an unknown id, another user's source or
  adventure, a cap) is one line on standard error with exit status 1, and nothing is
  changed; a source whose vectors failed under ``--wait`` exits 1 with the error.
- Text from a file (titles, passages) is printed with its control characters blanked: a
  document cannot send escape sequences to the terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import sys
import textwrap
import unicodedata
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from talekeeper.cli.common import with_runtime
from talekeeper.core.errors import InvalidInput
from talekeeper.services.common.vocabulary import SourceState

if TYPE_CHECKING:  # the services load only when a library command runs
    from talekeeper.services.library.search import Hit

HELP = {
    "library add": "Add a file (.txt, .md, .html, .pdf, .epub) to your knowledge library.",
    "library list": "List your library's sources: state, indexing progress, attachments.",
    "library search": "Search your whole library and show the best passages and their scores.",
    "library attach": "Attach a library source to an adventure (SOURCE ADVENTURE).",
    "library detach": "Detach a library source from an adventure (SOURCE ADVENTURE).",
    "library remove": "Delete a source from your library and from every adventure.",
    "library reindex": "Index a source again (after a failure or a change of embedding model).",
}
SEARCH_MAX = 50  # hits at most, as the API's search answers
QUERY_MAX = 2000
SHOWN_CHARS = 480  # of a hit's passage: enough to judge it, short enough to scan ten
WIDTH = 88
TITLE_WIDTH = 40  # of a title in the list's table
WAIT_POLL = 0.1  # seconds between looks at the source's progress
VECTORS_LATER = (
    "Its vectors are made in the background by 'talekeeper serve' (on PostgreSQL by "
    "'talekeeper worker') or while 'talekeeper play' runs; it is searched by words "
    "meanwhile. --wait makes them now."
)


def plain(text: str) -> str:
    """``text`` with its control characters (an escape sequence's ESC among them) blanked."""
    return "".join(" " if unicodedata.category(c) == "Cc" else c for c in text)


def read_file(path: str) -> bytes:
    """The file's bytes, refused past the library's cap before it is read whole."""
    from talekeeper.services.library.documents import CAPS

    cap = CAPS.file_bytes
    too_big = f"a library file may be at most {cap // 2**20} MB. Split it into parts."
    try:
        size = Path(path).stat().st_size
        if size > cap:
            raise InvalidInput(f"{path} is {size / 2**20:.1f} MB; {too_big}")
        with Path(path).open("rb") as file:
            data = file.read(cap + 1)  # a file that grew since (or a pipe) stops here
    except OSError as exc:
        raise InvalidInput(f"Cannot read {path}: {exc.strerror}.") from None
    if len(data) > cap:
        raise InvalidInput(f"{path} is over {cap // 2**20} MB; {too_big}")
    return data


def _limit(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= SEARCH_MAX:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of hits from 1 to {SEARCH_MAX}")
    return int(text)


def add_parsers(
    sub: Any,
    row_id: Callable[[str], Callable[[str], int]],
    acting: Callable[[Any], None],
) -> None:
    """The ``library`` verbs under ``sub``; ``row_id(what)`` parses an id, ``acting`` adds
    ``--user``."""
    adventure_id, source_id = row_id("an adventure id"), row_id("a library source id")
    library = sub.add_parser("library", help="Your knowledge library: a world's canon.")
    verbs = library.add_subparsers(dest="library", required=True)

    def verb(name: str, run: Callable[[Any, argparse.Namespace], int]) -> Any:
        parser = verbs.add_parser(name, help=HELP[f"library {name}"])
        parser.set_defaults(run=run)
        acting(parser)
        return parser

    wait = "make its vectors now, showing the progress (exit status 1 if that fails)"
    add = verb("add", run_add)
    add.add_argument("file", help="the document; its kind is recognised by its content")
    add.add_argument("--wait", action="store_true", help=wait)
    verb("list", run_list)
    search = verb("search", run_search)
    search.add_argument("query", help="the words to look for, in quotes")
    search.add_argument(
        "--limit", type=_limit, default=10, metavar="N", help=f"hits (1 to {SEARCH_MAX}; 10)"
    )
    for name in ("attach", "detach"):
        pair = verb(name, run_attach if name == "attach" else run_detach)
        pair.add_argument("source", type=source_id, help="the source's id (see library list)")
        pair.add_argument("adventure", type=adventure_id, help="the adventure's id")
    remove = verb("remove", run_remove)
    remove.add_argument("source", type=source_id, help="the source's id (see library list)")
    reindex = verb("reindex", run_reindex)
    reindex.add_argument("source", type=source_id, help="the source's id (see library list)")
    reindex.add_argument("--wait", action="store_true", help=wait)


Command = Callable[[Any, argparse.Namespace], int]


def _command(command: Command) -> Command:
    """Quiet logs while a library command prints; its errors go on to ``cli.main`` (one
    line, exit status 1, as for every other command)."""

    @functools.wraps(command)
    def run(settings: Any, args: argparse.Namespace) -> int:
        if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
            # A log line per embedding call would bury the progress and the hits, and the
            # indexer's warning of a failure is said by the command itself.
            logging.getLogger("httpx").setLevel(logging.WARNING)
            logging.getLogger("talekeeper.services.library.indexer").setLevel(logging.ERROR)
            # --wait runs a worker of PostgreSQL's queue here: its comings and goings too.
            logging.getLogger("procrastinate").setLevel(logging.WARNING)
        return command(settings, args)

    return run


# -- what is printed ------------------------------------------------------------------------


def source_line(view: dict[str, Any]) -> str:
    """One source in one line: id, title, kind, passages, state."""
    passages = f"{view['passage_count']:,} passage{'s' if view['passage_count'] != 1 else ''}"
    return f"{view['id']}  {plain(view['title'])}  ({view['kind']}, {passages})  {view['state']}"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _progress(view: dict[str, Any]) -> str:
    if view["state"] == SourceState.WORDS_ONLY:
        return "words only"
    return f"{view['embedded']:,}/{view['passage_count']:,}"


def _when(iso: str) -> str:
    return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def table_lines(views: list[dict[str, Any]]) -> list[str]:
    """The sources as a table; a failed source's error follows the table."""
    head = ("ID", "TITLE", "KIND", "PASSAGES", "STATE", "VECTORS", "ATTACHED")
    rows = [
        (
            str(v["id"]),
            _cut(plain(v["title"]), TITLE_WIDTH),
            v["kind"],
            f"{v['passage_count']:,}",
            v["state"],
            _progress(v),
            str(v.get("attached_to", 0)),
        )
        for v in views
    ]
    widths = [max(len(row[i]) for row in (head, *rows)) for i in range(len(head))]
    numeric = {0, 3, 6}
    lines = [
        "  ".join(
            cell.rjust(widths[i]) if i in numeric else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ).rstrip()
        for row in (head, *rows)
    ]
    for v in views:
        if v["state"] == SourceState.FAILED:
            retry = f" (retried from {_when(v['retry_at'])})" if v["retry_at"] else ""
            lines.append(
                f"source {v['id']} failed: {plain(v['error'] or 'no reason given')}{retry}"
            )
    return lines


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def hit_lines(number: int, hit: Hit) -> list[str]:
    """A hit: where it is from, its scores, and the start of its text, wrapped."""
    place = hit.source_title
    if hit.location.startswith(hit.source_title):  # the title heads the heading path
        place = hit.location
    elif hit.location:
        place += f", {hit.location}"
    text = textwrap.shorten(plain(hit.text), SHOWN_CHARS, placeholder=" …")
    return [
        f"{number}. {plain(place)}",
        f"   final {_score(hit.final_score)}  semantic {_score(hit.semantic_score)}  "
        f"lexical {_score(hit.lexical_score)}  (source {hit.source_id}, passage "
        f"{hit.position + 1})",
        textwrap.fill(text, WIDTH, initial_indent="   ", subsequent_indent="   "),
    ]


# -- the commands ---------------------------------------------------------------------------


def _embedding_model(rt: Any, uid: int) -> str | None:
    models = rt.models_for_user(uid)
    return models.embedding.model if models.embedding else None


def _view(rt: Any, uid: int, source_id: int) -> dict[str, Any]:
    from talekeeper.services.common.units import read_scope
    from talekeeper.services.library import store

    with read_scope(rt.sessions) as session:
        row = store.source(session, uid, source_id)
        return store.source_view(row, store.attached_counts(session, [row.id]).get(row.id, 0))


async def _wait(rt: Any, uid: int, source_id: int) -> int:
    """Run the background work here until the source is ready (0) or failed (1), the
    progress on standard error."""
    await rt.start()  # this process's worker takes its share of the queue, ours among it
    shown = -1
    while True:
        view = await asyncio.to_thread(_view, rt, uid, source_id)
        state = SourceState(view["state"])
        if state != SourceState.WORDS_ONLY and view["embedded"] != shown:
            shown = view["embedded"]
            print(f"embedded {shown:,}/{view['passage_count']:,}", file=sys.stderr, flush=True)
        if state == SourceState.FAILED:
            print(source_line(view))
            print(
                f"talekeeper: making its vectors failed: {plain(view['error'] or '')}",
                file=sys.stderr,
            )
            print(
                f"It is searched by words meanwhile and retried by 'talekeeper serve'; "
                f"'talekeeper library reindex {source_id} --wait' tries again now.",
                file=sys.stderr,
            )
            return 1
        if state in (SourceState.READY, SourceState.WORDS_ONLY):
            print(source_line(view))
            return 0
        await asyncio.sleep(WAIT_POLL)


def _after_write(view: dict[str, Any]) -> None:
    print(source_line(view))
    if view["state"] == SourceState.WORDS_ONLY:
        print("No embedding model is set: it is searched by words only.", file=sys.stderr)
    else:
        print(VECTORS_LATER, file=sys.stderr)


@_command
def run_add(settings: Any, args: argparse.Namespace) -> int:
    from talekeeper.core.tokens import BpeCounter
    from talekeeper.services.common.units import session_scope
    from talekeeper.services.library import store

    data = read_file(args.file)
    name = Path(args.file).name

    async def work(rt: Any, uid: int) -> int:
        # Read and split before the write unit: the CPU work never holds the write lock.
        prepared = await asyncio.to_thread(store.prepare, name, data, BpeCounter())
        model = await asyncio.to_thread(_embedding_model, rt, uid)
        with session_scope(rt.sessions) as session:
            row = store.store(session, uid, prepared, model)
            session.flush()
            source_id = row.id
            rt.indexer.schedule(session, [source_id])  # with the source, or not at all
        if args.wait:
            return await _wait(rt, uid, source_id)
        _after_write(_view(rt, uid, source_id))
        return 0

    return with_runtime(settings, args.as_user, work)


@_command
def run_reindex(settings: Any, args: argparse.Namespace) -> int:
    from talekeeper.services.common.units import session_scope
    from talekeeper.services.library import store

    async def work(rt: Any, uid: int) -> int:
        model = await asyncio.to_thread(_embedding_model, rt, uid)
        with session_scope(rt.sessions) as session:
            store.reindex(session, uid, args.source, model)
            rt.indexer.schedule(session, [args.source])
        if args.wait:
            return await _wait(rt, uid, args.source)
        _after_write(_view(rt, uid, args.source))
        return 0

    return with_runtime(settings, args.as_user, work)


@_command
def run_list(settings: Any, args: argparse.Namespace) -> int:
    from talekeeper.services.common.units import read_scope
    from talekeeper.services.library import store

    async def work(rt: Any, uid: int) -> int:
        with read_scope(rt.sessions) as session:
            rows = store.sources(session, uid)
            counts = store.attached_counts(session, [r.id for r in rows])
            views = [store.source_view(r, counts.get(r.id, 0)) for r in rows]
        if not views:
            print("Your library is empty: add a file with 'talekeeper library add FILE'.")
        else:
            print("\n".join(table_lines(views)))
        return 0

    return with_runtime(settings, args.as_user, work)


@_command
def run_search(settings: Any, args: argparse.Namespace) -> int:
    query = args.query
    if not query.strip():
        raise InvalidInput("Give the words to search for, e.g. 'the drowned library'.")
    if len(query) > QUERY_MAX:
        raise InvalidInput(f"The query is {len(query):,} characters; at most {QUERY_MAX:,}.")

    async def work(rt: Any, uid: int) -> int:
        models = await asyncio.to_thread(rt.models_for_user, uid)
        searcher = rt.knowledge
        found = await searcher.search(uid, None, query, "", args.limit, models, floor=False)
        if not found.sources:
            print("Your library is empty: add a file with 'talekeeper library add FILE'.")
            return 0
        terms = ", ".join(found.query.get("input_terms", [])) or "none"
        print(f"{found.considered:,} passages considered; words searched: {terms}")
        if found.note:
            print(f"note: {found.note}")
        if not found.used:
            print("No passage matches these words.")
        for number, hit in enumerate(found.used, 1):
            print()
            print("\n".join(hit_lines(number, hit)))
        return 0

    return with_runtime(settings, args.as_user, work)


def _change_attachment(settings: Any, args: argparse.Namespace, *, attach: bool) -> int:
    from talekeeper.services.common.units import session_scope
    from talekeeper.services.library import store
    from talekeeper.services.story.access import load_adventure

    async def work(rt: Any, uid: int) -> int:
        with session_scope(rt.sessions) as session:
            adventure = load_adventure(session, args.adventure, uid)
            source = store.source(session, uid, args.source)
            now = store.attached_ids(session, adventure.id)
            changed = (source.id in now) != attach
            if changed:
                wanted = [*now, source.id] if attach else [s for s in now if s != source.id]
                store.set_attached(session, adventure, wanted)
            count = len(store.attached_ids(session, adventure.id))
            named = f'{source.id} "{plain(source.title)}"'
            story = f'adventure {adventure.id} "{plain(adventure.title)}"'
        if attach:
            done = "attached" if changed else "was already attached"
            print(f"{named} {done} to {story}; {count} source(s) attached")
        else:
            done = "detached" if changed else "was not attached"
            print(f"{named} {done} from {story}; {count} source(s) attached")
        return 0

    return with_runtime(settings, args.as_user, work)


@_command
def run_attach(settings: Any, args: argparse.Namespace) -> int:
    return _change_attachment(settings, args, attach=True)


@_command
def run_detach(settings: Any, args: argparse.Namespace) -> int:
    return _change_attachment(settings, args, attach=False)


@_command
def run_remove(settings: Any, args: argparse.Namespace) -> int:
    from talekeeper.services.common.units import session_scope
    from talekeeper.services.library import store

    async def work(rt: Any, uid: int) -> int:
        with session_scope(rt.sessions) as session:
            row = store.source(session, uid, args.source)
            named = f'{row.id} "{plain(row.title)}"'
            attached = store.attached_counts(session, [row.id]).get(row.id, 0)
            store.remove(session, uid, row.id)
        also = f", and detached from {attached} adventure(s)" if attached else ""
        print(f"removed {named}{also}")
        return 0

    return with_runtime(settings, args.as_user, work)
