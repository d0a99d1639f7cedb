"""Recall of scrolled-out facts: Talekeeper's memory system against rival designs (issue 6).

Generates the default set of long adventures (``generator.default_set``), plays
each through the real pipeline once per embedder (the loopback double's
deterministic vectors, then the embedded MiniLM), ranks every probe with every
method (``methods``) and writes the tables and plots. Everything is measured
side by side in one run: same stories, same probes, same banks.

    .venv/bin/python -m benchmarks.recall.run [--write docs/benchmarks.md]
        [--embedders double embedded] [--count 6] [--seed 2024] [--window 40]
        [--json results.json] [--quick] [--sweep-seeds 7 99]

``--write`` replaces the ``recall`` section of that Markdown file and saves the
PNG plots in a ``benchmarks/`` folder next to it. ``--quick``: two short
adventures, for a smoke run (no other sets). ``--sweep-seeds``: more sets of the
same size, played with the embedded embedder only, on which the score's weights
are compared (memory.md §5: weights change only on a rule that does better
across the benchmark's sets). Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.recall import plots
from benchmarks.recall.generator import DEFAULT_COUNT, DEFAULT_SEED, WINDOW, Adventure, default_set
from benchmarks.recall.generator import generate as generate_one
from benchmarks.recall.play import EMBEDDERS, play, player
from benchmarks.recall.probe import Leaving, ProbeResult, leaving, measure
from benchmarks.recall.report import Run, markdown

from benchmarks.kit.report import machine_description, publish
from talekeeper_testkit.double import ModelDouble

SECTION = "recall"
TITLE = "Recall of scrolled-out facts"
PLOT_FOLDER = "benchmarks"  # next to the Markdown file: docs/benchmarks/*.png
QUICK_ACTIONS = (100, 120)
SWEEP_SEEDS = (7, 99)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


async def run_embedder(
    key: str, adventures: list[Adventure]
) -> tuple[list[ProbeResult], list[Leaving], float]:
    results: list[ProbeResult] = []
    leavings: list[Leaving] = []
    started = time.perf_counter()
    with ModelDouble() as double:
        async with player(EMBEDDERS[key], double) as p:
            for n, adv in enumerate(adventures, start=1):
                began = time.perf_counter()
                for item in await play(p, adv, measure, leaving):
                    (results if isinstance(item, ProbeResult) else leavings).append(item)
                log(
                    f"[{key}] {n}/{len(adventures)} {adv.key}: {adv.length} actions, "
                    f"{len(adv.probes)} probes, {time.perf_counter() - began:.1f} s"
                )
    return results, leavings, time.perf_counter() - started


def adventures_for(args: argparse.Namespace) -> list[Adventure]:
    if args.quick:
        return [
            generate_one(args.seed * 100 + i, n, args.window, key=f"q{i + 1}")
            for i, n in enumerate(QUICK_ACTIONS)
        ]
    return default_set(args.seed, args.count, args.window)


def _dump(run: Run, path: Path) -> None:
    data = {
        "results": [dataclasses.asdict(r) for r in run.results],
        "leavings": [dataclasses.asdict(x) for x in run.leavings],
        "adventures": run.adventures,
        "seconds": run.seconds,
    }
    path.write_text(json.dumps(data, indent=1))


async def collect(args: argparse.Namespace, adventures: list[Adventure]) -> dict[str, Any]:
    results: list[ProbeResult] = []
    leavings: list[Leaving] = []
    seconds: dict[str, float] = {}
    for key in args.embedders:
        got, left, took = await run_embedder(key, adventures)
        results += got
        leavings += left
        seconds[key] = took
    sweep: dict[int, list[ProbeResult]] = {}
    started = time.perf_counter()
    for seed in [] if args.quick else args.sweep_seeds:
        others = default_set(seed, args.count, args.window)
        sweep[seed], _, _ = await run_embedder("embedded", others)
    return {
        "results": results,
        "leavings": leavings,
        "seconds": seconds,
        "sweep": sweep,
        "sweep_seconds": time.perf_counter() - started,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--write", type=Path, help="store the section in this Markdown file")
    parser.add_argument(
        "--embedders", nargs="+", choices=sorted(EMBEDDERS), default=["double", "embedded"]
    )
    parser.add_argument("--count", type=int, default=DEFAULT_COUNT)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--window", type=int, default=WINDOW)
    parser.add_argument("--json", type=Path, help="also store every probe's outcome here")
    parser.add_argument("--quick", action="store_true", help="two short adventures")
    parser.add_argument(
        "--sweep-seeds", type=int, nargs="*", default=list(SWEEP_SEEDS), help="other sets"
    )
    args = parser.parse_args(argv)
    adventures = adventures_for(args)
    log(
        f"{len(adventures)} adventures, {sum(a.length for a in adventures)} actions, "
        f"{sum(len(a.probes) for a in adventures)} probes each, embedders: {args.embedders}"
    )
    load_before = os.getloadavg()[0]
    got = asyncio.run(collect(args, adventures))
    run = Run(
        results=got["results"],
        leavings=got["leavings"],
        embedders=list(args.embedders),
        window=args.window,
        adventures=[
            {"key": a.key, "actions": a.length, "facts": len(a.planted), "probes": len(a.probes)}
            for a in adventures
        ],
        seconds=got["seconds"],
        machine=machine_description(),
        load=(load_before, os.getloadavg()[0]),
        seed=args.seed,
        sweep=got["sweep"],
        sweep_seconds=got["sweep_seconds"],
    )
    names: list[str] = []
    if args.write:
        folder = args.write.parent / PLOT_FOLDER
        names = [f"{PLOT_FOLDER}/{p.name}" for p in plots.draw(run, folder)]
    body = markdown(run, names)
    where = f" (plots in {args.write.parent / PLOT_FOLDER})" if args.write else ""
    publish(body, args.write, SECTION, TITLE, where)
    if args.json:
        _dump(run, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
