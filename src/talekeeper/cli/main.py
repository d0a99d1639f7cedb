"""The ``talekeeper`` command line.

Every command loads the settings first; an invalid setting stops it with the
message naming the variable (exit status 2). Errors meant for the user are
printed as one line, never as a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from talekeeper import __version__
from talekeeper.core.errors import TalekeeperError
from talekeeper.settings import Settings, load_settings

COMMANDS: dict[str, str] = {
    "serve": "Run the web app and the JSON API.",
    "db upgrade": "Bring the database to the newest schema (the app also does this on start).",
    "bench provider": "Measure load time, prompt and generation speed and embeddings/s.",
}


def _serve(settings: Settings, _args: argparse.Namespace) -> int:
    import uvicorn

    from talekeeper.web.app import create_app

    print(f"Talekeeper {__version__} on http://{settings.host}:{settings.port}", file=sys.stderr)
    uvicorn.run(
        create_app(settings),
        host=settings.host,
        port=settings.port,
        log_level=settings.log_level,
    )
    return 0


def _db_upgrade(settings: Settings, _args: argparse.Namespace) -> int:
    from talekeeper.storage import migrate
    from talekeeper.storage.db import make_engine

    engine = make_engine(settings.resolved_database_url)
    migrate.upgrade(engine)
    print(f"database at revision {migrate.current_revision(engine)}: {engine.url!r}")
    engine.dispose()
    return 0


def _bench_provider(settings: Settings, args: argparse.Namespace) -> int:
    from talekeeper.bootstrap import Runtime
    from talekeeper.core.reports import machine_description, write_section
    from talekeeper.services.bench import bench_provider

    async def run() -> str:
        runtime = Runtime.build(settings)
        try:
            models = runtime.models_for(settings, runtime.local_user_id())
            print(f"benchmarking {models.names()} ...", file=sys.stderr)
            result = await bench_provider(models)
        finally:
            await runtime.aclose()
        return result.markdown(machine_description())

    body = asyncio.run(run())
    print(body)
    if args.write:
        title = f"Provider: {settings.model}"
        write_section(Path(args.write), f"provider-{settings.model}", title, body)
        print(f"written to {args.write}", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="talekeeper", description="Talekeeper " + __version__)
    parser.add_argument("--version", action="version", version=__version__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help=COMMANDS["serve"]).set_defaults(run=_serve)
    db = sub.add_parser("db", help="Database commands.").add_subparsers(dest="db", required=True)
    db.add_parser("upgrade", help=COMMANDS["db upgrade"]).set_defaults(run=_db_upgrade)
    bench = sub.add_parser("bench", help="Benchmarks.").add_subparsers(dest="bench", required=True)
    provider = bench.add_parser("provider", help=COMMANDS["bench provider"])
    provider.add_argument(
        "--write", metavar="FILE", default="", help="also write the figures into this Markdown file"
    )
    provider.set_defaults(run=_bench_provider)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings()
    except TalekeeperError as exc:
        print(f"talekeeper: {exc.message}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("alembic").setLevel(logging.WARNING)  # migrations are routine on start
    run: Callable[[Settings, argparse.Namespace], int] = args.run
    try:
        return run(settings, args)
    except TalekeeperError as exc:
        print(f"talekeeper: {exc.message}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
