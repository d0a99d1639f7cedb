"""The prompt-prefix harness: what each turn of a long game makes the narrator evaluate.

Plays the generated game (``world``) for ``--turns`` turns at each context size through the
real engine (``game``), then reports, over the steady-state turns (those after the turn on
which the history first overflowed: from then on every turn drops or cuts old actions),
the share of the prompt the narrator had to evaluate after the prefix its cache kept
(``prompt_evaluated / prompt``, median and p95), the same in tokens, and why the prefix
broke: the first section of the context whose text differs from the previous turn's
(``layout.first_break``), with how often each section changed or moved at all.

    .venv/bin/python -m benchmarks.prefix.run [--short] [--turns 60] [--contexts 2048 4096]
        [--layouts classic cache] [--embedder minilm|hashed] [--seed 19]
        [--tokenizers smollm2] [--no-cards] [--no-knowledge] [--no-note] [--json PATH]

``--short``: 20 turns at one context size (2,048), for a quick look. ``--layouts``: the
``context_layout`` setting to play under, each in turn (where the product has that
setting; by default, the product's default layout). ``--tokenizers``: other tokenizers the
same prompts are also counted with (the embedded narrator's, ``smollm2``, by default; left
out with a note when it cannot be loaded). Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.library.metrics import percentile
from benchmarks.prefix import layout
from benchmarks.prefix.game import EMBEDDERS, Options, TurnRecord, make_counter, play

from talekeeper.core.reports import machine_description

TURNS = 60
CONTEXTS = (2048, 4096)
SHORT_TURNS = 20
SHORT_CONTEXT = 2048
SEED = 19
TOKENIZERS = ("smollm2",)


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
    steady: int  # turns after it
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
    others: dict[str, dict[str, Figures]] = field(default_factory=dict)  # other tokenizers
    seconds: float = 0.0

    def public(self) -> dict[str, Any]:
        return asdict(self)


def steady_turns(records: list[TurnRecord]) -> tuple[int | None, list[TurnRecord]]:
    """The turn on which the history first overflowed, and the turns after it."""
    first = next((r.turn for r in records if r.overflowed), None)
    return first, [] if first is None else [r for r in records if r.turn > first]


def summarize(records: list[TurnRecord], context_tokens: int, seconds: float) -> Summary:
    first, steady = steady_turns(records)
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
        "memories": sum(r.memories > 0 for r in steady) / n,
        "story_cards": sum(r.cards > 0 for r in steady) / n,
        "knowledge": sum(r.passages > 0 for r in steady) / n,
        "story_summary": sum(r.summary for r in steady) / n,
    }
    others: dict[str, dict[str, Figures]] = {}
    for name in records[0].others if records else {}:
        figures = [r.others[name] for r in steady]
        others[name] = {
            "share": Figures.of([f["evaluated"] / f["prompt"] for f in figures if f["prompt"]]),
            "evaluated": Figures.of([f["evaluated"] for f in figures]),
        }
    return Summary(
        layout=records[0].layout if records else "",
        context_tokens=context_tokens,
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
        others=others,
        seconds=seconds,
    )


# -- the report ------------------------------------------------------------------------------


def _pct(value: float) -> str:
    return f"{100 * value:.0f}%"


def _label(s: Summary) -> str:
    return f"{s.layout} {s.context_tokens:,}"


def markdown(summaries: list[Summary], run: dict[str, Any]) -> str:
    lines = [
        f"{run['turns']} turns at each context size, seed {run['seed']}, embedder "
        f"{run['embedder']}, prompts counted with cl100k"
        + (f" (and {', '.join(run['tokenizers'])})" if run["tokenizers"] else "")
        + f"; {run['machine']}, {run['seconds']:.0f} s in all.",
        "Figures over the steady-state turns: those after the turn on which the history "
        "first overflowed.",
        "",
        "| layout, context | steady turns (from) | evaluated/prompt median | p95 "
        "| evaluated median | p95 | mean | prompt median | history kept |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in summaries:
        lines.append(
            f"| {_label(s)} | {s.steady} ({s.first_overflow}) | {_pct(s.share.median)} "
            f"| {_pct(s.share.p95)} | {s.evaluated.median:,.0f} | {s.evaluated.p95:,.0f} "
            f"| {s.evaluated.mean:,.0f} | {s.prompt.median:,.0f} | {s.history_kept:.0f} |"
        )
    for name in run["tokenizers"]:
        lines += [
            "",
            f"The same prompts counted with {name}:",
            "",
            "| layout, context | evaluated/prompt median | p95 | evaluated median | p95 |",
            "|---|---:|---:|---:|---:|",
        ]
        for s in summaries:
            o = s.others.get(name)
            if o:
                lines.append(
                    f"| {_label(s)} | {_pct(o['share'].median)} | {_pct(o['share'].p95)} "
                    f"| {o['evaluated'].median:,.0f} | {o['evaluated'].p95:,.0f} |"
                )
    causes = [c for c in layout.CAUSES if any(c in s.causes for s in summaries)]
    lines += [
        "",
        "Why the prefix broke: the first section that differs from the previous turn's "
        "(turns, share of the steady turns, median tokens evaluated on them):",
        "",
        "| first difference | " + " | ".join(_label(s) for s in summaries) + " |",
        "|---|" + "---:|" * len(summaries),
    ]
    for cause in causes:
        cells = []
        for s in summaries:
            c = s.causes.get(cause)
            cells.append(f"{c.turns} ({_pct(c.share)}, {c.evaluated_median:,.0f})" if c else "–")
        lines.append(f"| {cause} | " + " | ".join(cells) + " |")
    names = [
        n
        for n in (*layout.SECTIONS, *layout.HISTORY_CAUSES)
        if any(n in s.changed or n in s.moved for s in summaries)
    ]
    lines += [
        "",
        "How often each part changed at all (its text; in brackets, same text moved "
        "elsewhere among the actions):",
        "",
        "| part | " + " | ".join(_label(s) for s in summaries) + " |",
        "|---|" + "---:|" * len(summaries),
    ]
    for name in names:
        cells = [
            _pct(s.changed.get(name, 0.0))
            + (f" ({_pct(s.moved[name])})" if s.moved.get(name) else "")
            for s in summaries
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    parts = [*layout.SECTIONS, layout.HISTORY, layout.ACTION]
    lines += [
        "",
        "Median tokens of each section (as the budget counts them):",
        "",
        "| layout, context | " + " | ".join(parts) + " |",
        "|---|" + "---:|" * len(parts),
        *(
            f"| {_label(s)} | " + " | ".join(f"{s.tokens.get(n, 0):,.0f}" for n in parts) + " |"
            for s in summaries
        ),
    ]
    lines += [
        "",
        "Steady turns whose context held: "
        + "; ".join(
            f"{_label(s)}: " + ", ".join(f"{k} {_pct(v)}" for k, v in s.held.items())
            for s in summaries
        )
        + ".",
        "The first differing character of the prompt text lies in the section named on "
        + "; ".join(f"{s.classifier_agrees}/{s.steady} ({_label(s)})" for s in summaries)
        + " steady turns.",
    ]
    return "\n".join(lines)


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


async def run_all(options: list[Options]) -> tuple[list[Summary], list[list[TurnRecord]]]:
    summaries, games = [], []
    for o in options:
        started = time.perf_counter()

        def progress(r: TurnRecord, o: Options = o) -> None:
            if r.turn % 10 == 0 or r.turn == o.turns:
                log(
                    f"[{o.layout or 'default'} {o.context_tokens}] turn {r.turn}/{o.turns}: "
                    f"{r.evaluated}/{r.prompt} evaluated ({r.cause})"
                )

        records = await play(o, progress)
        summaries.append(summarize(records, o.context_tokens, time.perf_counter() - started))
        games.append(records)
    return summaries, games


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--short", action="store_true", help="20 turns at 2,048 tokens")
    parser.add_argument("--turns", type=int, default=TURNS)
    parser.add_argument("--contexts", type=int, nargs="+", default=list(CONTEXTS))
    parser.add_argument("--layouts", nargs="+", default=[None])
    parser.add_argument("--embedder", choices=EMBEDDERS, default="minilm")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--tokenizers", nargs="*", default=list(TOKENIZERS))
    parser.add_argument("--no-cards", action="store_true")
    parser.add_argument("--no-knowledge", action="store_true")
    parser.add_argument("--no-note", action="store_true", help="no Author's Note")
    parser.add_argument("--json", type=Path, help="write the summaries and every turn here")
    args = parser.parse_args(argv)
    turns, contexts = (SHORT_TURNS, [SHORT_CONTEXT]) if args.short else (args.turns, args.contexts)
    tokenizers, notes = available_tokenizers(args.tokenizers)
    for note in notes:
        log(note)
    options = [
        Options(
            context_tokens=context,
            turns=turns,
            seed=args.seed,
            embedder=args.embedder,
            cards=not args.no_cards,
            knowledge=not args.no_knowledge,
            authors_note=not args.no_note,
            tokenizers=tuple(tokenizers),
            layout=chosen,
        )
        for chosen in args.layouts
        for context in contexts
    ]
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    summaries, games = asyncio.run(run_all(options))
    run = {
        "turns": turns,
        "contexts": contexts,
        "seed": args.seed,
        "embedder": args.embedder,
        "tokenizers": tokenizers,
        "notes": notes,
        "cards": not args.no_cards,
        "knowledge": not args.no_knowledge,
        "authors_note": not args.no_note,
        "machine": machine_description(),
        "load": (load_before, os.getloadavg()[0]),
        "seconds": time.perf_counter() - started,
    }
    print(markdown(summaries, run))
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
