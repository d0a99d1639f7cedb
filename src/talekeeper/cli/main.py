"""The ``talekeeper`` command line.

Every command loads the settings first; an invalid setting stops it with the
message naming the variable (exit status 2). Errors meant for the user are
printed as one line, never as a traceback. An adventure id on the command line
is a whole number the database can hold; argparse refuses anything else (exit
status 2) before any command runs.

``play``, ``new``, ``export``, ``import``, ``lore`` and ``library`` act as the local user in
local mode, and as the account ``--user NAME`` names in accounts mode (the person at the
server's console is trusted, as with ``users add``). ``--user`` is required in accounts mode
and refused in local mode, in one line with exit status 2, before anything is opened.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from talekeeper import __version__
from talekeeper.cli.common import with_runtime
from talekeeper.cli.library import HELP as LIBRARY_HELP
from talekeeper.cli.library import add_parsers as add_library_parsers
from talekeeper.cli.lore import add_parsers as add_lore_parsers
from talekeeper.cli.lore import add_reading_options
from talekeeper.cli.serve import detect_servers, serve
from talekeeper.core.errors import InvalidInput, TalekeeperError
from talekeeper.services.common.limits import MAX_ID
from talekeeper.settings import AuthMode, LogTo, Settings, load_settings

COMMANDS: dict[str, str] = {
    "serve": "Run the web app and the JSON API.",
    "worker": "Run the background passes of a PostgreSQL database (any number of workers).",
    "play": "Play an adventure in the terminal (default: the most recent one).",
    "new": "Start an adventure from a scenario or a file (--from-file) and print its id.",
    "export": "Write an adventure as JSON to standard output.",
    "import": "Read an adventure from a JSON file and print its new id.",
    "lore import": "Import another tool's lorebook or cards into an adventure (--adventure).",
    "lore export": "Write an adventure's story cards in another tool's format (--format).",
    **LIBRARY_HELP,  # library add, list, search, attach, detach, remove, reindex
    "db upgrade": "Bring the database to the newest schema (the app also does this on start).",
    "users add": "Add an account (NAME, --admin for an administrator); asks for its password.",
    "users list": "List the accounts.",
    "users disable": "Disable an account and sign it out everywhere.",
    "users enable": "Enable a disabled account again.",
    "users admin": "Make an account an administrator (--off: a player again).",
    "users passwd": "Set an account's password, sign it out everywhere and revoke its API "
    "tokens (--keep-tokens: keep them).",
    "tokens add": "Make an API token for an account (--user, --scope) and print it once.",
    "tokens list": "List an account's API tokens (--user).",
    "tokens revoke": "Revoke one of an account's API tokens (ID, --user).",
    "bench provider": "Measure load time, prompt and generation speed and embeddings/s.",
    "detect": "List the model servers running on this machine (Ollama, LM Studio, llama.cpp, "
    "KoboldCpp, vLLM) and how to use one.",
}


INTERACTIVE = frozenset({"play"})  # commands whose terminal belongs to the story
ACT_AS = "accounts mode: the account to act as (required there; refused in local mode)"


def _row_id(what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        # A larger number would reach the database and fail there with a traceback.
        if not (text.isascii() and text.isdigit()) or int(text) > MAX_ID:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what} (a whole number)")
        return int(text)

    return parse


_adventure_id, _token_id = _row_id("an adventure id"), _row_id("a token id")


def _days(text: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of days")
    return int(text)


def _as_user_refusal(settings: Settings, args: argparse.Namespace) -> str | None:
    """Why this command's ``--user`` does not fit the auth mode, if it does not."""
    if "as_user" not in vars(args):
        return None  # a command that acts as no one
    accounts_mode = settings.auth == AuthMode.ACCOUNTS
    if accounts_mode and args.as_user is None:
        return (
            "TALEKEEPER_AUTH is accounts: say which account this acts as with --user NAME "
            "('talekeeper users list' lists them)."
        )
    if not accounts_mode and args.as_user is not None:
        return (
            "--user is for accounts mode (TALEKEEPER_AUTH=accounts): in local mode every "
            "command acts as the one local user, so leave --user out."
        )
    return None


def _play(settings: Settings, args: argparse.Namespace) -> int:
    from talekeeper.cli.play import play

    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        # The log shares the terminal with the story: a line per model request would land in
        # the middle of the streamed reply. Each call is in the AI call log anyway.
        logging.getLogger("httpx").setLevel(logging.WARNING)
        # The same for the job queue's line per deferred and per run job (PostgreSQL).
        logging.getLogger("procrastinate").setLevel(logging.WARNING)

    async def work(rt: Any, uid: int) -> int:
        return await play(rt, args.adventure, user_id=uid, user_name=args.as_user)

    return with_runtime(settings, args.as_user, work, background=True)


def _new(settings: Settings, args: argparse.Namespace) -> int:
    from talekeeper.services.common.units import session_scope
    from talekeeper.services.story import adventures

    if args.from_file is not None and (args.scenario or args.title):
        raise InvalidInput("Give --from-file alone: the file gives the title and the scenario.")
    reading = (args.dry_run, args.greeting, args.include_disabled, args.split_long)
    if args.from_file is None and any((*reading, args.move_instructions)):
        raise InvalidInput(
            "--dry-run, --greeting and the reading options are for --from-file FILE."
        )

    async def work(rt: Any, uid: int) -> int:
        if args.from_file is not None:
            from talekeeper.cli.lore import new_from_file

            return new_from_file(rt, uid, args)
        data = {"title": args.title} if args.title else {}
        with session_scope(rt.sessions) as session:
            scenario = rt.scenario(args.scenario) if args.scenario else None
            if scenario is None and not args.title:
                raise InvalidInput(
                    "Give --scenario NAME (one of " + ", ".join(sorted(rt.scenarios)) + ") "
                    "or --title for a blank adventure."
                )
            story = adventures.create(session, uid, data, rt.memory, scenario)
            adventure_id = story.adventure.id
        print(adventure_id)
        return 0

    return with_runtime(settings, args.as_user, work)


def _export(settings: Settings, args: argparse.Namespace) -> int:
    from talekeeper.services import exchange
    from talekeeper.services.common.units import session_scope

    async def work(rt: Any, uid: int) -> int:
        with session_scope(rt.sessions) as session:
            data = exchange.export(session, args.adventure, uid)
        json.dump(data, sys.stdout, ensure_ascii=False, indent=1)
        sys.stdout.write("\n")
        return 0

    return with_runtime(settings, args.as_user, work)


def _import(settings: Settings, args: argparse.Namespace) -> int:
    from talekeeper.services import exchange
    from talekeeper.services.common.units import session_scope

    try:
        data = json.loads(Path(args.file).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidInput(f"Cannot read {args.file}: {exc.strerror}.") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{args.file} is not a JSON file ({exc}).") from None
    except RecursionError:
        raise InvalidInput(
            f"{args.file} nests its values too deeply to be an adventure file."
        ) from None

    async def work(rt: Any, uid: int) -> int:
        with session_scope(rt.sessions) as session:
            imported = exchange.import_with_report(session, uid, data, rt.memory)
            adventure_id = imported.adventure.id
        print(adventure_id)
        for warning in imported.warnings:  # a library source this user lacks: not attached
            print(f"talekeeper: {warning}", file=sys.stderr)
        return 0

    return with_runtime(settings, args.as_user, work)


def _worker(settings: Settings, args: argparse.Namespace) -> int:
    from talekeeper.cli.worker import run

    return run(settings, args)


def _db_upgrade(settings: Settings, _args: argparse.Namespace) -> int:
    from talekeeper.services.common import database

    revision, url = database.upgrade(settings.resolved_database_url)
    print(f"database at revision {revision}: {url}")
    return 0


def _users(settings: Settings, args: argparse.Namespace) -> int:
    from talekeeper.cli.users import run

    return run(settings, args)


def _tokens(settings: Settings, args: argparse.Namespace) -> int:
    from talekeeper.cli.tokens import run

    return run(settings, args)


def _bench_provider(settings: Settings, _args: argparse.Namespace) -> int:
    from talekeeper.bootstrap import Runtime
    from talekeeper.services.endpoints.bench import bench_provider, machine_description

    async def run() -> str:
        runtime = Runtime.build(settings)
        try:
            models = runtime.models_for(settings, runtime.local_user_id())
            print(f"benchmarking {models.names()} ...", file=sys.stderr)
            result = await bench_provider(models)
        finally:
            await runtime.aclose()
        return result.markdown(machine_description())

    print(asyncio.run(run()))
    return 0


def _token_parsers(sub: Any) -> None:
    tokens = sub.add_parser(
        "tokens", help="API tokens of an account, for TALEKEEPER_AUTH=accounts."
    )
    token = tokens.add_subparsers(dest="tokens", required=True)
    add = token.add_parser("add", help=COMMANDS["tokens add"])
    add.add_argument("name", help="what the token is for, e.g. 'backup script'")
    add.add_argument(
        "--scope",
        dest="scopes",
        action="append",
        required=True,
        choices=["play", "read", "admin"],
        help="what it may do (repeat for more): play changes stories, read reads them",
    )
    expiry = add.add_mutually_exclusive_group()
    expiry.add_argument(
        "--days", type=_days, default=None, help="it expires after this many days (default: 90)"
    )
    expiry.add_argument("--never", action="store_true", help="it never expires")
    listing = token.add_parser("list", help=COMMANDS["tokens list"])
    revoke = token.add_parser("revoke", help=COMMANDS["tokens revoke"])
    revoke.add_argument("id", type=_token_id, help="the token's id (see tokens list)")
    for each in (add, listing, revoke):
        each.add_argument("--user", required=True, metavar="NAME", help="the account's name")
    tokens.set_defaults(run=_tokens)


def _positive(what: str, kind: Callable[[str], float]) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            value = 0
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
        return value

    return parse


def _worker_parser(sub: Any) -> None:
    # The defaults are the job queue's (services.background.queue), filled in by the command:
    # importing it here would cost every command its start-up time.
    worker = sub.add_parser("worker", help=COMMANDS["worker"])
    worker.add_argument(
        "--concurrency",
        type=_positive("a number of runs (a whole number above 0)", int),
        help="runs at once, each of another adventure (default: 4)",
    )
    seconds = {
        "--stalled-after": "a worker silent this long is taken for dead and its runs run "
        "again; give every worker of a database the same value (default: 30)",
        "--grace": "on SIGTERM or Ctrl-C, how long running passes may finish before they "
        "are handed back to be run again (default: 20)",
    }
    for flag, meaning in seconds.items():
        worker.add_argument(
            flag,
            type=_positive("a number of seconds above 0", float),
            metavar="SECONDS",
            help=meaning,
        )
    worker.set_defaults(run=_worker)


def _users_parsers(sub: Any) -> None:
    users = sub.add_parser("users", help="Accounts, for TALEKEEPER_AUTH=accounts.")
    user = users.add_subparsers(dest="users", required=True)
    add = user.add_parser("add", help=COMMANDS["users add"])
    add.add_argument("name", help="1 to 40 letters (a-z, A-Z), digits, '_', '.' or '-'")
    add.add_argument("--admin", action="store_true", help="the account may manage accounts")
    user.add_parser("list", help=COMMANDS["users list"])
    for verb in ("disable", "enable", "passwd"):
        user.add_parser(verb, help=COMMANDS[f"users {verb}"]).add_argument(
            "name", help="the account's name"
        )
    user.choices["passwd"].add_argument(
        "--keep-tokens", action="store_true", help="keep the account's API tokens working"
    )
    admin = user.add_parser("admin", help=COMMANDS["users admin"])
    admin.add_argument("name", help="the account's name")
    admin.add_argument("--off", action="store_true", help="remove the administrator flag")
    users.set_defaults(run=_users)


def _acting(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--user", dest="as_user", metavar="NAME", help=ACT_AS)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="talekeeper", description="Talekeeper " + __version__)
    parser.add_argument("--version", action="version", version=__version__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help=COMMANDS["serve"]).set_defaults(run=serve)
    _worker_parser(sub)
    play = sub.add_parser("play", help=COMMANDS["play"])
    play.add_argument("adventure", nargs="?", type=_adventure_id, help="adventure id")
    play.set_defaults(run=_play)
    new = sub.add_parser("new", help=COMMANDS["new"])
    new.add_argument("--scenario", help="a scenario id (see GET /api/scenarios)")
    new.add_argument("--title", help="the title (default: the scenario's)")
    new.add_argument(
        "--from-file",
        metavar="FILE",
        help="a character card, or a NovelAI, AI Dungeon or KoboldAI scenario or story",
    )
    new.add_argument(
        "--greeting",
        type=int,
        default=0,
        metavar="N",
        help="with --from-file: open with the file's Nth alternate greeting (0: its opening)",
    )
    add_reading_options(new)
    new.set_defaults(run=_new)
    export = sub.add_parser("export", help=COMMANDS["export"])
    export.add_argument("adventure", type=_adventure_id, help="adventure id")
    export.set_defaults(run=_export)
    imp = sub.add_parser("import", help=COMMANDS["import"])
    imp.add_argument("file", help="a file written by talekeeper export")
    imp.set_defaults(run=_import)
    for acting in (play, new, export, imp):  # see the module docstring
        _acting(acting)
    add_lore_parsers(sub, _adventure_id, _acting)
    add_library_parsers(sub, _row_id, _acting)
    db = sub.add_parser("db", help="Database commands.").add_subparsers(dest="db", required=True)
    db.add_parser("upgrade", help=COMMANDS["db upgrade"]).set_defaults(run=_db_upgrade)
    _users_parsers(sub)
    _token_parsers(sub)
    bench = sub.add_parser("bench", help="Benchmarks.").add_subparsers(dest="bench", required=True)
    provider = bench.add_parser("provider", help=COMMANDS["bench provider"])
    provider.set_defaults(run=_bench_provider)
    detect = sub.add_parser("detect", help=COMMANDS["detect"])
    detect.add_argument("--json", action="store_true", help="print the list as JSON")
    detect.set_defaults(run=detect_servers)
    return parser


def configure_logging(settings: Settings, *, interactive: bool) -> None:
    """Where the log goes. A command that talks with the player in the terminal (``play``)
    keeps the terminal for the story: its log goes to ``talekeeper.log`` in the data dir
    (``TALEKEEPER_LOG_TO=file``, the default) or to stderr at warning and above
    (``stderr``). Every other command logs to stderr at ``TALEKEEPER_LOG_LEVEL``."""
    level = getattr(logging, settings.log_level.upper())
    handler: logging.Handler = logging.StreamHandler(sys.stderr)
    if interactive and settings.log_to is LogTo.FILE:
        try:
            settings.log_file.parent.mkdir(parents=True, exist_ok=True)
            handler = logging.FileHandler(settings.log_file, encoding="utf-8")
        except OSError as exc:  # an unwritable data dir: the same as stderr, and say why
            print(
                f"talekeeper: cannot write {settings.log_file} ({exc.strerror}); "
                "warnings go to the terminal.",
                file=sys.stderr,
            )
            level = max(level, logging.WARNING)
    elif interactive:
        level = max(level, logging.WARNING)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    logging.getLogger("alembic").setLevel(max(level, logging.WARNING))  # routine on start


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings()
    except TalekeeperError as exc:
        print(f"talekeeper: {exc.message}", file=sys.stderr)
        return 2
    configure_logging(settings, interactive=args.command in INTERACTIVE)
    refusal = _as_user_refusal(settings, args)
    if refusal is not None:
        print(f"talekeeper: {refusal}", file=sys.stderr)
        return 2
    run: Callable[[Settings, argparse.Namespace], int] = args.run
    try:
        return run(settings, args)
    except TalekeeperError as exc:
        print(f"talekeeper: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
