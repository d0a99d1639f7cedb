"""The knowledge library's benchmark: import speed, search latency, recall of paraphrases.

Three parts, each through the product's own code on a real runtime (``measure``):

1. **Import**: a generated book of about ``--book-bytes`` of Markdown prepared, stored and
   embedded by the indexer; the indexing is timed for at most ``--index-limit`` seconds
   (a sample of the book past that, and the report says so).
2. **Latency**: in a fresh database, a library of generated books (random vectors) grown
   to each of ``--sizes`` passages; cold and warm searches at each size, and the
   database's size.
3. **Recall**: one book per seed (the tune seed, then the held-out seeds), imported with
   real vectors; paraphrased questions searched by the product under every weights of the
   grid (``measure.GRID``), and questions about entities the books never name.

    .venv/bin/python -m benchmarks.library.run [--write docs/benchmarks.md] [--short]
        [--embedder embedded|double] [--tune-seed 14] [--seeds 41 77] [--json out.json]

``--write`` replaces the ``library`` section of that Markdown file. ``--short``: small
sizes throughout (about two minutes). ``--embedder double``: the loopback double's hashed
words instead of MiniLM (seconds; for the tests, not for figures). Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.library import measure
from benchmarks.library.book import generate
from benchmarks.library.metrics import percentile
from benchmarks.library.report import Build, Run, SeedRecall, markdown
from benchmarks.recall.play import EMBEDDERS, Player, player

from benchmarks.kit.report import machine_description, publish
from talekeeper_testkit.double import ModelDouble

SECTION = "library"
TITLE = "Knowledge library: import, latency, recall"
TUNE_SEED = 14
HELD_OUT = (41, 77)
BOOK_SEED = 1  # the import book's: not a recall seed


@dataclass(frozen=True)
class Sizes:
    book_bytes: int  # the import book
    index_limit_s: float
    recall_bytes: int  # each recall book
    questions: int  # answerable questions a seed (and a tenth as many absent ones)
    library: tuple[int, ...]  # latency: passages
    per_book_bytes: int  # latency: each book (about 1,000 passages at 510 KB)
    queries: int  # latency: warm searches at each size
    cold: int  # latency: cold searches at each size


FULL = Sizes(1_000_000, 180.0, 300_000, 200, (1_000, 10_000, 50_000), 510_000, 50, 20)
SHORT = Sizes(60_000, 60.0, 50_000, 30, (500, 2_000), 100_000, 20, 5)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Clock:
    """Wall time and the load average before and after each part."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.loads: dict[str, tuple[float, float]] = {}

    @contextmanager
    def part(self, name: str) -> Iterator[None]:
        load, began = os.getloadavg()[0], time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = time.perf_counter() - began
            self.loads[name] = (load, os.getloadavg()[0])
            log(f"[{name}] {self.seconds[name]:.0f} s, load {load:.1f} -> {os.getloadavg()[0]:.1f}")


async def _width(p: Player) -> int:
    assert p.models.embedding is not None
    return len((await p.models.embedding.embed(["width"])).vectors[0])


async def part_import(p: Player, sizes: Sizes) -> tuple[measure.Imported, int, int]:
    book = generate(BOOK_SEED, sizes.book_bytes)
    log(f"import: {len(book.data):,} bytes, {book.towns} towns")
    imported = await measure.import_book(p, book, sizes.index_limit_s, finish=False)
    log(
        f"import: {imported.passages:,} passages, prepare {imported.prepare_s:.2f} s, store "
        f"{imported.store_s:.2f} s, {imported.indexed:,} vectors in {imported.index_s:.0f} s"
    )
    return imported, book.towns, book.people


async def part_recall(p: Player, sizes: Sizes, seeds: list[int]) -> list[SeedRecall]:
    out = []
    for seed in seeds:
        book = generate(seed, sizes.recall_bytes)
        imported = await measure.import_book(p, book, float("inf"))
        log(f"recall seed {seed}: {imported.passages:,} passages in {imported.index_s:.0f} s")
        began = time.perf_counter()
        asked = await measure.recall(p, book, imported.source_id, sizes.questions)
        log(f"recall seed {seed}: {len(asked)} questions in {time.perf_counter() - began:.0f} s")
        out.append(
            SeedRecall(
                seed, len(book.data), book.towns, book.people, len(book.facts), imported, asked
            )
        )
    return out


async def part_latency(
    p: Player, sizes: Sizes
) -> tuple[list[measure.Latency], Build, list[float], int]:
    width = await _width(p)
    library = measure.Library()
    library.base_db_bytes, _, _ = measure.db_size(p)
    rows = []
    for target in sizes.library:
        await measure.grow(p, library, target, sizes.per_book_bytes, width)
        queries = measure.latency_questions(library.books, sizes.queries, target)
        row = await measure.latency(p, library, queries, sizes.cold)
        log(
            f"latency {row.passages:,} passages: cold {percentile(row.cold_ms, 50):.0f} ms, "
            f"warm {percentile(row.warm_ms, 50):.1f} ms"
        )
        rows.append(row)
    queries = measure.latency_questions(library.books, sizes.queries, 0)
    embed = await measure.embed_ms(p, queries)
    build = Build(
        books=len(library.books),
        passages=library.passages,
        size_bytes=library.bytes,
        prepare_s=library.prepare_s,
        store_s=library.store_s,
        vectors_s=library.vectors_s,
        base_db_bytes=library.base_db_bytes,
    )
    return rows, build, embed, width


async def collect(
    sizes: Sizes,
    *,
    embedder_key: str = "embedded",
    tune_seed: int = TUNE_SEED,
    held_out: tuple[int, ...] = HELD_OUT,
    short: bool = False,
) -> Run:
    clock = Clock()
    embedder = EMBEDDERS[embedder_key]
    seeds = [tune_seed, *[s for s in held_out if s != tune_seed]]
    with ModelDouble() as double:
        async with player(embedder, double) as p:
            await measure.stop_indexer(p)
            with clock.part("import"):
                imported, towns, people = await part_import(p, sizes)
            with clock.part("recall"):
                recall = await part_recall(p, sizes, seeds)
        async with player(embedder, double) as p:  # a fresh database for the latency
            await measure.stop_indexer(p)
            with clock.part("latency"):
                latency, build, embed, width = await part_latency(p, sizes)
    return Run(
        embedder=embedder.label,
        width=width,
        machine=machine_description(),
        short=short,
        book_seed=BOOK_SEED,
        book_towns=towns,
        book_people=people,
        imported=imported,
        index_limit_s=sizes.index_limit_s,
        tune_seed=tune_seed,
        held_out=seeds[1:],
        recall=recall,
        latency=latency,
        build=build,
        embed_ms=embed,
        cold_queries=sizes.cold,
        cores=os.cpu_count() or 1,
        loads=clock.loads,
        seconds=clock.seconds,
    )


def load(path: Path) -> Run:
    """A run stored by ``--json``, as it was measured."""
    data = json.loads(path.read_text())

    def asked(item: dict[str, Any]) -> measure.Asked:
        returned = {k: [(int(i), float(x)) for i, x in v] for k, v in item["returned"].items()}
        return measure.Asked(**(item | {"returned": returned}))

    recall = [
        SeedRecall(
            **(
                s
                | {
                    "imported": measure.Imported(**s["imported"]),
                    "asked": [asked(a) for a in s["asked"]],
                }
            )
        )
        for s in data["recall"]
    ]
    return Run(
        **(
            data
            | {
                "imported": measure.Imported(**data["imported"]),
                "recall": recall,
                "latency": [measure.Latency(**row) for row in data["latency"]],
                "build": Build(**data["build"]),
                "held_out": list(data["held_out"]),
                "loads": {k: (v[0], v[1]) for k, v in data["loads"].items()},
            }
        )
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--write", type=Path, help="store the section in this Markdown file")
    parser.add_argument("--short", action="store_true", help="small sizes (about two minutes)")
    parser.add_argument("--embedder", choices=sorted(EMBEDDERS), default="embedded")
    parser.add_argument("--tune-seed", type=int, default=TUNE_SEED)
    parser.add_argument("--seeds", type=int, nargs="*", default=list(HELD_OUT), help="held out")
    parser.add_argument("--json", type=Path, help="also store every record here")
    parser.add_argument(
        "--from-json", type=Path, help="measure nothing: report a run stored by --json"
    )
    args = parser.parse_args(argv)
    sizes = SHORT if args.short else FULL
    if args.from_json:
        run = load(args.from_json)
    else:
        run = asyncio.run(
            collect(
                sizes,
                embedder_key=args.embedder,
                tune_seed=args.tune_seed,
                held_out=tuple(args.seeds),
                short=args.short,
            )
        )
    body = markdown(run)
    publish(body, args.write, SECTION, TITLE)
    if args.json:
        args.json.write_text(json.dumps(dataclasses.asdict(run), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
