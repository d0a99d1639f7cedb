"""The knowledge library's benchmark: import speed, search latency, recall of paraphrases.

    .venv/bin/python -m benchmarks.library.run [--write docs/benchmarks.md] [--short]
        [--embedder embedded|double]

Three parts, each through the product's own code on a real runtime (``measure``): the
import of a generated book, timed stage by stage; recall of paraphrased questions on one
book per seed (the tune seed, then the held-out ones, real vectors) by the product's search
against each signal alone (``measure.SIGNALS``), and with its floor on; search latency in a
fresh database as a library of generated books (random vectors) grows.
``--short``: small sizes (about two minutes); ``--embedder double``: the loopback double's
hashed words instead of MiniLM (for the tests, not for figures). Progress goes to stderr.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from benchmarks.kit.report import Clock, arguments, publish
from benchmarks.kit.runtime import EMBEDDERS, Player, player
from benchmarks.library import measure
from benchmarks.library.book import generate
from benchmarks.library.report import Run, SeedRecall, markdown, percentile

from talekeeper_testkit.double import ModelDouble

SECTION = "library"
TITLE = "Knowledge library: import, latency, recall"
COMMAND = ".venv/bin/python -m benchmarks.library.run"
TUNE_SEED = 14
HELD_OUT = (41, 77)
BOOK_SEED = 1  # the import book's: not a recall seed


@dataclass(frozen=True)
class Sizes:
    book_bytes: int  # the import book
    recall_bytes: int  # each recall book
    questions: int  # questions a seed
    library: tuple[int, ...]  # latency: passages
    per_book_bytes: int  # latency: each book (about 1,000 passages at 510 KB)
    queries: int  # latency: warm searches at each size
    cold: int  # latency: cold searches at each size


FULL = Sizes(1_000_000, 300_000, 200, (1_000, 10_000, 50_000), 510_000, 50, 20)
SHORT = Sizes(60_000, 50_000, 30, (500, 2_000), 100_000, 20, 5)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@contextmanager
def part(parts: dict[str, Clock], name: str) -> Iterator[None]:
    """Times the part ``name`` (seconds, load average before and after) into ``parts``."""
    clock = parts[name] = Clock(name)
    try:
        yield
    finally:
        before, after = clock.stop().load
        log(f"[{name}] {clock.seconds:.0f} s, load {before:.1f} -> {after:.1f}")


async def recall(p: Player, sizes: Sizes, seeds: list[int]) -> list[SeedRecall]:
    out = []
    for seed in seeds:
        book = generate(seed, sizes.recall_bytes)
        imported = await measure.import_book(p, book)
        log(f"recall seed {seed}: {imported.passages:,} passages in {imported.index_s:.0f} s")
        asked = await measure.recall(p, book, imported.source_id, sizes.questions)
        out.append(SeedRecall(book, imported, asked))
    return out


async def latency(p: Player, sizes: Sizes, run: Run) -> None:
    library = run.library
    library.base_db_bytes = measure.db_size(p)[0]
    for target in sizes.library:
        await measure.grow(p, library, target, sizes.per_book_bytes, run.width)
        queries = measure.latency_questions(library.books, sizes.queries, target)
        row = await measure.latency(p, library, queries, sizes.cold)
        log(
            f"latency {row.passages:,} passages: cold {percentile(row.cold_ms, 50):.0f} ms, "
            f"warm {percentile(row.warm_ms, 50):.1f} ms"
        )
        run.latency.append(row)
    queries = measure.latency_questions(library.books, sizes.queries, 0)
    run.embed_ms = await measure.embed_ms(p, queries)


async def collect(
    sizes: Sizes,
    *,
    embedder_key: str = "embedded",
    tune_seed: int = TUNE_SEED,
    held_out: tuple[int, ...] = HELD_OUT,
    short: bool = False,
    command: str = f"{COMMAND} --write docs/benchmarks.md",
) -> Run:
    clock, parts = Clock(command), dict[str, Clock]()
    embedder = EMBEDDERS[embedder_key]
    seeds = [tune_seed, *[s for s in held_out if s != tune_seed]]
    book = generate(BOOK_SEED, sizes.book_bytes)
    with ModelDouble() as double:
        async with player(embedder, double) as p:
            with part(parts, "import"):
                imported = await measure.import_book(p, book)
            run = Run(
                embedder=embedder.label,
                width=len((await p.embed(["width"]))[0]),
                short=short,
                book=book,
                imported=imported,
                tune_seed=tune_seed,
                held_out=seeds[1:],
                cold_queries=sizes.cold,
                clock=clock,
                parts=parts,
            )
            with part(parts, "recall"):
                run.recall = await recall(p, sizes, seeds)
        async with player(embedder, double) as p:  # a fresh database for the latency
            with part(parts, "latency"):
                await latency(p, sizes, run)
    clock.stop()
    return run


def main(argv: list[str] | None = None) -> int:
    parser = arguments((__doc__ or "").split("\n\n")[0])
    parser.add_argument("--short", action="store_true", help="small sizes (about two minutes)")
    parser.add_argument("--embedder", choices=sorted(EMBEDDERS), default="embedded")
    args = parser.parse_args(argv)
    command = " ".join([COMMAND, *(sys.argv[1:] if argv is None else argv)])
    sizes = SHORT if args.short else FULL
    run = collect(sizes, embedder_key=args.embedder, short=args.short, command=command)
    publish(markdown(asyncio.run(run)), args.write, SECTION, TITLE)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
