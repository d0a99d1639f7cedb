"""The prompt-prefix benchmark: what each turn of a long game makes the narrator evaluate,
and how long the narrator takes to answer.

Plays the generated game (``world``) for ``--turns`` turns with each narrator, at each
context size, under each context layout, in a moving and a still world, through the real
engine (``game``), then reports over the steady-state turns (those after the turn on which
the history first overflowed: from then on every turn drops or cuts old actions; in a game
too short to overflow, every turn after the first) the share of the prompt the narrator
had to evaluate after the prefix its cache kept (``prompt_evaluated / prompt``, median and
p95), the same in tokens, the time to the first token (Insights ``timings.first_token_ms``)
and the turn's wall time, and why the prefix broke: the first section of the context whose
text differs from the previous turn's (``layout.first_break``), with how often each section
changed or moved.

    .venv/bin/python -m benchmarks.prefix.run [--write docs/benchmarks.md] [--full | --quick]
        [--turns 60] [--narrator scripted embedded server] [--contexts 2048 4096]
        [--layouts classic cache] [--worlds moving still] [--library]
        [--embedder embedded|double] [--seed 19] [--tokenizers smollm2]
        [--no-cards] [--no-note] [--json PATH]

By default (the run ``make bench`` makes) the ``scripted`` narrator (the kit's double,
instant: the figures are the product's counts alone) plays 60 turns at 2,048 and 4,096
tokens under ``classic`` and ``cache``, in a moving world and a still one, memories and
cards in play, no knowledge library: eight games, about three minutes on two cores.
``--narrator``: ``embedded`` (the app's SmolLM2 in process), ``server`` (the same model
behind ``llama_cpp.server``), ``narrators``. ``--full``: every narrator in the moving
world, the instant one also with the library attached (over an hour on two cores).
``--quick``: 20 turns at 2,048 under ``cache``, moving world, for a quick look.
``--worlds``: ``moving`` (the story moves the player, the things carried, the people and
the clock, so the Current state section changes now and then) and ``still`` (the same
story without those sentences: the world's rules read nothing the state shows).
``--tokenizers``: other tokenizers the same prompts are also counted with (the embedded
narrator's, ``smollm2``, by default; left out with a note when it cannot be loaded).
``--write``: replaces the ``prefix`` section of that Markdown file and draws its plot next
to it (``report``).
Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.kit.report import Clock, arguments, publish
from benchmarks.kit.runtime import EMBEDDERS
from benchmarks.library.report import percentile
from benchmarks.prefix import narrators, report
from benchmarks.prefix.game import SEED, Options, TurnRecord, make_counter, play

TURNS = 60
CONTEXTS = (2048, 4096)
LAYOUTS = ("classic", "cache")
WORLDS = ("moving", "still")
QUICK_TURNS = 20
QUICK_CONTEXT = 2048
TOKENIZERS = ("smollm2",)
COMMAND = ".venv/bin/python -m benchmarks.prefix.run"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class Figures:
    """Median, p95 and mean of one quantity over the steady-state turns."""

    median: float
    p95: float
    mean: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Figures:
        if not values:
            return cls(0.0, 0.0, 0.0)
        return cls(statistics.median(values), percentile(values, 95), statistics.fmean(values))


@dataclass
class Cause:
    turns: int
    share: float  # of the steady-state turns
    evaluated_median: float  # tokens evaluated on those turns


@dataclass
class Summary:
    layout: str
    context_tokens: int
    turns: int
    first_overflow: int | None  # the turn on which the history first dropped or cut
    steady: int  # turns measured: after it (after the first turn where it never overflowed)
    share: Figures  # prompt_evaluated / prompt
    evaluated: Figures  # tokens
    prompt: Figures  # tokens
    causes: dict[str, Cause]  # the first section that differed, by name
    changed: dict[str, float]  # share of steady turns on which each section's text changed
    moved: dict[str, float]  # ... on which it kept its text but moved
    held: dict[str, float]  # share of steady turns whose context held each kind of section
    history_kept: float  # median actions in the history
    tokens: dict[str, float]  # median tokens of each section (0 on a turn without it)
    classifier_agrees: int  # steady turns whose cause names where the prompt text differs
    counted_alike: int  # steady turns whose Insights count is the one made here
    others: dict[str, dict[str, Figures]] = field(default_factory=dict)  # other tokenizers
    seconds: float = 0.0
    narrator: str = "scripted"
    first_token_ms: Figures = field(default_factory=lambda: Figures.of([]))
    turn_ms: Figures = field(default_factory=lambda: Figures.of([]))
    model_evaluated: Figures | None = None  # llama.cpp's own count, where a model ran
    library: bool = False  # a knowledge library was attached
    world: str = "moving"  # one of ``WORLDS``

    def public(self) -> dict[str, Any]:
        return asdict(self)


def steady_turns(records: list[TurnRecord]) -> tuple[int | None, list[TurnRecord]]:
    """The turn on which the history first overflowed, and the turns after it."""
    first = next((r.turn for r in records if r.overflowed), None)
    return first, [] if first is None else [r for r in records if r.turn > first]


def measured_turns(records: list[TurnRecord]) -> tuple[int | None, list[TurnRecord]]:
    """The steady-state turns, or every turn after the first in a game whose history never
    overflowed, or did only on its last turn (too short a game for a steady state: a
    sample, not a figure)."""
    first, steady = steady_turns(records)
    return first, steady if first is not None and steady else records[1:]


def summarize(records: list[TurnRecord], options: Options, seconds: float = 0.0) -> Summary:
    first, steady = measured_turns(records)
    n = len(steady) or 1
    counts = Counter(r.cause for r in steady)
    causes = {
        name: Cause(
            count,
            count / n,
            statistics.median([r.evaluated for r in steady if r.cause == name]),
        )
        for name, count in counts.most_common()
    }
    changed = Counter(name for r in steady for name in r.changed)
    moved = Counter(name for r in steady for name in r.moved)
    held = {
        "current_state": sum(bool(r.state) for r in steady) / n,
        "memories": sum(r.memories > 0 for r in steady) / n,
        "story_cards": sum(r.cards > 0 for r in steady) / n,
        "knowledge": sum(r.passages > 0 for r in steady) / n,
        "story_summary": sum(r.summary for r in steady) / n,
    }
    others: dict[str, dict[str, Figures]] = {}
    for name in records[0].others if records else {}:
        counts_of = [r.others[name] for r in steady]
        others[name] = {
            "share": Figures.of([c.evaluated / c.prompt for c in counts_of if c.prompt]),
            "evaluated": Figures.of([c.evaluated for c in counts_of]),
        }
    model = [r.model_evaluated for r in steady if r.model_evaluated is not None]
    return Summary(
        layout=records[0].layout if records else "",
        context_tokens=options.context_tokens,
        turns=len(records),
        first_overflow=first,
        steady=len(steady),
        share=Figures.of([r.share for r in steady]),
        evaluated=Figures.of([r.evaluated for r in steady]),
        prompt=Figures.of([r.prompt for r in steady]),
        causes=causes,
        changed={name: count / n for name, count in changed.most_common()},
        moved={name: count / n for name, count in moved.most_common()},
        held=held,
        history_kept=statistics.median([r.history_kept for r in steady]) if steady else 0.0,
        tokens={
            name: statistics.median([r.tokens.get(name, 0) for r in steady])
            for name in dict.fromkeys(n for r in steady for n in r.tokens)
        },
        classifier_agrees=sum(r.agrees for r in steady),
        counted_alike=sum(r.counted_alike for r in steady),
        others=others,
        seconds=seconds,
        narrator=options.narrator,
        first_token_ms=Figures.of(
            [r.first_token_ms for r in steady if r.first_token_ms is not None]
        ),
        turn_ms=Figures.of([r.turn_ms for r in steady]),
        library=options.knowledge,
        model_evaluated=Figures.of(model) if model else None,
        world="moving" if options.moving else "still",
    )


# -- running ---------------------------------------------------------------------------------


def available_tokenizers(names: Sequence[str]) -> tuple[list[str], list[str]]:
    """The tokenizers that load, and a note for each that does not."""
    ok, notes = [], []
    for name in names:
        try:
            make_counter(name)
        except Exception as exc:  # noqa: BLE001 -- optional: say why and go on without it
            notes.append(f"{name} left out: {exc}")
        else:
            ok.append(name)
    return ok, notes


def _name(o: Options) -> str:
    world = "moving" if o.moving else "still"
    return f"{o.narrator} {o.layout or 'default'} {o.context_tokens} {world}"


async def run_all(options: list[Options]) -> tuple[list[Summary], list[list[TurnRecord]]]:
    summaries, games = [], []
    for o in options:
        started = time.perf_counter()

        def progress(r: TurnRecord, o: Options = o) -> None:
            if r.turn % 10 == 0 or r.turn == o.turns:
                ttft = f", first token {r.first_token_ms:,.0f} ms" if r.first_token_ms else ""
                log(
                    f"[{_name(o)}] turn {r.turn}/{o.turns}: {r.evaluated}/{r.prompt} evaluated "
                    f"({r.cause}){ttft}, turn {r.turn_ms:,.0f} ms"
                )

        records = await play(o, progress)
        seconds = time.perf_counter() - started
        log(f"[{_name(o)}] {seconds:.0f} s")
        summaries.append(summarize(records, o, seconds))
        games.append(records)
    return summaries, games


def machine() -> dict[str, Any]:
    """What the run was measured on, beyond the kit's line: cores usable, the CPU, the
    llama.cpp build."""
    return {
        "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu": narrators.cpu_model(),
        "llama": narrators.llama_build(),
    }


def plan(args: argparse.Namespace) -> list[Options]:
    """The games the command line asks for, in the order they are played."""
    turns, contexts, layouts, worlds = args.turns, args.contexts, args.layouts, args.worlds
    chosen: list[str] = args.narrator
    if args.quick:
        turns, contexts, layouts, worlds = QUICK_TURNS, [QUICK_CONTEXT], ["cache"], ["moving"]
    if args.full:
        turns, contexts, layouts, worlds = TURNS, list(CONTEXTS), list(LAYOUTS), ["moving"]
        chosen = list(narrators.NARRATORS)
    libraries = {n: [args.library] for n in chosen}
    if args.full:
        # The real narrators play the done-when's game (memories and cards, no library); the
        # instant one plays it with a library attached too, to show what a library costs.
        libraries = {n: [False] if n in narrators.REAL else [False, True] for n in chosen}
    return [
        Options(
            context_tokens=context,
            turns=turns,
            seed=args.seed,
            embedder=args.embedder,
            cards=not args.no_cards,
            knowledge=library,
            authors_note=not args.no_note,
            tokenizers=tuple(args.counted),
            layout=layout,
            narrator=narrator,
            moving=world == "moving",
        )
        for narrator in chosen
        for world in worlds
        for library in libraries[narrator]
        for context in contexts
        for layout in layouts
    ]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = arguments((__doc__ or "").split("\n\n")[0])
    runs = parser.add_mutually_exclusive_group()
    runs.add_argument("--full", action="store_true", help="the real narrators too (over an hour)")
    runs.add_argument("--quick", action="store_true", help="20 turns at 2,048 tokens, cache")
    parser.add_argument("--turns", type=int, default=TURNS)
    parser.add_argument("--narrator", nargs="+", choices=narrators.NARRATORS, default=["scripted"])
    parser.add_argument("--contexts", type=int, nargs="+", default=list(CONTEXTS))
    parser.add_argument("--layouts", nargs="+", choices=LAYOUTS, default=list(LAYOUTS))
    parser.add_argument("--worlds", nargs="+", choices=WORLDS, default=list(WORLDS))
    parser.add_argument("--library", action="store_true", help="attach the setting's bible")
    parser.add_argument("--embedder", choices=sorted(EMBEDDERS), default="embedded")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--tokenizers", nargs="*", default=list(TOKENIZERS))
    parser.add_argument("--no-cards", action="store_true")
    parser.add_argument("--no-note", action="store_true", help="no Author's Note")
    parser.add_argument("--json", type=Path, help="write the summaries and every turn here")
    args = parser.parse_args(argv)
    args.counted, notes = available_tokenizers(args.tokenizers)
    for note in notes:
        log(note)
    options = plan(args)
    clock = Clock(shlex.join([*COMMAND.split(), *argv]))
    summaries, games = asyncio.run(run_all(options))
    clock.stop()
    run = {
        "turns": options[0].turns if options else 0,
        "contexts": sorted({o.context_tokens for o in options}),
        "narrators": list(dict.fromkeys(o.narrator for o in options)),
        "worlds": list(dict.fromkeys("moving" if o.moving else "still" for o in options)),
        "seed": args.seed,
        "embedder": EMBEDDERS[args.embedder].label,
        "tokenizers": args.counted,
        "notes": notes,
        "cards": not args.no_cards,
        "knowledge": sorted({o.knowledge for o in options}),
        "authors_note": not args.no_note,
        "reply_cap": narrators.REPLY_CAP,
        "footer": clock.footer(),
        **machine(),
        **clock.as_dict(),
    }
    where = ""
    if args.write:
        plot = args.write.parent / "benchmarks" / report.PLOT
        if report.draw(summaries, games, plot):
            run["plot"] = f"benchmarks/{report.PLOT}"
            where = f" and {plot}"
    publish(report.markdown(summaries, run), args.write, report.SECTION, report.TITLE, where)
    if args.json:
        data = {
            "run": run,
            "results": [
                {"summary": s.public(), "turns": [r.public() for r in records]}
                for s, records in zip(summaries, games, strict=True)
            ],
        }
        args.json.write_text(json.dumps(data, indent=1), encoding="utf-8")
        log(f"Written to {args.json}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
