"""The real-text benchmark's section of ``docs/benchmarks.md``, computed from its results.

Every figure comes from ``RealResult`` records, never typed in. Tune and held-out
regions are never pooled; each method's token count (median at top 5) stands beside its
figure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from benchmarks.kit.report import Clock
from benchmarks.kit.runtime import CONTEXT_TOKENS, EMBEDDERS
from benchmarks.recall.dense.baselines import HYBRID_LEXICAL
from benchmarks.recall.dense.play import Background
from benchmarks.recall.dense.report import BASELINES, block_rows, median, row, share
from benchmarks.recall.real.play import SENTENCE_SHARE, RealResult
from benchmarks.recall.real.texts import GAP, REGIONS, Split

DISTANCES = ((50, 100), (100, 200), (200, 300), (300, 10_000))
FLAGS = ("paraphrased", "once_named", "two_passage", "say")


@dataclass
class Run:
    results: list[RealResult]
    embedder: str
    regions: list[str]
    clock: Clock
    background: Background = field(default_factory=Background)
    context: int = CONTEXT_TOKENS  # the context it played at


def method_table(rs: Sequence[RealResult]) -> list[str]:
    return [
        f"| method ({len(rs)} questions) | answer in prompt @5 | @10 | answering sentence "
        "@5 | memory cover @5 | tokens @5 (median) | @10 |",
        "|---|---:|---:|---:|---:|---:|---:|",
        row(
            "**Talekeeper** (memories and passages)",
            share([r.probe.product[5].fact for r in rs]),
            share([r.probe.product[10].fact for r in rs]),
            share([r.sentence for r in rs]),
            share([r.probe.product[5].cover for r in rs]),
            median([r.probe.product[5].tokens for r in rs]),
            median([r.probe.product[10].tokens for r in rs]),
        ),
        row(
            "raw sentences, hybrid, at Talekeeper's tokens",
            *(share([r.sentence_keys[k] for r in rs]) for k in (5, 10)),
            "",
            "",
            *(median([r.sentence_key_tokens[k] for r in rs]) for k in (5, 10)),
        ),
        *block_rows([r.probe.baselines for r in rs], 2),
    ]


def breakdown(
    rs: Sequence[RealResult],
    title: str,
    labels: Sequence[str],
    tags: Callable[[RealResult], set[str]],
) -> list[str]:
    """Answer in prompt @5 per group: the questions whose ``tags`` hold the label."""
    best = ("hybrid/6", "cosine/6", "bm25/6")
    lines = [
        f"| {title} | questions | Talekeeper @5 | sentence @5 | {' | '.join(best)} @5 |",
        "|---|---:|---:|---:|" + "---:|" * len(best),
    ]
    for label in labels:
        group = [r for r in rs if label in tags(r)]
        if group:
            lines.append(
                row(
                    label,
                    str(len(group)),
                    share([r.probe.product[5].fact for r in group]),
                    share([r.sentence for r in group]),
                    *(share([r.probe.baselines[n].hits[5] for r in group]) for n in best),
                )
            )
    return lines


def band(distance: int | None) -> str:
    for lo, hi in DISTANCES:
        if distance is not None and lo <= distance < hi:
            return f"{lo}-{hi - 1}" if hi < 10_000 else f"{lo}+"
    return ""


def verdict(run: Run) -> list[str]:
    out = []
    for split in Split:
        rs = [r for r in run.results if r.split == split.value]
        if not rs:
            continue
        best = max(BASELINES, key=lambda n: sum(r.probe.baselines[n].hits[5] for r in rs))
        out.append(
            f"- **{split.value}** ({len(rs)} questions): the answer is in the prompt for "
            f"{share([r.probe.product[5].fact for r in rs])} at top 5 "
            f"({share([r.probe.product[10].fact for r in rs])} at top 10) with "
            f"{median([r.probe.product[5].tokens for r in rs])} Memories tokens (median); "
            f"the best raw baseline, {best}, {share([r.probe.baselines[best].hits[5] for r in rs])}"
            f" with {median([r.probe.baselines[best].tokens[5] for r in rs])} tokens."
        )
    return out


def section(rs: Sequence[RealResult], title: str) -> list[str]:
    if not rs:
        return []
    flags = {f: f.replace("_", " ") for f in FLAGS}
    return [
        f"#### {title}",
        "",
        *method_table(rs),
        "",
        *breakdown(rs, "question", sorted({r.probe.kind for r in rs}), lambda r: {r.probe.kind}),
        "",
        *breakdown(
            rs, "asked", list(flags.values()), lambda r: {flags[f] for f in r.flags if r.flags[f]}
        ),
        "",
        *breakdown(
            rs,
            "distance (actions)",
            [band(lo) for lo, _ in DISTANCES],
            lambda r: {band(r.probe.distance)},
        ),
        "",
        f"- In the raw history (must be 0): "
        f"{sum(r.probe.product[5].history for r in rs)}; each answer within one line @5: "
        f"{share([r.probe.product[5].one_line for r in rs])}.",
        "",
    ]


def markdown(run: Run) -> str:
    regions = [REGIONS[k] for k in run.regions]
    described = "; ".join(
        f"*{r.title}* ({r.split.value}, {r.length} actions, "
        f"{sum(x.region == r.key for x in run.results)} questions)"
        for r in regions
    )
    bg = run.background
    lines = [
        f"Real writing played as stories: {described}. Each region is one adventure (a "
        "paragraph or a speech per action; the loopback double replays the text's next unit "
        "as the narrator's reply; the extractive writer and the memory worker to idle after "
        "every turn). The questions were written by reading the texts, each pointing at the "
        "passage(s) that answer it and the answer's own words; the regions were declared tune "
        "or held out before any tuning, by text region (other chapters, another play). Every "
        f"question is asked as a dry run after the last action, at least {GAP} actions after "
        "its evidence.",
        "",
        "- **Answer in prompt**: the Memories section holds every answer word of every "
        f"passage the question needs. **Answering sentence**: at least {SENTENCE_SHARE:.0%} of "
        "each evidence span's terms in a single line of the section. **Memory cover**: an "
        "injected memory's source range holds each evidence action.",
        "- **Raw blocks**: the text the history does not hold cut into blocks of 6 or 3 "
        "actions, ranked by the embedder's cosine, BM25, or hybrid (cosine + "
        f"{HYBRID_LEXICAL:g} × BM25 / best); a hit: an action of the first k blocks holds the "
        "answer words. **Raw sentences**: every sentence of that text, ranked by the hybrid, "
        "taken best first within Talekeeper's own token count for the question.",
        "",
        f"Embedder: {EMBEDDERS[run.embedder].label}; context {run.context:,} tokens; "
        f"{bg.memories} memories written over {bg.turns} turns. " + run.clock.footer(),
        "",
        *verdict(run),
        "",
    ]
    for split in Split:
        for r in regions:
            if r.split is split:
                rs = [x for x in run.results if x.region == r.key]
                lines += section(rs, f"{r.title} ({split.value})")
    return "\n".join(lines)
