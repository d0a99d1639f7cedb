"""Recall on dense stories: does the sentence that states the answer reach the narrator?

Generates a set of dense adventures per seed (``dense_set``: narrative and
dialogue), plays each through the real pipeline once per embedder, measures
every probe (``play``) and writes the section (``report``). The tune seed's
figures and the held-out seeds' are reported apart.

    .venv/bin/python -m benchmarks.recall.dense.run [--write docs/benchmarks.md] [--quick]
        [--tune-seed S] [--seeds A B] [--embedders embedded double] [--json out.json]

``--quick``: one short adventure per style, on the tune seed only (a smoke run).
Progress goes to stderr.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import sys
import time
from pathlib import Path

from benchmarks.kit.report import Clock, arguments, publish
from benchmarks.kit.runtime import EMBEDDERS, player
from benchmarks.recall.dense.generator import STYLES, WINDOW, DenseAdventure, generate
from benchmarks.recall.dense.play import Background, ProbeResult, play
from benchmarks.recall.dense.report import Run, markdown

from talekeeper_testkit.double import ModelDouble

SECTION = "dense-recall"
TITLE = "Recall on dense stories"
COMMAND = ".venv/bin/python -m benchmarks.recall.dense.run --write docs/benchmarks.md"
TUNE_SEED = 14
HELD_OUT = (41, 77)
# Adventures per seed, styles alternating, and their lengths: sized so that the full run (the
# memory worker after every turn, MiniLM embedding every memory and its passages) stays near
# five minutes on two cores; three of 150-250 actions took seven.
PER_SEED = 2
MIN_ACTIONS, MAX_ACTIONS = 180, 260
QUICK_ACTIONS = 100


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def dense_set(seed: int) -> list[DenseAdventure]:
    """``PER_SEED`` adventures for ``seed``: styles alternate, lengths drawn in range."""
    rng = random.Random(f"dense-set/{seed}")
    return [
        generate(seed * 100 + i, rng.randint(MIN_ACTIONS, MAX_ACTIONS), WINDOW,
                 STYLES[i % len(STYLES)], key=f"{seed}-{i + 1}")
        for i in range(PER_SEED)
    ]  # fmt: skip


def quick_set(seed: int) -> list[DenseAdventure]:
    return [
        generate(seed * 100 + i, QUICK_ACTIONS, WINDOW, style, key=f"{seed}-q{i + 1}")
        for i, style in enumerate(STYLES)
    ]


async def run_embedder(
    key: str, sets: dict[int, list[DenseAdventure]]
) -> tuple[list[ProbeResult], Background, float]:
    results: list[ProbeResult] = []
    background = Background()
    started = time.perf_counter()
    with ModelDouble() as double:
        async with player(EMBEDDERS[key], double) as p:
            for seed, adventures in sets.items():
                for adv in adventures:
                    began = time.perf_counter()
                    got, bg = await play(p, adv, seed)
                    results += got
                    background.add(bg)
                    log(
                        f"[{key}] seed {seed} {adv.key} ({adv.style}): {adv.length} actions, "
                        f"{len(adv.questions)} probes, {time.perf_counter() - began:.1f} s"
                    )
    return results, background, time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = arguments((__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one short adventure per style")
    parser.add_argument("--tune-seed", type=int, default=TUNE_SEED)
    parser.add_argument("--seeds", type=int, nargs="*", default=list(HELD_OUT), help="held out")
    parser.add_argument("--embedders", nargs="+", choices=sorted(EMBEDDERS), default=["embedded"])
    parser.add_argument("--json", type=Path, help="also store every probe's result here")
    args = parser.parse_args(argv)
    held = [] if args.quick else [s for s in args.seeds if s != args.tune_seed]
    make = quick_set if args.quick else dense_set
    sets = {seed: make(seed) for seed in [args.tune_seed, *held]}
    advs = [a for group in sets.values() for a in group]
    log(
        f"{len(advs)} adventures, {sum(a.length for a in advs)} actions, "
        f"{sum(len(a.questions) for a in advs)} probes, embedders: {args.embedders}"
    )
    clock = Clock(COMMAND)
    results: list[ProbeResult] = []
    seconds: dict[str, float] = {}
    background: dict[str, Background] = {}
    for key in args.embedders:
        got, bg, took = asyncio.run(run_embedder(key, sets))
        results += got
        seconds[key], background[key] = took, bg
    run = Run(
        results=results,
        embedders=list(args.embedders),
        tune_seed=args.tune_seed,
        held_out=held,
        window=WINDOW,
        adventures=[
            {
                "key": a.key,
                "seed": seed,
                "style": a.style,
                "actions": a.length,
                "statements": len(a.statements),
                "probes": len(a.questions),
            }
            for seed, group in sets.items()
            for a in group
        ],
        seconds=seconds,
        clock=clock.stop(),
        background=background,
    )
    publish(markdown(run), args.write, SECTION, TITLE)
    if args.json:
        args.json.write_text(json.dumps(dataclasses.asdict(run), indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
