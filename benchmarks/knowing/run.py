"""Who knows what, on generated scenes: leak rate and recall by witness mode.

Generates stories per seed (``generator``), plays each through the real engine and asks
every question as a dry run in ``off``, ``label`` and ``strict`` (``play``), reads each
prompt (``measure``) and writes the section (``report``). The tune seed's figures and the
held-out seeds' are reported apart; the split is fixed here, before any run, and the
targets are judged on the held-out seeds only.

    .venv/bin/python -m benchmarks.knowing.run [--write docs/benchmarks.md] [--quick]
        [--tune-seed S] [--seeds A B] [--embedder double|embedded] [--facts N]

``--quick``: one short story of a few facts on the tune seed only, nothing written (a
smoke run, and the test's). By default the model double embeds (hashed words: fast and
deterministic); ``--embedder embedded`` uses the app's MiniLM. Progress goes to stderr.
"""

from __future__ import annotations

import asyncio
import shlex
import sys
import time

from benchmarks.kit.report import Clock, arguments, publish
from benchmarks.kit.runtime import EMBEDDERS, player
from benchmarks.knowing.generator import KnowingStory, generate
from benchmarks.knowing.measure import Observation, counts, figures
from benchmarks.knowing.play import ask_all, play_story
from benchmarks.knowing.report import SECTION, TITLE, Run, SetResult, markdown

from talekeeper_testkit.double import ModelDouble

COMMAND = ".venv/bin/python -m benchmarks.knowing.run"
TUNE_SEED = 7
HELD_OUT = (31, 58)  # fixed before the first run; never tuned on
STORIES = 2  # per seed
FACTS = 16  # per story
CONTEXT_TOKENS = 4096  # the product's default context
QUICK_FACTS = 3
QUICK_AFTER_BLOCKS = 10


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def stories(seed: int, count: int, facts: int, quick: bool = False) -> list[KnowingStory]:
    if quick:
        return [generate(seed * 100, facts, after_blocks=QUICK_AFTER_BLOCKS)]
    return [generate(seed * 100 + i, facts) for i in range(count)]


async def play_all(
    sets: dict[int, list[KnowingStory]], embedder: str
) -> dict[int, list[Observation]]:
    out: dict[int, list[Observation]] = {}
    with ModelDouble() as double:
        async with player(EMBEDDERS[embedder], double, context_tokens=CONTEXT_TOKENS) as p:
            for seed, group in sets.items():
                out[seed] = []
                for story in group:
                    began = time.perf_counter()
                    adventure_id = await play_story(p, story)
                    seen = await ask_all(p, adventure_id, story)
                    out[seed] += seen
                    log(
                        f"seed {seed}, story {story.seed}: {len(story.turns)} turns, "
                        f"{len(story.questions)} questions, {time.perf_counter() - began:.1f} s"
                    )
    return out


def result(
    name: str,
    seeds: list[int],
    sets: dict[int, list[KnowingStory]],
    seen: dict[int, list[Observation]],
) -> SetResult:
    observations = [o for seed in seeds for o in seen[seed]]
    group = [s for seed in seeds for s in sets[seed]]
    facts = sum(len(s.facts) for s in group)
    told = sum(bool(f.told) for s in group for f in s.facts)
    # Each story's observations carry its own seed, so the story questions group apart.
    return SetResult(name, seeds, figures(observations), counts(observations, facts, told))


def measure(
    tune_seed: int, held: list[int], embedder: str, facts: int, quick: bool
) -> tuple[Run, dict[int, list[Observation]]]:
    count = 1 if quick else STORIES
    sets = {seed: stories(seed, count, facts, quick) for seed in [tune_seed, *held]}
    clock = Clock(COMMAND + (" --quick" if quick else " --write docs/benchmarks.md"))
    seen = asyncio.run(play_all(sets, embedder))
    run = Run(
        tune=result("tune", [tune_seed], sets, seen),
        held=result("held out", held, sets, seen) if held else None,
        stories_per_seed=count,
        facts_per_story=facts,
        embedder=EMBEDDERS[embedder].label,
        context_tokens=CONTEXT_TOKENS,
        clock=clock.stop(),
    )
    return run, seen


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = arguments((__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few facts, tune seed only")
    parser.add_argument("--tune-seed", type=int, default=TUNE_SEED)
    parser.add_argument("--seeds", type=int, nargs="*", default=list(HELD_OUT), help="held out")
    parser.add_argument("--embedder", choices=sorted(EMBEDDERS), default="double")
    parser.add_argument("--facts", type=int, help="facts per story")
    args = parser.parse_args(argv)
    held = [] if args.quick else [s for s in args.seeds if s != args.tune_seed]
    facts = args.facts or (QUICK_FACTS if args.quick else FACTS)
    log(f"seeds {[args.tune_seed, *held]}, {facts} facts a story ({shlex.join(argv)})")
    run, _ = measure(args.tune_seed, held, args.embedder, facts, args.quick)
    publish(markdown(run), args.write, SECTION, TITLE)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
