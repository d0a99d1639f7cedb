"""The dense benchmark's section of ``docs/benchmarks.md``: tables from probe results.

Every figure is computed here from ``ProbeResult`` and ``Background`` records,
never typed in. Rates are over the probes that need a statement (the probes
about facts never stated are reported apart), and the tune seed's figures are
never pooled with the held-out seeds'.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.kit.report import Clock
from benchmarks.kit.runtime import CONTEXT_TOKENS, EMBEDDERS
from benchmarks.recall.dense.baselines import BLOCK_SIZES, HYBRID_LEXICAL, RANKERS
from benchmarks.recall.dense.generator import MIN_GAP, bucket, bucket_edges
from benchmarks.recall.dense.play import TOP_KS, Background, ProbeResult, Ranked

PROBE_KINDS = ("direct", "paraphrase", "addressed", "when", "multihop")
BASELINES = tuple(f"{r}/{size}" for size in BLOCK_SIZES for r in RANKERS)
LABELS = {"cosine": "cosine", "bm25": "BM25", "hybrid": "hybrid"}


@dataclass
class Run:
    results: list[ProbeResult]
    embedders: list[str]
    tune_seed: int
    held_out: list[int]
    window: int
    adventures: list[dict[str, Any]]  # key, seed, style, actions, statements, probes
    seconds: dict[str, float]  # per embedder
    clock: Clock
    background: dict[str, Background] = field(default_factory=dict)  # per embedder


def share(flags: Sequence[bool]) -> str:
    return f"{sum(flags) / len(flags):.2f}" if flags else "–"


def median(values: Sequence[float]) -> str:
    return f"{statistics.median(values):.0f}" if values else "–"


def answered(results: Sequence[ProbeResult]) -> list[ProbeResult]:
    return [r for r in results if r.statements]


def pick(run: Run, embedder: str, seeds: Sequence[int]) -> list[ProbeResult]:
    return [r for r in run.results if r.embedder == embedder and r.seed in seeds]


def row(*cells: str) -> str:
    return "| " + " | ".join(cells) + " |"


def block_rows(baselines: Sequence[dict[str, Ranked]], blanks: int) -> list[str]:
    """A row per raw-block baseline: hits @5 and @10, ``blanks`` empty cells, tokens."""
    return [
        row(
            f"raw blocks of {name.split('/')[1]}, {LABELS[name.split('/')[0]]}",
            *(share([b[name].hits[k] for b in baselines]) for k in TOP_KS),
            *[""] * blanks,
            *(median([b[name].tokens[k] for b in baselines]) for k in TOP_KS),
        )
        for name in BASELINES
    ]


def method_table(rs: Sequence[ProbeResult]) -> list[str]:
    rs = answered(rs)
    return [
        f"| method ({len(rs)} probes) | fact in prompt @5 | @10 | memory cover @5 "
        "| injected tokens @5 (median) | @10 |",
        "|---|---:|---:|---:|---:|---:|",
        row(
            "**Talekeeper** (memories)",
            share([r.product[5].fact for r in rs]),
            share([r.product[10].fact for r in rs]),
            share([r.product[5].cover for r in rs]),
            median([r.product[5].tokens for r in rs]),
            median([r.product[10].tokens for r in rs]),
        ),
        *block_rows([r.baselines for r in rs], 1),
    ]


def breakdown(
    rs: Sequence[ProbeResult], title: str, labels: Sequence[str], key: Callable[[ProbeResult], str]
) -> list[str]:
    """Fact in prompt @5 (and the product's @10) per group of probes."""
    lines = [
        f"| {title} | probes | Talekeeper @5 | @10 |" + "".join(f" {n} @5 |" for n in BASELINES),
        "|---|---:|---:|---:|" + "---:|" * len(BASELINES),
    ]
    for label in labels:
        group = [r for r in answered(rs) if key(r) == label]
        if group:
            lines.append(
                row(
                    label,
                    str(len(group)),
                    share([r.product[5].fact for r in group]),
                    share([r.product[10].fact for r in group]),
                    *(share([r.baselines[n].hits[5] for r in group]) for n in BASELINES),
                )
            )
    return lines


def diagnostics(rs: Sequence[ProbeResult]) -> list[str]:
    got = answered(rs)
    never = [r for r in rs if not r.statements]
    keys: Counter[str] = Counter()
    for r in got:
        keys.update(r.product[5].keys)
    won = ", ".join(f"{k} {n}" for k, n in sorted(keys.items())) or "not reported"
    hits = [r.product[5].top_score for r in got if r.product[5].fact]
    tops = [r.product[5].top_score for r in never]
    return [
        f"- Talekeeper @5: each statement within one line of the section: "
        f"{share([r.product[5].one_line for r in got])} (fact in prompt: "
        f"{share([r.product[5].fact for r in got])}); also in the Story Summary: "
        f"{share([r.product[5].summary for r in got])}; in the raw history (must be 0): "
        f"{sum(r.product[5].history or r.product[10].history for r in got)}.",
        f"- Which key won the injected memories @5 (these probes, where Insights says): {won}; "
        f"memories injected @5: median {median([r.product[5].injected for r in got])}.",
        f"- Never-stated facts ({plural(len(never), 'probe')}): the top memory's score, median "
        f"{_f(tops)}, against {_f(hits)} where the fact was found.",
    ]


def _f(values: Sequence[float | None]) -> str:
    kept = [v for v in values if v is not None]
    return f"{statistics.median(kept):.2f}" if kept else "–"


def background(run: Run, embedder: str) -> str:
    bg = run.background.get(embedder)
    if bg is None or not bg.memories:
        return ""
    return (
        f"Background work ({embedder}): {bg.seconds:.0f} s over {bg.turns} turns "
        f"({1000 * bg.seconds / max(bg.turns, 1):.0f} ms a turn); {bg.memories} memories written, "
        f"and the embedding calls after the turns took {bg.embed_ms / bg.memories:.0f} ms and "
        f"{bg.embed_tokens / bg.memories:.0f} tokens per memory ({bg.embed_calls} calls in all)."
    )


def verdict(run: Run, embedder: str) -> list[str]:
    out = []
    for label, seeds in (("tune", [run.tune_seed]), ("held out", run.held_out)):
        rs = answered(pick(run, embedder, seeds))
        if not rs:
            continue
        best = max(BASELINES, key=lambda n: sum(r.baselines[n].hits[5] for r in rs))
        out.append(
            f"- {label} ({plural(len(seeds), 'seed')}, {len(rs)} probes): Talekeeper puts the "
            f"stating sentence's answer in the prompt for {share([r.product[5].fact for r in rs])}"
            f" at top-5 ({share([r.product[10].fact for r in rs])} at top-10) with "
            f"{median([r.product[5].tokens for r in rs])} tokens (median); the best raw "
            f"baseline, {best}, {share([r.baselines[best].hits[5] for r in rs])} with "
            f"{median([r.baselines[best].tokens[5] for r in rs])} tokens."
        )
    return out


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def intro(run: Run) -> list[str]:
    seeds = [run.tune_seed, *run.held_out]
    advs = [a for a in run.adventures if a["seed"] in seeds]
    per_seed = len(advs) // max(len(seeds), 1)
    lengths = ", ".join(str(a["actions"]) for a in advs)
    seconds = ", ".join(f"{e} {s:.0f} s" for e, s in run.seconds.items())
    kept = [r.history_kept for r in run.results]
    held = ", ".join(map(str, run.held_out))
    seeds_line = (
        f"Seed {run.tune_seed} is the one the product may be tuned on; seeds {held} are held "
        "out, and their figures are reported apart."
        if held
        else f"Seed {run.tune_seed} only (a quick run: no held-out seed)."
    )
    return [
        f"{plural(len(advs), 'generated adventure')} ({per_seed} per seed, narrative and "
        f"dialogue; {lengths} actions; {sum(a['statements'] for a in advs):,} statements, "
        f"{sum(a['probes'] for a in advs)} probes) in which every action but a probe states "
        "facts: names, relatives, dates, places, possessions, plans and opinions, many of one "
        'kind about different people ("Tal\'s sister lives in Harrow", "Mira\'s cousin lives '
        'in Dunmere"). Each is played through the real pipeline (`TurnRunner` turns against '
        "the loopback model double, the memory worker to idle after every turn). A probe "
        f"asks, at least {run.window + 1} actions later, for a fact: in the statement's words "
        "(*direct*), in other words (*paraphrase*), opened by a companion's name "
        "(*addressed*), for a date (*when*), or through two statements at least "
        f"{MIN_GAP} actions apart (*multihop*); a few ask about facts never stated. " + seeds_line,
        "",
        "- **Fact in prompt**: the Memories section of a dry run (`TurnRunner.dry_run`, top-5 "
        "and top-10 memories) holds every answer word of every statement the probe needs "
        "(the words that identify the fact and occur together in no other action). "
        "**Memory cover**: the injected memories' source ranges cover every stating action. "
        "**Injected tokens**: the Memories section's tokens.",
        "- **Raw blocks**: the story the history does not hold, cut into blocks of 6 or 3 "
        "actions, ranked for the probe's text by the embedder's cosine, BM25, or a hybrid "
        f"(cosine + {HYBRID_LEXICAL:g} × BM25 / the probe's best BM25); a hit at k: an action "
        "of the first k blocks holds each statement's answer words; tokens: those k blocks'.",
        "",
        f"Context {CONTEXT_TOKENS:,} tokens: the raw history held {median(kept)} actions at a "
        f"probe (median; at most {max(kept, default=0)}); played in {seconds}. "
        + run.clock.footer(),
    ]


def section(run: Run, embedder: str, title: str, seeds: Sequence[int]) -> list[str]:
    rs = pick(run, embedder, seeds)
    if not rs:
        return []
    edges = bucket_edges(run.window)
    labels = [bucket(low, edges) for low in edges[:-1]]
    return [
        f"#### {title}",
        "",
        *method_table(rs),
        "",
        *breakdown(rs, "probe", PROBE_KINDS, lambda r: r.kind),
        "",
        *breakdown(
            rs,
            "distance (actions)",
            labels,
            lambda r: bucket(r.distance, edges) if r.distance is not None else "",
        ),
        "",
        *diagnostics(rs),
        "",
    ]


def markdown(run: Run) -> str:
    lines = intro(run) + [""]
    for embedder in run.embedders:
        lines += [f"### {EMBEDDERS[embedder].label}", "", *verdict(run, embedder), ""]
        lines += section(run, embedder, f"Tune seed {run.tune_seed}", [run.tune_seed])
        held = ", ".join(map(str, run.held_out))
        lines += section(run, embedder, f"Held-out seeds {held}", run.held_out)
        note = background(run, embedder)
        lines += [note, ""] if note else []
    return "\n".join(lines)
