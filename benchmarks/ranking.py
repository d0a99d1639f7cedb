"""Memory ranking: what ranking a Memory Bank of 25 to 5,000 memories costs, warm, cold,
after a restart and after a change, and the memory its cache entry holds.

Each bank is one adventure of a migrated SQLite file, its rows as the memory and embedding
passes store them (random unit vectors); the section written says what each column times.
BLAS runs on one thread, set before NumPy loads; the measurements go round-robin over the
sizes, so that a busy moment on the machine falls on all of them alike.

    .venv/bin/python -m benchmarks.ranking [--write docs/benchmarks.md]
"""

from __future__ import annotations

import os

# One BLAS thread, set before NumPy is first imported (OpenBLAS reads it at load): on a
# 2-core VM, BLAS threads fight the interpreter and each other for the cores, and a
# matrix-vector product of a few MB gains nothing from them; the app's worker threads
# would fight them the same way.
os.environ.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")

import gc
import heapq
import random
import statistics
import sys
import tempfile
import time
import tracemalloc
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from benchmarks.kit.providers import memory_row, unit_vector
from benchmarks.kit.report import Clock, arguments, publish
from sqlalchemy import insert
from sqlalchemy.orm import Session, sessionmaker

from talekeeper.services.memory.arrays import Bank, lineage_mask
from talekeeper.services.memory.bank import set_pinned
from talekeeper.services.memory.cache import SNAPSHOT_AFTER, BankCache, build, pack
from talekeeper.services.memory.evidence import names
from talekeeper.services.memory.keyset import QUANTIZE_AT
from talekeeper.services.memory.ranking import rank
from talekeeper.services.memory.scoring import WEIGHTS, Ranking
from talekeeper.services.memory.snapshot import Snapshots
from talekeeper.services.memory.terms import term_set, terms
from talekeeper.storage.db import make_engine, make_session_factory, session_scope
from talekeeper.storage.migrate import upgrade
from talekeeper.storage.models import Adventure, Branch, Memory, MemoryKey
from talekeeper.storage.repositories.memory import BankRow, MemoryRepository
from talekeeper.storage.repositories.memory_keys import KeyRepository, KeyRow
from talekeeper.storage.repositories.users import UserRepository

SIZES = (25, 200, 400, 5_000)
MODEL = "bench"
TOP_K = 5
ROUNDS = 5
SEED = 11
QUERIES = 64  # distinct (input text, two query vectors) triples, cycled
DEPTHS_PER_MEMORY = 10  # a memory for about every ten actions of story
FORK_AT = 0.7  # the current path leaves the main branch at 70% of the story
ON_FORK = 0.2  # a fifth of the memories were written on the fork
PIN_EVERY = 97  # a pinned memory now and then
# Evidence keys a memory: the dense recall set's blocks of six actions (every action
# carrying facts) gave about this many passages a memory (docs/benchmarks.md).
KEYS_PER_MEMORY = 12
COMMAND = ".venv/bin/python -m benchmarks.ranking --write docs/benchmarks.md"

# Timed calls per size, all rounds together.
WARM_CALLS = {25: 3_000, 200: 3_000, 400: 3_000, 5_000: 1_000}
PATH_CALLS = {25: 1_000, 200: 1_000, 400: 1_000, 5_000: 300}
COLD_CALLS = {25: 500, 200: 300, 400: 300, 5_000: 30}
LOOP_CALLS = {25: 100, 200: 15, 400: 10, 5_000: 5}

TARGETS = (  # (what, size, median limit in ms)
    ("warm", 400, 0.2),
    ("warm", 5_000, 5.0),
    ("cold", 400, 2.0),
    ("warm", 5_000, 10.0),
    ("restart", 5_000, 200.0),
)

# -- the story's words ---------------------------------------------------------------------


def _listed(text: str) -> tuple[str, ...]:
    return tuple(text.split(", "))


_FIRST = _listed(
    "Maren, Alric, Vane, Pip, Haddow, Isolde, Corwin, Brisa, Tamsin, Oskar, Liesel, Dunstan, "
    "Wren, Ysolde, Garrick, Mireille, Fenwick, Odile, Bram, Sabeth, Rook, Talia, Emeric, "
    "Nessa, Jory, Ilse, Caspian, Hollis, Petra, Anselm, Verity, Quill, Morrow, Edda, Lucan, "
    "Sorrel, Thane, Ondine, Barnaby, Cressida"
)
_TITLES = _listed("Captain, Keeper, Old, Sister, Brother, Lady, Master, Widow")
_PLACES = _listed(
    "chapel crypt, lighthouse gallery, salt warehouse, tide caves, harbor master's office, "
    "drowned bell tower, smugglers' cove, ledger house, north breakwater, fish market, "
    "cliff road shrine, abandoned cannery, customs shed, widow's walk, lower docks, "
    "old mill race, sunken garden, ropewalk, signal station, tannery yard, chandlery, "
    "hermit's hut, sea wall steps, gull rock, night market, kelp flats, copper mine, "
    "ferry landing, boathouse loft, monastery library"
)
_ITEMS = _listed(
    "brass key, tide chart, sealed letter, silver compass, bone whistle, ledger page, "
    "lantern lens, signet ring, oilskin map, copper coin, glass eye, blue ribbon, "
    "ship's bell clapper, salt-stained journal, rusted cutlass, wax seal, pearl earring, "
    "barrel of brandy, hooded cloak, music box, spyglass, iron nail, apothecary vial, "
    "prayer beads, harpoon head, tin soldier, lock of hair, deed to the cannery, "
    "forged pardon, carved driftwood fox"
)
_EVENTS = _listed(
    "spring storm, harvest fair, last eclipse, night of the fire, wreck of the Gannet, "
    "midwinter vigil, customs raid, flood tide festival, duel on the pier, mayor's funeral"
)
_VERBS = _listed("hid, buried, sold, stole, lost, found, pawned, guarded")
_HIDES = _listed("under, behind, inside, beneath, near")
_PICKS = {"item": _ITEMS, "place": _PLACES, "event": _EVENTS, "verb": _VERBS, "prep": _HIDES}
_FACTS = (
    "{a} {verb} the {item} {prep} the {place}.",
    "{a} owes {b} {n} silver for the {item}; the debt falls due before the {event}.",
    "The {item} was last seen in the {place}, wrapped in sailcloth. {b} knows who took it.",
    "{a} told {b} that the {place} is watched at night. {b} went anyway after the {event}.",
    "{a} and {b} quarrelled at the {place} over the {item} during the {event}.",
    "{a} keeps the {item} on a cord around the neck and never enters the {place}.",
    "Since the {event}, {a} has worked at the {place} and sends letters to {b}.",
)
_HEDGED = (
    "{a} seems to distrust {b} since the {event}.",
    "{b} may have taken the {item} from the {place} during the {event}.",
    "Rumour says {a} buried the {item} somewhere near the {place}.",
)
_ACTIONS = (
    "I ask {a} where the {item} is hidden",
    "I search the {place} for the {item}",
    'I say "{a}, what happened at the {place} during the {event}?"',
    "I show {b} the {item} and ask about {a}",
    "I follow {a} to the {place}",
    "I ask {b} about the {event}",
)


def _name(rng: random.Random) -> str:
    first = rng.choice(_FIRST)
    return f"{rng.choice(_TITLES)} {first}" if rng.random() < 0.2 else first


def _fill(rng: random.Random, template: str) -> str:
    a = _name(rng)
    b = _name(rng)
    while b == a:
        b = _name(rng)
    picks = {key: rng.choice(words) for key, words in _PICKS.items()}
    text = template.format(a=a, b=b, **picks, n=rng.randint(2, 90))
    return text[0].upper() + text[1:]


def memory_text(rng: random.Random) -> str:
    return _fill(rng, rng.choice(_HEDGED if rng.random() < 0.15 else _FACTS))


# -- the banks ---------------------------------------------------------------------------------


@dataclass
class Samples:
    ms: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.ms)

    @property
    def p95(self) -> float:
        ordered = sorted(self.ms)
        return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


@dataclass
class Story:
    """One adventure's bank in the database, the queries ranked against it, and what was
    measured on it."""

    sessions: sessionmaker[Session]
    size: int
    adventure_id: int
    lineage: tuple[tuple[int, int | None], ...]
    loop_rows: list[array[float]]  # every memory's vector, for the pure-Python loop
    queries: list[tuple[str, np.ndarray, np.ndarray]]  # (input text, q_in, q_ctx)
    mean_terms: float
    considered: int = 0
    distinct_terms: int = 0
    snapshot_bytes: int = 0
    times: dict[str, Samples] = field(default_factory=dict)
    footprint: dict[str, int] = field(default_factory=dict)

    def t(self, name: str) -> Samples:
        return self.times.setdefault(name, Samples())

    def bank(self, cache: BankCache) -> Bank:
        """The bank as ``cache`` gives it, in a session of its own."""
        with session_scope(self.sessions) as session:
            return cache.bank(session, self.adventure_id, MODEL)

    def rank(self, bank: Bank, q: int, with_terms: bool = True) -> Ranking:
        """Query ``q`` ranked as retrieval ranks it: the lineage mask, the input terms."""
        text, q_in, q_ctx = self.queries[q % QUERIES]
        input_terms = terms(text) if with_terms else ()
        return rank(bank, lineage_mask(bank, self.lineage), q_in, q_ctx, input_terms, TOP_K)

    def toggle_pins(self, ids: list[int], cache: BankCache) -> None:
        """A change ranking must see, for each of ``ids``: its pin toggled."""
        with session_scope(self.sessions) as session:
            for memory_id in ids:
                memory = session.get(Memory, memory_id)
                assert memory is not None
                set_pinned(session, memory, not memory.pinned, cache)


def build_story(sessions: sessionmaker[Session], size: int) -> Story:
    """An adventure of the local user whose path forks off the main branch, with ``size``
    memories."""
    rng = random.Random(SEED + size)
    vrng = np.random.default_rng(SEED + size)
    length = max(size * DEPTHS_PER_MEMORY, 20)
    fork = int(length * FORK_AT)
    with session_scope(sessions) as session:
        user_id = UserRepository(session).local_user().id
        adventure = Adventure(user_id=user_id, title=f"Ranking bench, {size} memories")
        session.add(adventure)
        session.flush()
        main = Branch(adventure_id=adventure.id, parent_id=None, fork_depth=0, name="Main")
        session.add(main)
        session.flush()
        side = Branch(adventure_id=adventure.id, parent_id=main.id, fork_depth=fork, name="Fork")
        session.add(side)
        session.flush()
        adventure.current_branch_id = side.id
        rows: list[dict[str, Any]] = []
        for i in range(size):
            on_fork = rng.random() < ON_FORK
            depth = rng.randrange(fork, length) if on_fork else rng.randrange(0, length)
            rows.append(
                memory_row(
                    memory_text(rng),
                    unit_vector(vrng),
                    (max(0, depth - DEPTHS_PER_MEMORY + 1), depth),
                    adventure_id=adventure.id,
                    branch_id=side.id if on_fork else main.id,
                    vector_model=MODEL,
                    writer="bench",
                    pinned=i % PIN_EVERY == PIN_EVERY - 1,
                    keyed=True,
                    revision=i + 1,
                )
            )
        memories = session.execute(insert(Memory).returning(Memory.id, Memory.depth), rows)
        session.execute(insert(MemoryKey), _keys(adventure.id, memories.all(), rng, vrng))
        adventure.memory_revision = len(rows)  # the counter later changes take theirs from
        lineage = ((side.id, None), (main.id, fork - 1))
        mean_terms = statistics.fmean(len(r["terms"].split()) for r in rows)
        adventure_id = adventure.id
    queries = [
        (_fill(rng, rng.choice(_ACTIONS)), unit_vector(vrng), unit_vector(vrng))
        for _ in range(QUERIES)
    ]
    loop_rows = [array("f", r["vector"]) for r in rows]
    return Story(sessions, size, adventure_id, lineage, loop_rows, queries, mean_terms)


def _keys(
    adventure_id: int, memories: Sequence[Any], rng: random.Random, vrng: np.random.Generator
) -> list[dict[str, Any]]:
    """``KEYS_PER_MEMORY`` evidence keys of each of ``memories`` (id, depth), as the
    embedding pass stores them."""
    keys: list[dict[str, Any]] = []
    for memory_id, depth in memories:
        for position in range(KEYS_PER_MEMORY):
            text = memory_text(rng)
            keys.append(
                {
                    "memory_id": memory_id,
                    "adventure_id": adventure_id,
                    "position": position,
                    "depth": depth,
                    "text": text,
                    "terms": " ".join(sorted(term_set(text))),
                    "names": " ".join(sorted(names(text))),
                    "vector": pack(unit_vector(vrng).tolist()),
                    "vector_model": MODEL,
                }
            )
    return keys


# -- what is timed ---------------------------------------------------------------------------


def warm_path(cache: BankCache, story: Story, q: int) -> int:
    """As ``retrieval`` runs it, less the embedding call: ``_bank`` then ``_rank``."""
    text, q_in, q_ctx = story.queries[q % QUERIES]
    bank = story.bank(cache)
    considered = int(lineage_mask(bank, story.lineage).sum()) if bank.size else 0
    input_terms = terms(text)
    with session_scope(story.sessions) as session:
        mask = lineage_mask(bank, story.lineage)
        ranking = rank(bank, mask, q_in, q_ctx, input_terms, TOP_K)
        rows = MemoryRepository(session).texts([s.id for s in ranking.chosen])
        chosen = [rows[s.id].text for s in ranking.chosen if s.id in rows]
    return considered + len(chosen)


def restart(snapshots: Snapshots, story: Story, q: int) -> Ranking:
    """The first turn after a restart: a new cache over the snapshot folder, then ``rank``."""
    return story.rank(story.bank(BankCache(snapshots=snapshots, snapshot_at=10**9)), q)


def snapshot_now(snapshots: Snapshots, story: Story) -> int:
    """The story's snapshot written as its bank is now; its size in bytes."""
    writer = BankCache(snapshots=snapshots, snapshot_at=1)
    story.bank(writer)
    writer.wait_saved()
    return snapshots.path(story.adventure_id, MODEL).stat().st_size


def python_loop(story: Story, q: int) -> list[tuple[float, int]]:
    """Every row's cosine with both query vectors (unit vectors: dot products), top 5."""
    _, q_in, q_ctx = story.queries[q % QUERIES]
    qi, qc = array("f", q_in.tobytes()), array("f", q_ctx.tobytes())
    scores = []
    for i, row in enumerate(story.loop_rows):
        cos_in = sum(a * b for a, b in zip(row, qi, strict=True))
        cos_ctx = sum(a * b for a, b in zip(row, qc, strict=True))
        scores.append((WEIGHTS.input * cos_in + WEIGHTS.context * cos_ctx, i))
    return heapq.nlargest(TOP_K, scores)


# -- footprint -------------------------------------------------------------------------------


def deep_size(obj: Any, seen: set[int]) -> int:
    """Bytes reachable from ``obj`` (each object once): containers, instances, arrays and
    the buffers they view."""
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj)  # an array that owns its data counts its data here
    if isinstance(obj, np.ndarray):
        return size + (deep_size(obj.base, seen) if obj.base is not None else 0)
    if isinstance(obj, dict):
        return size + sum(deep_size(k, seen) + deep_size(v, seen) for k, v in obj.items())
    if isinstance(obj, list | tuple | set | frozenset):
        return size + sum(deep_size(x, seen) for x in obj)
    if hasattr(obj, "__dict__"):
        return size + deep_size(vars(obj), seen)
    slots = getattr(type(obj), "__slots__", ())
    return size + sum(deep_size(getattr(obj, name), seen) for name in slots if hasattr(obj, name))


def footprint(story: Story) -> dict[str, int]:
    """Bytes held by the story's cache entry, by part, as the table's columns name them."""
    gc.collect()
    tracemalloc.start()
    cache = BankCache()
    story.bank(cache)
    gc.collect()
    retained, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    entry = cache._entries[story.adventure_id]  # the benchmark looks inside on purpose
    bank = entry.bank
    assert bank is not None
    columns = (bank.ids, bank.branch_ids, bank.depths, bank.pinned, bank.heuristic)
    keys, key_total, key_vectors, code_bytes = bank.keys, 0, 0, 0
    if keys is not None:
        key_total, key_vectors = deep_size(keys, set()), keys.vectors.nbytes
        if (c := keys.codes) is not None:
            code_bytes = sum(a.nbytes for a in (c.columns, c.sums, c.scale, c.error, c.norm))
    return {
        "vectors": bank.vectors.nbytes,
        "columns": sum(c.nbytes for c in columns),
        "postings": deep_size(bank.postings, set()),
        "key vectors": key_vectors,
        "key codes": code_bytes,
        "keys, other": max(0, key_total - key_vectors - code_bytes),
        "entry total": deep_size(entry, set()),
        "build peak": peak,  # tracemalloc's, while a fresh cache reads and builds the bank
        "retained": retained,  # what stays allocated after the build: the cache
    }


# -- the run ---------------------------------------------------------------------------------


def timed(calls: int, *timers: tuple[Samples, Callable[[int], object]]) -> None:
    """``calls`` calls of each function, taken in turn call by call (so a busy moment
    weighs on all alike), each call's time in its samples."""
    for q in range(calls):
        for samples, fn in timers:
            started = time.perf_counter()
            fn(q)
            samples.ms.append((time.perf_counter() - started) * 1000)


def bench(sizes: list[int], rounds: int) -> list[Story]:
    with tempfile.TemporaryDirectory(prefix="talekeeper-ranking-") as root:
        engine = make_engine(f"sqlite:///{Path(root) / 'bench.sqlite'}")
        try:
            upgrade(engine)
            sessions = make_session_factory(engine)
            stories = [build_story(sessions, size) for size in sizes]
            measure(stories, rounds, Snapshots(Path(root) / "banks"))
            return stories
        finally:
            engine.dispose()


def measure(stories: list[Story], rounds: int, snapshots: Snapshots) -> None:
    cache = BankCache()
    for story in stories:
        bank = story.bank(cache)
        assert bank.size == story.size, (bank.size, story.size)
        story.considered = int(lineage_mask(bank, story.lineage).sum())
        story.distinct_terms = len(bank.postings)
        story.snapshot_bytes = snapshot_now(snapshots, story)
        # Warm-up: compiled SQL, NumPy's first calls, the regex.
        for q in range(20):
            story.rank(bank, q)
            warm_path(cache, story, q)
            story.rank(story.bank(BankCache()), q)
            restart(snapshots, story, q)
    for _ in range(rounds):
        for story in stories:
            gc.collect()
            one_round(cache, snapshots, story, rounds)
    for story in stories:
        story.footprint = footprint(story)


def one_round(cache: BankCache, snapshots: Snapshots, story: Story, rounds: int) -> None:
    """A round's share of every measurement of ``story``."""
    n = story.size
    bank = story.bank(cache)

    def read(q: int = 0) -> tuple[list[BankRow], list[KeyRow]]:
        """A cold build's reads: the revision check, then the bank's rows and keys."""
        with session_scope(story.sessions) as session:
            repo = MemoryRepository(session)
            repo.bank_state(story.adventure_id)
            rows = repo.bank_rows(story.adventure_id)
            return rows, KeyRepository(session).bank_keys(adventure_id=story.adventure_id)

    records, keys = read()
    keyed: dict[int, list[KeyRow]] = {}
    for key in keys:
        keyed.setdefault(key.memory_id, []).append(key)

    def product(q: int) -> Any:
        _, q_in, q_ctx = story.queries[q % QUERIES]
        return bank.vectors @ q_in, bank.vectors @ q_ctx

    warm, colds = WARM_CALLS.get(n, 1000) // rounds, max(COLD_CALLS.get(n, 30) // rounds, 1)
    timed(
        warm,
        (story.t("warm"), lambda q: story.rank(bank, q)),
        (story.t("warm_no_terms"), lambda q: story.rank(bank, q, with_terms=False)),
    )
    timed(warm, (story.t("terms"), lambda q: terms(story.queries[q % QUERIES][0])))
    timed(PATH_CALLS.get(n, 300) // rounds, (story.t("path"), lambda q: warm_path(cache, story, q)))
    timed(colds, (story.t("cold"), lambda q: story.rank(story.bank(BankCache()), q)))
    timed(colds, (story.t("cold_read"), read))
    timed(colds, (story.t("cold_build"), lambda q: build(records, keyed)))
    # The first turn after a restart: the snapshot as written, then behind the database.
    snapshot_now(snapshots, story)
    restarts = max(colds, 3)
    timed(restarts, (story.t("restart"), lambda q: restart(snapshots, story, q)))
    ids = sorted(int(i) for i in bank.ids)  # every memory is active: the whole bank
    moved = ids[:: max(1, len(ids) // SNAPSHOT_AFTER)][:SNAPSHOT_AFTER]
    story.toggle_pins(moved, cache)
    timed(restarts, (story.t("restart_behind"), lambda q: restart(snapshots, story, q)))
    story.toggle_pins(moved, cache)  # back as they were
    # One memory changed, then the cached bank refreshed (twice each: back as it was).
    story.bank(cache)
    for q in range(restarts):
        for _ in range(2):
            story.toggle_pins([ids[(q * 7919) % len(ids)]], cache)
            timed(1, (story.t("refresh"), lambda _q: story.bank(cache)))
    bank = story.bank(cache)
    timed(warm, (story.t("numpy"), product))
    loops = max(LOOP_CALLS.get(n, 5) // rounds, 1)
    timed(loops, (story.t("python"), lambda q: python_loop(story, q)))


# -- the report ------------------------------------------------------------------------------


def _ms(value: float) -> str:
    return f"{value:.3f}" if value < 1 else f"{value:.2f}" if value < 100 else f"{value:.0f}"


def _kb(value: int) -> str:
    return f"{value / 1024:,.0f} KB" if value < 1024 * 1024 else f"{value / 2**20:.2f} MB"


def _spread(samples: Samples) -> str:
    return f"{_ms(samples.median)} ({_ms(samples.p95)})"


def target_lines(results: list[Story]) -> list[str]:
    by_size = {r.size: r for r in results}
    lines = []
    for what, size, limit in TARGETS:
        if (r := by_size.get(size)) is None:
            continue
        median = r.t(what).median
        verdict = (
            f"**met** ({_ms(median)} ms)"
            if median <= limit
            else f"**missed** by {_ms(median - limit)} ms, {median / limit - 1:.0%} over "
            f"({_ms(median)} ms)"
        )
        lines.append(f"- {what} median ≤ {limit:g} ms at {size:,} memories: {verdict}")
    return lines


def markdown(results: list[Story], rounds: int, clock: Clock) -> str:
    lines = [
        "Cost of ranking one adventure's bank as retrieval does it each turn: two query "
        f"vectors (the player's input and the scene), the hybrid score ({WEIGHTS.input:g}·"
        f"cos(input) + {WEIGHTS.context:g}·cos(context) + {WEIGHTS.lexical:g}·lexical), the "
        "lineage mask and the top 5 with duplicate suppression. A migrated SQLite file holds "
        f"one adventure per size whose path forks off the main branch at {FORK_AT:.0%} of the "
        f"story, {ON_FORK:.0%} of the memories written on the fork, so the mask leaves out the "
        'main branch\'s memories past the fork ("considered"). Memories are seeded 1-2 sentence '
        "texts about names, places and items, with their terms as the memory pass stores them "
        "and 384-dimension random unit vectors (`bank.pack`, float32); each memory has "
        f"{KEYS_PER_MEMORY} evidence keys (seeded sentences, their terms and vectors), scored "
        "beside it as retrieval does (a memory scores as its best key), so 5,000 memories are "
        f"{5_000 * (KEYS_PER_MEMORY + 1):,} scored rows. Times are medians (p95) in ms over "
        f"{rounds} rounds taken round-robin over the sizes, after a warm-up. BLAS on one "
        "thread (`OPENBLAS_NUM_THREADS=1`, also OMP/MKL, set before NumPy loads: on a 2-core "
        f"VM BLAS threads fight the interpreter and each other). NumPy {np.__version__}. "
        + clock.footer(),
        "",
        "- **warm**: `rank(bank, lineage_mask(bank, lineage), q_in, q_ctx, "
        "terms(input_text), 5)` on the cached bank, timed as a whole;",
        "- **no terms**: the same with no input terms; **lexical share** = 1 − no terms / "
        "warm (the tokenizer, the postings and the lexical score); `terms()`: the "
        "tokenizer alone on the input text;",
        "- **warm + check**: the whole warm path as `retrieval` runs it less the embedding "
        "call: the cache's revision check query, the mask, the input terms, `rank`, and the "
        "chosen memories' texts read, in two short sessions;",
        "- **NumPy product**: the two matrix-vector products alone;",
        "- **pure Python**: a cosine loop over `array('f')` vectors, every row and both "
        "query vectors, then the top 5 (no lexical part, no mask), for scale.",
        "",
        "| memories | considered | warm | no terms | lexical share | `terms()` | warm + check "
        "| NumPy product | pure Python |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        warm, bare = r.t("warm"), r.t("warm_no_terms")
        lines.append(
            f"| {r.size:,} | {r.considered:,} | {_spread(warm)} | {_ms(bare.median)} "
            f"| {max(0.0, 1 - bare.median / warm.median):.0%} | {_ms(r.t('terms').median)} "
            f"| {_spread(r.t('path'))} | {_ms(r.t('numpy').median)} "
            f"| {_ms(r.t('python').median)} |"
        )
    lines += [
        "",
        "A bank not in the cache, and one that changed:",
        "",
        "- **cold**: a fresh `BankCache` with no snapshot (every row and key read from "
        "SQLite, the arrays built) and `rank`, session included; then where that goes, each "
        "part timed on its own: a session with the revision check and the read of the "
        "bank's rows and keys (`bank_state`, `bank_rows`, `bank_keys`); `bank.build` over "
        "them as read (the matrices from the joined blobs, the postings from the terms "
        "text, the keys' int8 codes); the rest is the warm `rank` and freeing the previous "
        "cache;",
        "- **restart**: the first turn after a restart: a fresh `BankCache` over the bank's "
        "snapshot file (`services/memory/snapshot.py`, mapped, not copied) and `rank`; "
        f"**{SNAPSHOT_AFTER} moved**: the same with {SNAPSHOT_AFTER} memories changed since "
        "the snapshot (the most a running server lets it fall behind), read from SQLite and "
        "patched in;",
        "- **refresh**: one memory changed (its pin toggled), then the cached bank refreshed "
        "(`BankCache.bank`: the changed row and its keys read, and patched in);",
        "- **snapshot**: the snapshot file's size.",
        "",
        "| memories | cold | session + SQL read | `bank.build` | rest | restart "
        f"| {SNAPSHOT_AFTER} moved | refresh | snapshot |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        cold, read, built, warm_ms = (
            r.t(k).median for k in ("cold", "cold_read", "cold_build", "warm")
        )
        lines.append(
            f"| {r.size:,} | {_spread(r.t('cold'))} | {_ms(read)} | {_ms(built)} "
            f"| {_ms(cold - read - built - warm_ms)} | {_spread(r.t('restart'))} "
            f"| {_spread(r.t('restart_behind'))} | {_spread(r.t('refresh'))} "
            f"| {_kb(r.snapshot_bytes)} |"
        )
    lines += [
        "",
        "Memory held by the cache entry per bank (`sys.getsizeof` over everything the "
        "entry reaches, shared objects once): the bank's vector matrix and columns (ids, "
        "branches, depths, pinned, heuristic), the postings (the vocabulary, its index and "
        "the flat row arrays), the keys' vector matrix, their int8 codes (from "
        f"{QUANTIZE_AT:,} keys), and the rest of the keys (ids, owners, depths, runs, "
        "postings, names). Build peak is tracemalloc's peak while a fresh cache reads the "
        "rows and builds the bank; retained is what stays allocated after it.",
        "",
        "| memories | distinct terms | terms/memory | vectors | columns | postings "
        "| key vectors | key codes | keys, other | entry total | per memory | build peak "
        "| retained |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        cells = [f"{r.size:,}", f"{r.distinct_terms:,}", f"{r.mean_terms:.1f}"]
        cells += [_kb(value) for value in r.footprint.values()]
        cells.insert(-2, f"{r.footprint['entry total'] / max(r.size, 1) / 1024:.1f} KB")
        lines.append("| " + " | ".join(cells) + " |")
    mean_input = statistics.fmean(len(terms(t)) for r in results for t, _, _ in r.queries)
    lines += [
        "",
        f"Input texts: short player actions, {mean_input:.1f} terms on average.",
        "",
        "Targets:",
        "",
        *target_lines(results),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = arguments(__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args(argv)
    clock = Clock(COMMAND)
    results = bench(args.sizes, args.rounds)
    clock.stop()
    publish(markdown(results, args.rounds, clock), args.write, "ranking", "Memory ranking")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
