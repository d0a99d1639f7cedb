"""World state on generated stories: does the state the rules derive match the timeline?

Generates ``STORIES`` stories per seed (``generator``), plays each through the real
pipeline (``play``), scores the state after every turn (``measure``) and writes the section
(``report``). The tune seed's figures and the held-out seeds' are reported apart; the
split is fixed here, before any tuning. Each story is played twice: as written (things
also named by short forms) and, for the diagnosis, the same story with one name a thing.
Every seed is also written in the fresh wording (``wording.FRESH``, a second set of
phrasings, tuned on since its first figures were reported: the tune seed's stories in it
are read to tune, the held-out seeds' are not), and the held-out seeds a fourth way, in
the unseen wording (``wording_unseen.UNSEEN``: written before any tuning on the fresh set,
never tuned on), as written only, each reported apart.

    .venv/bin/python -m benchmarks.state.run [--write docs/benchmarks.md] [--quick]
        [--tune-only] [--tune-seed S] [--seeds A B] [--misses tune-misses.json]

``--quick``: one short story on the tune seed only (a smoke run). ``--tune-only``: the
tune seed's stories only, in both wordings tuned on (for tuning; nothing held out is
played). ``--misses``: every turn of the tune seed where the state and the truth differ,
as JSON, by variant (the held-out seeds' misses are never written: they are not for
tuning). Progress goes to stderr.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
import time
from pathlib import Path

from benchmarks.kit.report import Clock, arguments, publish
from benchmarks.kit.runtime import EMBEDDERS, player
from benchmarks.state.generator import StateStory, generate
from benchmarks.state.measure import Score
from benchmarks.state.play import play
from benchmarks.state.report import Run, markdown

from talekeeper_testkit.double import ModelDouble

SECTION = "world-state"
TITLE = "World state"
COMMAND = ".venv/bin/python -m benchmarks.state.run --write docs/benchmarks.md"
TUNE_SEED = 7
HELD_OUT = (31, 58)
# Stories of 50 turns, each played twice: sixteen on the tune seed (three, then eight,
# showed too few of the ways a state goes wrong to tune on), six on each held-out seed;
# 2,800 turns in all, about five minutes on two cores (the double embeds, the memory
# worker runs meanwhile). The fresh wording adds the held-out seeds' stories once more,
# as written only: 600 turns, about a minute.
TUNE_STORIES = 16
STORIES = 6
TURNS = 50
QUICK_TURNS = 12


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


VARIANTS = {"written": True, "one name": False}  # the variant's name -> short forms
FRESH = "fresh wording"  # every seed in the fresh wording, as written
UNSEEN = "unseen wording"  # the held-out seeds in the unseen wording, as written
TUNED_ON = ("written", "one name", FRESH)  # the variants whose tune-seed misses are read


def story_set(
    seed: int,
    stories: int = STORIES,
    turns: int = TURNS,
    short_forms: bool = True,
    wording: str = "tuned",
) -> list[StateStory]:
    return [
        generate(
            seed * 100 + i,
            turns,
            key=f"{seed}-{i + 1}",
            short_forms=short_forms,
            wording=wording,
        )
        for i in range(stories)
    ]


def wordings(stories: list[StateStory]) -> int:
    return len({u for s in stories for t in s.turns for u in t.wordings})


Sets = dict[tuple[str, int], list[StateStory]]  # (variant, seed) -> its stories


async def play_all(sets: Sets) -> dict[tuple[str, int], Score]:
    scores: dict[tuple[str, int], Score] = {}
    with ModelDouble() as double:
        async with player(EMBEDDERS["double"], double) as p:
            for (variant, seed), stories in sets.items():
                scores[variant, seed] = score = Score()
                for story in stories:
                    began = time.perf_counter()
                    got = await play(p, story)
                    score.merge(got)
                    log(
                        f"{variant}, seed {seed} {story.key}: {got.turns} turns, "
                        f"{len(got.misses)} misses, {time.perf_counter() - began:.1f} s"
                    )
    return scores


def build_sets(tune_seed: int, held: list[int], quick: bool) -> Sets:
    """Every set the run plays, by (variant, seed)."""
    per_seed, turns = (1, QUICK_TURNS) if quick else (STORIES, TURNS)
    tuned = 1 if quick else TUNE_STORIES
    sets: Sets = {}
    for seed in [tune_seed, *held]:
        count = tuned if seed == tune_seed else per_seed
        for variant, short in VARIANTS.items():
            sets[variant, seed] = story_set(seed, count, turns, short)
        sets[FRESH, seed] = story_set(seed, count, turns, wording="fresh")
    for seed in held:
        sets[UNSEEN, seed] = story_set(seed, per_seed, turns, wording="unseen")
    return sets


def merged(scores: dict[tuple[str, int], Score], variant: str, seeds: list[int]) -> Score:
    score = Score()
    for seed in seeds:
        score.merge(scores[variant, seed])
    return score


def main(argv: list[str] | None = None) -> int:
    parser = arguments((__doc__ or "").split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="one short story, tune seed only")
    parser.add_argument("--tune-only", action="store_true", help="the tune seed's sets only")
    parser.add_argument("--tune-seed", type=int, default=TUNE_SEED)
    parser.add_argument("--seeds", type=int, nargs="*", default=list(HELD_OUT), help="held out")
    parser.add_argument("--misses", type=Path, help="write the tune seed's misses here (JSON)")
    args = parser.parse_args(argv)
    alone = args.quick or args.tune_only
    held = [] if alone else [s for s in args.seeds if s != args.tune_seed]
    sets = build_sets(args.tune_seed, held, args.quick)
    log(f"{sum(len(s) for s in sets.values())} stories, seeds {[args.tune_seed, *held]}")
    clock = Clock(COMMAND)
    scores = asyncio.run(play_all(sets))
    tune = {v: scores[v, args.tune_seed] for v in (*VARIANTS, FRESH)}
    held_out = {v: merged(scores, v, held) for v in (*VARIANTS, FRESH, UNSEEN)}
    written = [s for seed in [args.tune_seed, *held] for s in sets["written", seed]]
    run = Run(
        tune_seed=args.tune_seed,
        held_out=held,
        stories_per_seed=len(sets["written", held[0]]) if held else 0,
        tune_stories=len(sets["written", args.tune_seed]),
        turns_per_story=TURNS if not args.quick else QUICK_TURNS,
        wordings=wordings(written),
        tune=tune["written"],
        held=held_out["written"],
        clock=clock.stop(),
        one_name=(tune["one name"], held_out["one name"]),
        fresh=(tune[FRESH], held_out[FRESH]),
        unseen=held_out[UNSEEN],
        unseen_wordings=wordings([s for seed in held for s in sets[UNSEEN, seed]]),
    )
    publish(markdown(run), None if alone else args.write, SECTION, TITLE)
    if args.misses:  # the tune seed's only: what is read to tune on must stay the tune seed's
        misses = {v: [dataclasses.asdict(m) for m in tune[v].misses] for v in TUNED_ON}
        args.misses.write_text(json.dumps(misses, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
