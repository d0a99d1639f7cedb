"""Recall on real writing: do the words that answer a question reach the narrator?

Plays each region of ``texts.REGIONS`` through the real pipeline and asks its questions
(``play``), then writes the section (``report``). The texts are read from the corpus
folder (``texts.find_corpus``); without it the benchmark says so and writes nothing.

    .venv/bin/python -m benchmarks.recall.real.run [--write docs/benchmarks.md]
        [--regions pp-tune sh-tune] [--corpus DIR] [--json out.json] [--frames out.pickle]

``--frames``: also keep every question's ranking inputs (``dense.frames``) for offline
comparison of ranking rules (``benchmarks.recall.dense.tune --frames``).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import pickle
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.recall.dense.play import Background
from benchmarks.recall.play import EMBEDDERS, player
from benchmarks.recall.real.play import RealResult, play_region
from benchmarks.recall.real.questions import FOLDER, Question, load, tally
from benchmarks.recall.real.report import Run, markdown
from benchmarks.recall.real.texts import REGIONS, CorpusMissing, find_corpus

from benchmarks.kit.report import machine_description, publish
from talekeeper_testkit.double import ModelDouble

SECTION = "real-recall"
TITLE = "Recall on real writing"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


async def _play(
    folder: Path, sets: dict[str, list[Question]], embedder: str, frames: list[Any] | None
) -> tuple[list[RealResult], Background]:
    results: list[RealResult] = []
    background = Background()
    with ModelDouble() as double:
        async with player(EMBEDDERS[embedder], double) as p:
            p.frames = frames
            for key, questions in sets.items():
                began = time.perf_counter()
                got, bg = await play_region(p, folder, REGIONS[key], questions)
                results += got
                background.add(bg)
                log(f"{key}: {len(questions)} questions, {time.perf_counter() - began:.0f} s")
    return results, background


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--write", type=Path, help="store the section in this Markdown file")
    parser.add_argument("--regions", nargs="+", choices=sorted(REGIONS), default=list(REGIONS))
    parser.add_argument("--corpus", help="the folder holding the texts")
    parser.add_argument("--questions", type=Path, default=FOLDER, help="question files' folder")
    parser.add_argument("--embedder", choices=sorted(EMBEDDERS), default="embedded")
    parser.add_argument("--json", type=Path, help="also store every question's result here")
    parser.add_argument("--frames", type=Path, help="also pickle every question's frame here")
    args = parser.parse_args(argv)
    try:
        folder = find_corpus(args.corpus)
    except CorpusMissing as exc:
        log(f"Real-text recall skipped: {exc}")
        return 0
    sets = {key: load(folder, key, args.questions) for key in args.regions}  # checked once
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    frames: list[Any] | None = [] if args.frames else None
    results, background = asyncio.run(_play(folder, sets, args.embedder, frames))
    run = Run(
        results=results,
        embedder=args.embedder,
        regions=list(args.regions),
        seconds=time.perf_counter() - started,
        machine=machine_description(),
        load=(load_before, os.getloadavg()[0]),
        makeup={key: tally(questions) for key, questions in sets.items()},
        background=background,
    )
    body = markdown(run)
    publish(body, args.write, SECTION, TITLE)
    if args.json:
        args.json.write_text(json.dumps([dataclasses.asdict(r) for r in results], default=str))
    if args.frames and frames is not None:
        with args.frames.open("wb") as out:
            pickle.dump(frames, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
