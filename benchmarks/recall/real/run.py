"""Recall on real writing: do the words that answer a question reach the narrator?

Plays each region of ``texts.REGIONS`` through the real pipeline and asks its questions
(``play``), then writes the section (``report``). The texts are read from the corpus
folder (``texts.find_corpus``); without it the benchmark says so and writes nothing.

    .venv/bin/python -m benchmarks.recall.real.run [--write docs/benchmarks.md]
        [--regions pp-tune sh-tune] [--corpus DIR] [--context 2048]

``--context``: the context size played at (2,048, the recall benchmarks' own, by default;
the Memories are at their ceiling from about 2,600).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from benchmarks.kit.report import Clock, arguments, publish
from benchmarks.kit.runtime import CONTEXT_TOKENS, EMBEDDERS, player
from benchmarks.recall.dense.play import Background
from benchmarks.recall.real.play import RealResult, play_region
from benchmarks.recall.real.questions import Question, load
from benchmarks.recall.real.report import Run, markdown
from benchmarks.recall.real.texts import REGIONS, CorpusMissing, find_corpus

from talekeeper_testkit.double import ModelDouble

SECTION = "real-recall"
TITLE = "Recall on real writing"
COMMAND = ".venv/bin/python -m benchmarks.recall.real.run --write docs/benchmarks.md"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


async def _play(
    folder: Path, sets: dict[str, list[Question]], embedder: str, context: int
) -> tuple[list[RealResult], Background]:
    results: list[RealResult] = []
    background = Background()
    with ModelDouble() as double:
        async with player(EMBEDDERS[embedder], double, context_tokens=context) as p:
            for key, questions in sets.items():
                began = time.perf_counter()
                got, bg = await play_region(p, folder, REGIONS[key], questions)
                results += got
                background.add(bg)
                log(f"{key}: {len(questions)} questions, {time.perf_counter() - began:.0f} s")
    return results, background


def main(argv: list[str] | None = None) -> int:
    parser = arguments((__doc__ or "").split("\n\n")[0])
    parser.add_argument("--regions", nargs="+", choices=sorted(REGIONS), default=list(REGIONS))
    parser.add_argument("--corpus", help="the folder holding the texts")
    parser.add_argument("--embedder", choices=sorted(EMBEDDERS), default="embedded")
    parser.add_argument("--context", type=int, default=CONTEXT_TOKENS)
    args = parser.parse_args(argv)
    try:
        folder = find_corpus(args.corpus)
    except CorpusMissing as exc:
        log(f"Real-text recall skipped: {exc}")
        return 0
    sets = {key: load(folder, key) for key in args.regions}  # checked once
    clock = Clock(COMMAND)
    results, background = asyncio.run(_play(folder, sets, args.embedder, args.context))
    run = Run(
        results=results,
        embedder=args.embedder,
        regions=list(args.regions),
        clock=clock.stop(),
        background=background,
        context=args.context,
    )
    publish(markdown(run), args.write, SECTION, TITLE)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
