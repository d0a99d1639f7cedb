"""The library benchmark's section of ``docs/benchmarks.md``: figures computed from the
records of a run, never typed in; nothing here ranks anything. Invariants:

- A rank is 1-based, or None when the answer was not returned (a miss at every k);
  ``recall_at`` of no questions is 0.0; ``percentile`` is the nearest-rank one (the p95 of
  50 samples is the 48th smallest), so always a value measured.
- The tune seed's figures are never pooled with the held-out seeds'.
- Timings say how loaded the machine was while they were taken (the load average before
  and after each part).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from benchmarks.kit.report import Clock
from benchmarks.library.book import BY_KEY, CHAPTERS, KINDS, Book
from benchmarks.library.measure import (
    IN_USE,
    LEXICAL_ONLY,
    SEMANTIC_ONLY,
    SIGNALS,
    TOP_K,
    Asked,
    Imported,
    Latency,
    Library,
    Weights,
    weights_name,
)

from talekeeper.services.library.ranking import MIN_SCORE

LABELS: dict[Weights, str] = {
    IN_USE: "**hybrid** (the product)",
    LEXICAL_ONLY: "full-text alone",
    SEMANTIC_ONLY: "vectors alone",
}


@dataclass
class SeedRecall:
    book: Book
    imported: Imported
    asked: list[Asked]


@dataclass
class Run:
    embedder: str  # its label
    width: int  # the vectors' dimensions
    short: bool
    book: Book  # the import's
    imported: Imported
    tune_seed: int
    held_out: list[int]
    cold_queries: int
    clock: Clock  # the whole run
    parts: dict[str, Clock]  # import, recall, latency
    recall: list[SeedRecall] = field(default_factory=list)
    latency: list[Latency] = field(default_factory=list)
    library: Library = field(default_factory=Library)  # the latency's
    embed_ms: list[float] = field(default_factory=list)


# -- metrics -------------------------------------------------------------------------------


def rank_of(answer: int, returned: Sequence[int]) -> int | None:
    """1-based place of ``answer`` in ``returned``; None when absent."""
    if answer not in returned:
        return None
    return returned.index(answer) + 1


def recall_at(ranks: Sequence[int | None], k: int) -> float:
    """Share of questions whose answer came back within the first ``k``."""
    if not ranks:
        return 0.0
    return sum(1 for r in ranks if r is not None and r <= k) / len(ranks)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile, ``q`` in [0, 100]; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(max(1, math.ceil(q / 100 * len(ordered))), len(ordered)) - 1]


# -- scoring -------------------------------------------------------------------------------


def score(asked: Sequence[Asked], weights: Weights) -> tuple[float, float]:
    """(recall@1, recall@3) of the search under ``weights``, floor off."""
    r = [rank_of(a.answer, a.returned[weights]) for a in asked]
    return recall_at(r, 1), recall_at(r, TOP_K)


def floored_score(asked: Sequence[Asked]) -> float:
    """recall@3 of the product's own search with its floor on (a turn's search)."""
    return recall_at([rank_of(a.answer, a.floored) for a in asked], TOP_K)


# -- text ----------------------------------------------------------------------------------


def _f(x: float) -> str:
    return f"{x:.2f}"


def _ms(x: float) -> str:
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}"


def _mb(n: float) -> str:
    return f"{n / 1e6:.2f} MB"


def _cell(pair: tuple[float, float]) -> str:
    return f"{_f(pair[0])} / {_f(pair[1])}"


def _row(*cells: object) -> str:
    return "| " + " | ".join(map(str, cells)) + " |"


def _load(run: Run, part: str) -> str:
    before, after = run.parts[part].load
    return f"load average {before:.1f} before, {after:.1f} after"


def pooled(run: Run, seeds: Sequence[int]) -> list[Asked]:
    return [a for s in run.recall if s.book.seed in seeds for a in s.asked]


def _stage(label: str, seconds: float, passages: int, size: int | None) -> str:
    rate = f"{passages / seconds:,.0f}" if seconds > 0 else "–"
    mbs = f"{size / 1e6 / seconds:.2f}" if size and seconds > 0 else ""
    return _row(label, f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.0f} s", rate, mbs)


def import_part(run: Run) -> list[str]:
    im = run.imported
    lines = [
        "### Import speed",
        "",
        f"One generated gazetteer (seed {run.book.seed}): {_mb(im.size_bytes)} of Markdown in "
        f"{len(CHAPTERS)} chapters by topic, each by region then town ({run.book.towns} "
        f"towns, {run.book.people:,} people, every sentence a fact), "
        f"{im.passages:,} passages, {im.tokens:,} tokens. Uploaded as the route does it: "
        "`store.prepare` (read the Markdown, split into passages of at most 160 cl100k "
        "tokens, the full-text terms), `store.store` (the source, its passages and their "
        "full-text rows in one unit), then the runtime's `LibraryIndexer` makes the "
        f"vectors ({run.embedder}), its `step()` called back to back as its loop does "
        f"while work is due (batches of 32). {_load(run, 'import')}.",
        "",
        "| stage | wall time | passages/s | MB/s |",
        "|---|---:|---:|---:|",
        _stage("read + split (`store.prepare`)", im.prepare_s, im.passages, im.size_bytes),
        _stage("store (`store.store`, one unit)", im.store_s, im.passages, im.size_bytes),
        _stage("**read + split + store**", im.prepare_s + im.store_s, im.passages, im.size_bytes),
        _stage("vectors (`LibraryIndexer.step`)", im.index_s, im.passages, None),
        "",
    ]
    rates = ", ".join(f"{s.imported.passages / s.imported.index_s:.1f}" for s in run.recall)
    return lines + [
        f"The whole book was embedded: {im.passages:,} passages in {im.batches} batches.",
        f"The recall books below were embedded the same way at {rates} passages/s "
        f"({', '.join(f'{s.imported.passages:,}' for s in run.recall)} passages).",
    ]


def latency_part(run: Run) -> list[str]:
    b, im = run.library, run.imported
    queries = len(run.latency[0].warm_ms) if run.latency else 0
    embed_minutes = b.passages / (im.passages / im.index_s) / 60
    lines = [
        "### Retrieval latency",
        "",
        f"A library grown book by book ({len(b.books)} generated gazetteers of about "
        f"{b.passages // max(len(b.books), 1):,} passages each, {_mb(b.size_bytes)} in all), "
        "prepared and stored by the product in a fresh database; the search covers every "
        f"book, as a turn searches its attached sources (top {TOP_K}, the floor on). "
        f"**The vectors are random unit vectors** of the embedder's width ({run.width}) "
        f"written straight into `library_passages.vector`: embedding {b.passages:,} "
        f"passages at the indexer's rate above would take about {embed_minutes:,.0f} "
        "minutes. The text, the terms and the full-text index are the product's, and every "
        f"query is embedded by the real {run.embedder}. Queries: {queries} paraphrased "
        "questions about the books' facts. *Cold*: the first search of a new "
        "`KnowledgeSearch` (its vector cache empty, so it reads every vector of the "
        f"library), {run.cold_queries} times; *warm*: {queries} searches with the cache "
        "filled. The file system cache is warm either way (the database was just written). "
        f"{_load(run, 'latency')}.",
        "",
        "| passages | sources | cold p50 | cold p95 | warm p50 | warm p95 | database |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in run.latency:
        times = [
            f"{_ms(percentile(t, q))} ms" for t in (row.cold_ms, row.warm_ms) for q in (50, 95)
        ]
        lines.append(_row(f"{row.passages:,}", row.sources, *times, _mb(row.db_bytes)))
    lines.append("")
    if run.embed_ms:
        lines.append(
            f"Of each search, embedding the query alone takes {_ms(percentile(run.embed_ms, 50))}"
            f" ms (p50; p95 {_ms(percentile(run.embed_ms, 95))} ms)."
        )
    if run.latency and run.latency[-1].passages:
        last = run.latency[-1]
        grown, k = last.db_bytes - b.base_db_bytes, 1000 / last.passages
        parts = sorted(last.tables.items(), key=lambda kv: -kv[1])
        shares = ", ".join(f"`{n}` {v * k / 1e3:,.0f} KB" for n, v in parts[:4])
        pages = last.tables.get("library_passages", 0)
        payload = last.payloads.get("library_passages", 0)
        lines.append(
            f"The database grew by {_mb(grown)} for {last.passages:,} passages: "
            f"**{grown * k / 1e3:,.0f} KB per 1,000 passages** (text, terms, a "
            f"{run.width * 4:,}-byte vector each, the full-text index). Per 1,000 passages: "
            f"{shares}; the passages' own rows hold {payload * k / 1e3:,.0f} KB of data in "
            f"{pages * k / 1e3:,.0f} KB of pages."
        )
        if b.prepare_s > 0 and b.store_s > 0:
            lines.append(
                f"Building it: `store.prepare` {b.passages / b.prepare_s:,.0f} passages/s, "
                f"`store.store` {b.passages / b.store_s:,.0f} passages/s over the "
                f"{len(b.books)} books."
            )
    return lines


def recall_part(run: Run) -> list[str]:
    one = ([s for s in run.recall if s.book.seed == run.tune_seed] or run.recall)[0]
    held_out = ", ".join(map(str, run.held_out))
    lines = [
        "### Recall of paraphrased questions",
        "",
        f"For each seed a gazetteer of about {_mb(len(one.book.data))} ({one.book.towns} "
        f"towns, {one.book.people} people, {len(one.book.facts):,} facts, "
        f"{one.imported.passages:,} passages) is imported as above, vectors included. It is "
        "dense: every sentence states a fact, and every town states most of the same "
        f"{sum(k.entity == 'town' for k in KINDS)} kinds of fact and every person most of "
        f"the same {sum(k.entity == 'person' for k in KINDS)}, in the same few wordings, "
        f"spread over {len(CHAPTERS)} chapters by topic; names, surnames and values recur. "
        f"Each fact is stated once. {len(one.asked)} questions a seed, drawn "
        "evenly over the kinds, *paraphrase* a fact: they name its town or person as the "
        'book does and share no other word with any wording of the statement ("Which '
        'product earns Nopaa its wealth?" for "Nopaa grows rich on pear cider, which its '
        'merchants ship to every port of the realm."). A hit at k: the passage holding the '
        "sentence is among the first k returned. The query is the question alone (no scene "
        "context).",
        "",
        f"- **hybrid**: the product's `KnowledgeSearch.search`, weights "
        f"{IN_USE[0]:.1f} semantic / {IN_USE[1]:.1f} lexical, top {TOP_K}, floor off; "
        f"*with the floor*: the same with `MIN_SCORE` {MIN_SCORE} on, as a turn searches.",
        "- **full-text alone** and **vectors alone**: the same search with the weights set "
        f"to {weights_name(LEXICAL_ONLY)} and {weights_name(SEMANTIC_ONLY)} (semantic/lexical) "
        "for the call; the scoring is the product's.",
        "",
        f"Seed {run.tune_seed} is the tune seed; "
        + (
            f"seeds {held_out} are held out"
            if len(run.held_out) > 1
            else f"seed {held_out} is held out"
            if run.held_out
            else "no seed is held out"
        )
        + " (nothing was chosen or changed looking at them). The book's layout, by topic "
        "rather than by town, was also settled on the tune seed alone: with each town's "
        "facts together every method found nearly every answer within three passages. "
        f"{_load(run, 'recall')}.",
        "",
        *_header(run),
    ]
    for w in SIGNALS:
        lines.append(_row(LABELS[w], *[_cell(score(g, w)) for g in _groups(run)]))
    lines.append(
        _row("hybrid, with the floor", *[f"– / {_f(floored_score(g))}" for g in _groups(run)])
    )
    return lines + ["", *kinds_table(pooled(run, run.held_out))]


def _groups(run: Run) -> list[list[Asked]]:
    """The tune seed's questions, each held-out seed's, then the held-out seeds' together."""
    groups = [pooled(run, [run.tune_seed])] + [pooled(run, [s]) for s in run.held_out]
    return groups + ([pooled(run, run.held_out)] if len(run.held_out) > 1 else [])


def _header(run: Run) -> list[str]:
    labels = [f"tune seed {run.tune_seed}"] + [f"held-out {s}" for s in run.held_out]
    labels += ["held-out, all"] if len(run.held_out) > 1 else []
    return [_row("method", *labels), "|---|" + "---:|" * len(labels)]


def kinds_table(held: Sequence[Asked]) -> list[str]:
    lines = [
        f"Held-out seeds by kind of fact (recall@1 / @{TOP_K}):",
        "",
        "| kind | questions | hybrid | full-text alone | vectors alone |",
        "|---|---:|---:|---:|---:|",
    ]
    beaten = []
    for kind in BY_KEY:
        rs = [a for a in held if a.kind == kind]
        if not rs:
            continue
        mixed, *alone = [score(rs, w) for w in SIGNALS]
        lines.append(
            _row(f"{kind} ({BY_KEY[kind].entity})", len(rs), _cell(mixed), *map(_cell, alone))
        )
        beaten += [
            f"{kind} ({label} alone {_f(one[1])}, hybrid {_f(mixed[1])})"
            for label, one in zip(("full-text", "vectors"), alone, strict=True)
            if one[1] > mixed[1]
        ]
    if beaten:
        lines += [
            "",
            f"Where one signal alone does better at @{TOP_K} than the hybrid: "
            + "; ".join(beaten)
            + ". There the other signal's score outweighs the one that finds the answer.",
        ]
    return lines


def markdown(run: Run) -> str:
    parts = ", ".join(f"{k} {c.seconds or 0:.0f} s" for k, c in run.parts.items())
    short = " **A short run** (`--short`): small sizes, figures indicative only."
    lines = [
        "The knowledge library measured through its own code on a migrated SQLite database "
        "in a temporary directory: import speed, search latency as the library grows, and "
        "recall of paraphrased questions against each signal alone. Embedder: "
        f"{run.embedder}. Parts: {parts}. {run.clock.footer()}" + (short if run.short else ""),
        "",
        *import_part(run),
        "",
        *latency_part(run),
        "",
        *recall_part(run),
    ]
    return "\n".join(lines)
