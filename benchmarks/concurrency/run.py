"""Concurrency on one server and one SQLite database, background work included: 8 players
playing turns, then 20 clients sending mixed traffic.

Both runs serve the real app by uvicorn on loopback in this process, each round on a fresh
migrated SQLite file (WAL), with the loopback model double as narrator, embedder and
summary model (``harness``). The players run (``players``): 8 players play ``--turns``
turns each at once, beside one player alone on its own server. The mixed run (``mixed``):
``--clients`` clients send ``--ops`` steps each of mixed reads and writes, some of them
importing an adventure file of ``--import-actions`` actions. Every failure is counted,
with "database is locked" ones apart: non-2xx answers, broken streams, failed background
passes, AI calls logged as errors (players), warnings the server logged.

    .venv/bin/python -m benchmarks.concurrency.run [--turns N] [--players 8] [--clients 20]
        [--ops 50] [--import-actions 3000] [--only players|mixed] [--short]
        [--write docs/benchmarks.md]

Run from the repository root: the model double and the live server come from ``tests/``.
``--write`` replaces the ``concurrency`` and ``concurrency-mixed`` sections of that
Markdown file and saves the players' plot in a folder named after it
(``docs/benchmarks/concurrency.png``). ``--short``: fewer turns and requests, a smaller
file, for development. Progress goes to stderr; the exit status is 1 when the players saw
a "database is locked" failure or the mixed run saw any failure.

Target: 0 "database is locked" failures, 0 server errors (503 included: at this load a busy
database must be waited for, not refused) and no other failure.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.concurrency import mixed, players

from benchmarks.kit.report import machine_description, publish


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.concurrency.run", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--write", type=Path, help="store the sections in this Markdown file")
    parser.add_argument("--turns", type=int, default=players.TURNS, help="turns per player")
    parser.add_argument("--players", type=int, default=players.PLAYERS)
    parser.add_argument(
        "--clients", type=int, default=mixed.CLIENTS, help="clients of the mixed run"
    )
    parser.add_argument(
        "--ops", type=int, default=mixed.MIXED_OPS, help="requests per mixed client"
    )
    parser.add_argument(
        "--import-actions",
        type=int,
        default=mixed.IMPORT_ACTIONS,
        help="actions in the imported file",
    )
    parser.add_argument("--only", choices=("players", "mixed"), help="run one of the two")
    parser.add_argument("--short", action="store_true", help="a quick run, for development")
    args = parser.parse_args(argv)
    ok = True
    if args.only != "mixed":
        ok = players_run(args) and ok
    if args.only != "players":
        ok = mixed_run(args) and ok
    return 0 if ok else 1


def players_run(args: argparse.Namespace) -> bool:
    turns = players.SHORT_TURNS if args.short else args.turns
    load_before = os.getloadavg()[0]
    rounds: list[players.Round] = []
    with tempfile.TemporaryDirectory(prefix="talekeeper-concurrency-") as root:
        for count in sorted({1, args.players}):
            print(f"{count} player(s), {turns} turns each …", file=sys.stderr)
            rounds.append(players.run_round(count, turns, Path(root) / str(count)))
    run: dict[str, Any] = {
        "turns": turns,
        "machine": machine_description(),
        "load": (load_before, os.getloadavg()[0]),
    }
    if args.write:
        image = args.write.parent / args.write.stem / players.PLOT
        players.plot(rounds, image)
        run["plot"] = image.relative_to(args.write.parent).as_posix()
    body = players.markdown(rounds, run)
    publish(body, args.write, "concurrency", "Concurrency (one SQLite server)")
    return all(r.locked() == 0 for r in rounds)


def mixed_run(args: argparse.Namespace) -> bool:
    ops = mixed.SHORT_OPS if args.short else args.ops
    actions = mixed.SHORT_IMPORT_ACTIONS if args.short else args.import_actions
    importers = min(args.clients, mixed.SHORT_IMPORTERS if args.short else mixed.IMPORTERS)
    print(f"mixed traffic: {args.clients} clients, {ops} requests each …", file=sys.stderr)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="talekeeper-mixed-") as root:
        result = mixed.run_mixed(args.clients, ops, actions, importers, Path(root))
    run = {
        "importers": importers,
        "machine": machine_description(),
        "load": (load_before, os.getloadavg()[0]),
    }
    body = mixed.mixed_markdown(result, run)
    publish(body, args.write, "concurrency-mixed", "Mixed traffic (one SQLite server)")
    return not result.bad() and not result.failed_passes and not result.logged


if __name__ == "__main__":
    raise SystemExit(main())
