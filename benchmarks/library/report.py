"""The library benchmark's section of ``docs/benchmarks.md``: figures computed from the
records of a run, never typed in.

Invariants:

- Recall is over the questions that have an answer; the questions about entities the book
  never names count only in the floor's table (as "nothing returned").
- The tune seed's figures are never pooled with the held-out seeds'. Anything chosen here
  (the best weights, the best floor) is chosen on the tune seed by a rule stated in the
  text, and the held-out seeds only report how the choice fares.
- Timings say how loaded the machine was while they were taken (the load average sampled
  before and after each part).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from benchmarks.library.book import BY_KEY, CHAPTERS, KINDS
from benchmarks.library.measure import (
    GRID,
    IN_USE,
    LEXICAL_ONLY,
    SEMANTIC_ONLY,
    TOP_K,
    Asked,
    Imported,
    Latency,
    weights_name,
)
from benchmarks.library.metrics import (
    above,
    empty_share,
    percentile,
    rank_of,
    recall_at,
    sign_test,
)

from talekeeper.services.library.search import MIN_SCORE

FLOORS = (0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5)
FLOOR_RECALL_SLACK = 0.02  # a floor may cost at most this much recall@3 (the tune rule)
SIGNIFICANT = 0.05  # sign test on the held-out questions: below this, a difference is shown
ROUNDING = 5e-5  # a hit's final score is rounded to 4 decimals


@dataclass
class SeedRecall:
    seed: int
    size_bytes: int
    towns: int
    people: int
    facts: int
    imported: Imported
    asked: list[Asked]


@dataclass
class Build:
    """How the latency libraries were made."""

    books: int = 0
    passages: int = 0
    size_bytes: int = 0
    prepare_s: float = 0.0
    store_s: float = 0.0
    vectors_s: float = 0.0
    base_db_bytes: int = 0


@dataclass
class Run:
    embedder: str  # its label
    width: int  # the vectors' dimensions
    machine: str
    short: bool
    book_seed: int
    book_towns: int
    book_people: int
    imported: Imported
    index_limit_s: float
    tune_seed: int
    held_out: list[int]
    recall: list[SeedRecall]
    latency: list[Latency]
    build: Build
    embed_ms: list[float]
    cold_queries: int
    cores: int = 1
    loads: dict[str, tuple[float, float]] = field(default_factory=dict)  # part -> before, after
    seconds: dict[str, float] = field(default_factory=dict)  # part -> wall time
    command: str = ".venv/bin/python -m benchmarks.library.run --write docs/benchmarks.md"


# -- scoring -------------------------------------------------------------------------------


def answerable(asked: Sequence[Asked]) -> list[Asked]:
    return [a for a in asked if a.answer is not None]


def absent(asked: Sequence[Asked]) -> list[Asked]:
    return [a for a in asked if a.answer is None]


def ranks(asked: Sequence[Asked], weights: str, floor: float = 0.0) -> list[int | None]:
    """The answer's rank among what the search under ``weights`` returned, keeping only
    passages whose score reaches ``floor``."""
    return [rank_of(a.answer, above(a.returned[weights], floor)) for a in answerable(asked)]


def score(asked: Sequence[Asked], weights: str, floor: float = 0.0) -> tuple[float, float]:
    """(recall@1, recall@3) of ``weights`` over the answerable questions."""
    r = ranks(asked, weights, floor)
    return recall_at(r, 1), recall_at(r, TOP_K)


def floored_score(asked: Sequence[Asked]) -> float:
    """recall@3 of the product's own search with its floor on (a turn's search)."""
    return recall_at([rank_of(a.answer, a.floored) for a in answerable(asked)], TOP_K)


def floor_agreement(asked: Sequence[Asked]) -> tuple[int, int, int]:
    """How many questions' floor-on search returned what the floor-off one kept at
    ``MIN_SCORE`` (the check that the floor table's rule is the product's), of how many,
    and how many of the others had a returned score within the rounding of the floor (a
    hit's score is rounded to 4 decimals, so 0.19996 shows as 0.2)."""
    name = weights_name(IN_USE)
    differ = [a for a in asked if above(a.returned[name], MIN_SCORE) != a.floored]
    rounding = sum(
        1 for a in differ if any(abs(x - MIN_SCORE) <= ROUNDING for _, x in a.returned[name])
    )
    return len(asked) - len(differ), len(asked), rounding


def wins(asked: Sequence[Asked], new: str, old: str, k: int) -> tuple[int, int]:
    """Questions ``new`` answers within ``k`` and ``old`` does not, and the reverse."""
    pairs = [
        (
            rank_of(a.answer, [p for p, _ in a.returned[new]]),
            rank_of(a.answer, [p for p, _ in a.returned[old]]),
        )
        for a in answerable(asked)
    ]
    hit = [(n is not None and n <= k, o is not None and o <= k) for n, o in pairs]
    return sum(1 for n, o in hit if n and not o), sum(1 for n, o in hit if o and not n)


def floor_row(asked: Sequence[Asked], weights: str, floor: float) -> tuple[float, float, float]:
    """recall@3 of the answerable questions, the share of them that got nothing, and the
    share of absent questions that got nothing, at ``floor``."""
    kept = [above(a.returned[weights], floor) for a in answerable(asked)]
    none = [above(a.returned[weights], floor) for a in absent(asked)]
    return recall_at(ranks(asked, weights, floor), TOP_K), empty_share(kept), empty_share(none)


def best_weights(asked: Sequence[Asked]) -> str:
    """The grid's best on ``asked``: recall@3, then recall@1, then the nearest to those in
    use (a tie changes nothing)."""

    def key(w: tuple[float, float]) -> tuple[float, float, float]:
        r1, r3 = score(asked, weights_name(w))
        return (r3, r1, -abs(w[0] - IN_USE[0]))

    return weights_name(max(GRID, key=key))


def best_floor(asked: Sequence[Asked], weights: str) -> float:
    """The floor that leaves the most absent questions with nothing while costing at most
    ``FLOOR_RECALL_SLACK`` of recall@3 (ties: the lower floor)."""
    base = score(asked, weights)[1]
    fits = [f for f in FLOORS if floor_row(asked, weights, f)[0] >= base - FLOOR_RECALL_SLACK]
    if not fits:
        return FLOORS[0]
    return max(fits, key=lambda f: (floor_row(asked, weights, f)[2], -f))


# -- text ----------------------------------------------------------------------------------


def _f(x: float) -> str:
    return f"{x:.2f}"


def _ms(x: float) -> str:
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}"


def _mb(n: float) -> str:
    return f"{n / 1e6:.2f} MB"


def _load(run: Run, part: str) -> str:
    before, after = run.loads.get(part, (0.0, 0.0))
    return f"load average {before:.1f} before, {after:.1f} after"


def pooled(run: Run, seeds: Sequence[int]) -> list[Asked]:
    return [a for s in run.recall if s.seed in seeds for a in s.asked]


def import_part(run: Run) -> list[str]:
    im = run.imported
    read = im.prepare_s + im.store_s
    lines = [
        "### Import speed",
        "",
        f"One generated gazetteer (seed {run.book_seed}): {_mb(im.size_bytes)} of Markdown in "
        f"{len(CHAPTERS)} chapters by topic, each by region then town ({run.book_towns} "
        f"towns, {run.book_people:,} people, every sentence a fact), "
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
        _stage("**read + split + store**", read, im.passages, im.size_bytes),
        _stage("vectors (`LibraryIndexer.step`)", im.index_s, im.indexed, None),
        "",
    ]
    if im.complete:
        lines.append(
            f"The whole book was embedded: {im.indexed:,} passages in {im.batches} batches."
        )
    else:
        whole = im.passages / (im.indexed / im.index_s) if im.indexed else 0.0
        lines.append(
            f"The vectors are a sample: the indexing was timed for its first "
            f"{run.index_limit_s:.0f} s ({im.indexed:,} of {im.passages:,} passages); at that "
            f"rate the whole book takes about {whole / 60:.0f} minutes, and the benchmark "
            "stopped there."
        )
    others = [s.imported for s in run.recall if s.imported.complete and s.imported.index_s]
    if others:
        rates = ", ".join(f"{s.indexed / s.index_s:.1f}" for s in others)
        lines.append(
            f"The recall books below were embedded the same way at {rates} passages/s "
            f"({', '.join(f'{s.passages:,}' for s in others)} passages)."
        )
    return lines


def _stage(label: str, seconds: float, passages: int, size: int | None) -> str:
    rate = f"{passages / seconds:,.0f}" if seconds > 0 else "–"
    mbs = f"{size / 1e6 / seconds:.2f}" if size and seconds > 0 else ""
    shown = f"{seconds:.2f} s" if seconds < 10 else f"{seconds:.0f} s"
    return f"| {label} | {shown} | {rate} | {mbs} |"


def _embed_minutes(run: Run) -> str:
    im = run.imported
    if not im.indexed or not im.index_s:
        return "longer than the whole run"
    return f"about {run.build.passages / (im.indexed / im.index_s) / 60:,.0f} minutes"


def latency_part(run: Run) -> list[str]:
    b = run.build
    queries = len(run.latency[0].warm_ms) if run.latency else 0
    lines = [
        "### Retrieval latency",
        "",
        f"A library grown book by book ({b.books} generated gazetteers of about "
        f"{b.passages // max(b.books, 1):,} passages each, {_mb(b.size_bytes)} in all), "
        "prepared and stored by the product in a fresh database; the search covers every "
        f"book, as a turn searches its attached sources (top {TOP_K}, the floor on). "
        f"**The vectors are random unit vectors** of the embedder's width ({run.width}) "
        f"written straight into `library_passages.vector`: embedding {b.passages:,} "
        f"passages at the indexer's rate above would take {_embed_minutes(run)}. The text, "
        "the terms and the full-text index are the product's, and every query is embedded "
        f"by the real {run.embedder}. Queries: {queries} paraphrased questions about the "
        f"books' facts. *Cold*: the first search of a new `KnowledgeSearch` (its vector "
        f"cache empty, so it reads every vector of the library), {run.cold_queries} times; "
        f"*warm*: {queries} searches with the cache filled. The file system cache is warm "
        f"either way (the database was just written). {_load(run, 'latency')}.",
        "",
        "| passages | sources | cold p50 | cold p95 | warm p50 | warm p95 | database |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in run.latency:
        lines.append(
            f"| {row.passages:,} | {row.sources} | {_ms(percentile(row.cold_ms, 50))} ms | "
            f"{_ms(percentile(row.cold_ms, 95))} ms | {_ms(percentile(row.warm_ms, 50))} ms | "
            f"{_ms(percentile(row.warm_ms, 95))} ms | {_mb(row.db_bytes)} |"
        )
    lines.append("")
    if run.embed_ms:
        lines.append(
            f"Of each search, embedding the query alone takes {_ms(percentile(run.embed_ms, 50))}"
            f" ms (p50; p95 {_ms(percentile(run.embed_ms, 95))} ms)."
        )
    if run.latency:
        last = run.latency[-1]
        grown = last.db_bytes - b.base_db_bytes
        per_k = grown / last.passages * 1000 if last.passages else 0.0
        parts = sorted(last.tables.items(), key=lambda kv: -kv[1])
        k = 1000 / last.passages if last.passages else 0.0
        shares = ", ".join(f"`{n}` {v * k / 1e3:,.0f} KB" for n, v in parts[:4])
        pages = last.tables.get("library_passages", 0)
        payload = last.payloads.get("library_passages", 0)
        lines.append(
            f"The database grew by {_mb(grown)} for {last.passages:,} passages: "
            f"**{per_k / 1e3:,.0f} KB per 1,000 passages** (text, terms, a {run.width * 4:,}-byte "
            f"vector each, the full-text index). Per 1,000 passages: {shares}; the passages' "
            f"own rows hold {payload * k / 1e3:,.0f} KB of data in {pages * k / 1e3:,.0f} KB "
            "of pages."
        )
        if b.prepare_s > 0 and b.store_s > 0:
            lines.append(
                f"Building it: `store.prepare` {b.passages / b.prepare_s:,.0f} passages/s, "
                f"`store.store` {b.passages / b.store_s:,.0f} passages/s over the "
                f"{b.books} books."
            )
    return lines


def recall_part(run: Run) -> list[str]:
    tune = pooled(run, [run.tune_seed])
    held = pooled(run, run.held_out)
    seeds = [s for s in run.recall if s.seed == run.tune_seed] or run.recall
    one = seeds[0]
    per_seed = len(answerable(one.asked))
    lines = [
        "### Recall of paraphrased questions",
        "",
        f"For each seed a gazetteer of about {_mb(one.size_bytes)} ({one.towns} towns, "
        f"{one.people} people, {one.facts:,} facts, {one.imported.passages:,} passages) is "
        f"imported as above, vectors included. It is dense: every sentence states a fact, "
        f"and every town states most of the same {sum(k.entity == 'town' for k in KINDS)} "
        f"kinds of fact and every person most of the same "
        f"{sum(k.entity == 'person' for k in KINDS)}, in the same few wordings, spread over "
        f"{len(CHAPTERS)} chapters by topic; names, surnames and values recur. Each fact "
        f"is stated once. {per_seed} questions a seed, drawn evenly over the kinds, "
        "*paraphrase* a fact: they name its town or person as the book does and share no "
        'other word with any wording of the statement ("Which product earns Nopaa its '
        'wealth?" for "Nopaa grows rich on pear cider, which its merchants ship to every '
        'port of the realm."). A hit at k: the passage holding the sentence is among the '
        "first k returned. The query is the question alone (no scene context).",
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
            f"seeds {', '.join(map(str, run.held_out))} are held out ("
            if len(run.held_out) > 1
            else f"seed {run.held_out[0]} is held out ("
            if run.held_out
            else "no seed is held out ("
        )
        + "nothing was chosen or changed looking at them). The book's layout, by topic "
        "rather than by town, was also settled on the tune seed alone: with each town's "
        "facts together every method found nearly every answer within three passages. "
        f"{_load(run, 'recall')}.",
        "",
        *_header(run, "method"),
    ]
    for label, w in (
        ("**hybrid** (the product)", IN_USE),
        ("full-text alone", LEXICAL_ONLY),
        ("vectors alone", SEMANTIC_ONLY),
    ):
        cells = [_cell(score(group, weights_name(w))) for group in _groups(run)]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    floored = [f"– / {_f(floored_score(group))}" for group in _groups(run)]
    lines.append("| hybrid, with the floor | " + " | ".join(floored) + " |")
    lines += [
        "",
        *kinds_table(held),
        "",
        *weights_part(run, tune, held),
        "",
        *floor_part(tune, held),
    ]
    return lines


def _groups(run: Run) -> list[list[Asked]]:
    """The tune seed's questions, each held-out seed's, then the held-out seeds' together."""
    groups = [pooled(run, [run.tune_seed])] + [pooled(run, [s]) for s in run.held_out]
    return groups + ([pooled(run, run.held_out)] if len(run.held_out) > 1 else [])


def _header(run: Run, first: str) -> list[str]:
    labels = [f"tune seed {run.tune_seed}"] + [f"held-out {s}" for s in run.held_out]
    labels += ["held-out, all"] if len(run.held_out) > 1 else []
    return [
        f"| {first} | " + " | ".join(labels) + " |",
        "|---|" + "---:|" * len(labels),
    ]


def _cell(pair: tuple[float, float]) -> str:
    return f"{_f(pair[0])} / {_f(pair[1])}"


def kinds_table(held: Sequence[Asked]) -> list[str]:
    lines = [
        f"Held-out seeds by kind of fact (recall@1 / @{TOP_K}):",
        "",
        "| kind | questions | hybrid | full-text alone | vectors alone |",
        "|---|---:|---:|---:|---:|",
    ]
    for kind in BY_KEY:
        rs = [a for a in answerable(held) if a.kind == kind]
        if not rs:
            continue
        cells = []
        for w in (IN_USE, LEXICAL_ONLY, SEMANTIC_ONLY):
            r1, r3 = score(rs, weights_name(w))
            cells.append(f"{_f(r1)} / {_f(r3)}")
        lines.append(f"| {kind} ({BY_KEY[kind].entity}) | {len(rs)} | " + " | ".join(cells) + " |")
    beaten = []
    for kind in BY_KEY:
        rs = [a for a in answerable(held) if a.kind == kind]
        mixed = score(rs, weights_name(IN_USE))[1]
        for label, w in (("full-text", LEXICAL_ONLY), ("vectors", SEMANTIC_ONLY)):
            alone = score(rs, weights_name(w))[1]
            if rs and alone > mixed:
                beaten.append(f"{kind} ({label} alone {_f(alone)}, hybrid {_f(mixed)})")
    if beaten:
        lines += [
            "",
            f"Where one signal alone does better at @{TOP_K} than the hybrid: "
            + "; ".join(beaten)
            + ". There the other signal's score outweighs the one that finds the answer.",
        ]
    return lines


def weights_part(run: Run, tune: Sequence[Asked], held: Sequence[Asked]) -> list[str]:
    in_use = weights_name(IN_USE)
    best = best_weights(tune)
    lines = [
        "#### The weights",
        "",
        "The same questions under each semantic/lexical split of the grid (the product's "
        f"search with the weights set for the call; recall@1 / @{TOP_K}). The best on the tune "
        f"seed (recall@{TOP_K}, then recall@1, then the nearest to the weights in use) is "
        "marked; the held-out columns only report it.",
        "",
        *_header(run, "semantic / lexical"),
    ]
    for w in GRID:
        name = weights_name(w)
        cells = [_cell(score(group, name)) for group in _groups(run)]
        label = name + (" (in use)" if name == in_use else "") + (" ← tune" if name == best else "")
        label = f"**{label}**" if name in (in_use, best) else label
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", *weights_verdict(run, tune, held, best)]
    return lines


def weights_verdict(run: Run, tune: Sequence[Asked], held: Sequence[Asked], best: str) -> list[str]:
    """Whether the held-out seeds confirm the tune seed's best weights: a sign test over
    the questions one set of weights answers and the other does not."""
    in_use = weights_name(IN_USE)
    tb, hb = score(tune, best), score(held, best)
    tu, hu = score(tune, in_use), score(held, in_use)
    if best == in_use:
        return [
            f"The weights in use are the tune seed's best; held out they score "
            f"{_f(hu[0])} / {_f(hu[1])}."
        ]
    tests = []
    for k in (1, TOP_K):
        won, lost = wins(held, best, in_use, k)
        tests.append((k, won, lost, sign_test(won, lost)))
    shown = [t for t in tests if t[3] < SIGNIFICANT]
    confirmed = bool(shown) and all(t[1] >= t[2] for t in tests) and all(t[1] > t[2] for t in shown)
    detail = "; ".join(
        f"@{k}: {best} alone finds {w}, {in_use} alone {lo} (sign test p = {p:.2f})"
        for k, w, lo, p in tests
    )
    verdict = (
        f"the held-out seeds confirm it: **{best}** is suggested."
        if confirmed
        else f"the held-out seeds do not show a difference (p ≥ {SIGNIFICANT} or mixed), so "
        "nothing here asks for a change of weights."
    )
    return [
        f"Tuned on seed {run.tune_seed}: {best} ({_f(tb[0])} / {_f(tb[1])} against "
        f"{_f(tu[0])} / {_f(tu[1])} in use). Held out: {_f(hb[0])} / {_f(hb[1])} against "
        f"{_f(hu[0])} / {_f(hu[1])}. Of the {len(answerable(held))} held-out questions, "
        f"{detail}: {verdict}"
    ]


def floor_part(tune: Sequence[Asked], held: Sequence[Asked]) -> list[str]:
    name = weights_name(IN_USE)
    best = best_floor(tune, name)
    same, total, rounding = floor_agreement([*tune, *held])
    agree = f"{same} of {total} questions"
    if same < total:
        why = "all" if rounding == total - same else f"{rounding}"
        agree += f"; {why} of the other {total - same} differ only by a score's rounding"
    n_absent = len(absent(tune)) + len(absent(held))
    answer_scores = [a.returned[name][0][1] for a in answerable(held) if a.returned[name]]
    absent_scores = [a.returned[name][0][1] for a in absent(held) if a.returned[name]]
    lines = [
        "#### The floor",
        "",
        f'`MIN_SCORE` ({MIN_SCORE}) drops passages whose final score is under it: "better '
        f'nothing than filler". Besides the questions above, {n_absent} questions ask the '
        "same things about towns and people the books never name; for them the right "
        "answer is nothing. Each row keeps, of the floor-off results (weights in use), the "
        "passages that reach the floor (the product's rule on the product's scores; at "
        f"{MIN_SCORE} it matches the product's own floor-on search on {agree}). The tune "
        "rule: the floor that leaves the most absent questions with "
        f"nothing while costing at most {FLOOR_RECALL_SLACK} of recall@{TOP_K}.",
        "",
        f"| floor | tune: recall@{TOP_K} | answerable, got nothing | absent, got nothing | "
        f"held-out: recall@{TOP_K} | answerable, got nothing | absent, got nothing |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for floor in FLOORS:
        t, h = floor_row(tune, name, floor), floor_row(held, name, floor)
        label = f"{floor:.2f}" + (" (in use)" if floor == MIN_SCORE else "")
        label += " ← tune" if floor == best else ""
        label = f"**{label}**" if floor in (MIN_SCORE, best) else label
        lines.append(
            f"| {label} | {_f(t[0])} | {_f(t[1])} | {_f(t[2])} | {_f(h[0])} | {_f(h[1])} | "
            f"{_f(h[2])} |"
        )
    if answer_scores and absent_scores:
        lines += [
            "",
            f"Held out, the top score of a question with an answer is "
            f"{statistics.median(answer_scores):.2f} (median), of an absent question "
            f"{statistics.median(absent_scores):.2f}.",
        ]
    return lines


def busy(run: Run) -> list[str]:
    """A warning when the machine had more runnable work than cores during the run."""
    peak = max((max(v) for v in run.loads.values()), default=0.0)
    if peak <= run.cores:
        return []
    return [
        "",
        f"**Taken on a busy machine**: other work shared it (load average up to {peak:.1f} on "
        f"{run.cores} cores), so the timings below are slower, and noisier, than an idle "
        "machine would give; the recall figures do not depend on it.",
    ]


def markdown(run: Run) -> str:
    total = sum(run.seconds.values())
    parts = ", ".join(f"{k} {v:.0f} s" for k, v in run.seconds.items())
    lines = [
        "The knowledge library measured through its own code on a migrated SQLite database "
        f"in a temporary directory: import speed, search latency as the library grows, and "
        f"recall of paraphrased questions against each signal alone. Embedder: "
        f"{run.embedder}. On {run.machine}; {total / 60:.1f} minutes ({parts}) "
        f"(`{run.command}`)."
        + (
            " **A short run** (`--short`): small sizes, figures indicative only."
            if run.short
            else ""
        ),
        *busy(run),
        "",
        *import_part(run),
        "",
        *latency_part(run),
        "",
        *recall_part(run),
    ]
    return "\n".join(lines)
