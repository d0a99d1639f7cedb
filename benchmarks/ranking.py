"""Memory ranking: the hybrid score over banks of 25, 200, 400 and 5,000 memories.

A migrated SQLite file holds one adventure per bank size, each with two branches
(the current path forks off the main branch, so the lineage mask leaves part of
the bank out) and N memories: seeded 1-2 sentence texts about names, places and
items, terms as the memory pass stores them, 384-dimension random unit vectors
packed with ``bank.pack``; each memory with ``KEYS_PER_MEMORY`` evidence keys (seeded
sentences with their terms and vectors, as the embedding pass stores them), so every
timing includes scoring the keys. Then, for each size:

- warm: ``BankCache.bank`` once, then
  ``rank(bank, lineage_mask(bank, lineage), q_in, q_ctx, terms(input_text), 5)``
  timed as a whole, and the same with no input terms (the lexical part's share);
- warm, with the revision check: the whole path as ``retrieval`` runs it (the
  cache's revision check query, the mask, the input terms, ``rank``, reading the
  chosen memories' texts, in two short sessions);
- cold: a fresh ``BankCache`` each time (the rows read from the database, the
  arrays built) and ``rank``;
- restart: a fresh ``BankCache`` over the bank's snapshot file (``snapshot``), exactly
  as it was written, and with ``SNAPSHOT_AFTER`` memories changed since (read from the
  database and patched in), then ``rank``: the first turn after a restart;
- refresh: one memory changed (its pin toggled), then the cached bank refreshed (the
  changed row read and patched in);
- for scale: the two NumPy matrix-vector products alone, and a pure-Python
  cosine loop over ``array('f')`` vectors (every row, both query vectors);
- the memory the cache entry holds, and tracemalloc's peak while building it.

Measurements go round-robin over the sizes in ``ROUNDS`` rounds, so a busy moment
on the machine falls on all of them alike.

    .venv/bin/python benchmarks/ranking.py [--write docs/benchmarks.md]

Targets: a warm median of at most 0.2 ms at 400 memories and 5 ms at 5,000, and a
cold median of at most 2 ms at 400 (the first wave's); a warm median of at most 10 ms at
5,000 and the first turn after a restart at most 200 ms at 5,000 (with evidence keys).
"""

from __future__ import annotations

import os

# One BLAS thread, set before NumPy is first imported (OpenBLAS reads it at load): on a
# 2-core VM, BLAS threads fight the interpreter and each other for the cores, and a
# matrix-vector product of a few MB gains nothing from them; the app's worker threads
# would fight them the same way.
BLAS_THREADS = "1"
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = BLAS_THREADS

import argparse  # noqa: E402
import gc  # noqa: E402
import heapq  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from array import array  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
from sqlalchemy import insert, select  # noqa: E402
from sqlalchemy.orm import Session, sessionmaker  # noqa: E402

from benchmarks.kit.report import machine_description, publish  # noqa: E402
from talekeeper.services.memory.authority import classify  # noqa: E402
from talekeeper.services.memory.bank import (  # noqa: E402
    SNAPSHOT_AFTER,
    BankCache,
    build,
    pack,
    set_pinned,
)
from talekeeper.services.memory.evidence import names  # noqa: E402
from talekeeper.services.memory.keyset import QUANTIZE_AT  # noqa: E402
from talekeeper.services.memory.ranking import (  # noqa: E402
    CONTEXT_WEIGHT,
    INPUT_WEIGHT,
    LEXICAL_WEIGHT,
    Bank,
    lineage_mask,
    rank,
)
from talekeeper.services.memory.snapshot import Snapshots  # noqa: E402
from talekeeper.services.memory.terms import term_set, terms  # noqa: E402
from talekeeper.storage.db import make_engine, make_session_factory, session_scope  # noqa: E402
from talekeeper.storage.migrate import upgrade  # noqa: E402
from talekeeper.storage.models import Adventure, Branch, Memory, MemoryKey, User  # noqa: E402
from talekeeper.storage.repositories.memory import MemoryRepository  # noqa: E402
from talekeeper.storage.repositories.memory_keys import KeyRepository  # noqa: E402

SIZES = (25, 200, 400, 5_000)
DIMS = 384
MODEL = "bench"
TOP_K = 5
ROUNDS = 5
QUERIES = 64  # distinct (input text, two query vectors) triples, cycled
DEPTHS_PER_MEMORY = 10  # a memory for about every ten actions of story
FORK_AT = 0.7  # the current path leaves the main branch at 70% of the story
ON_FORK = 0.2  # a fifth of the memories were written on the fork
PIN_EVERY = 97  # a pinned memory now and then
# Evidence keys a memory: the dense recall set's blocks of six actions (every action
# carrying facts) gave about this many passages a memory (docs/benchmarks.md).
KEYS_PER_MEMORY = 12

# Timed calls per size, all rounds together.
WARM_CALLS = {25: 3_000, 200: 3_000, 400: 3_000, 5_000: 1_000}
PATH_CALLS = {25: 1_000, 200: 1_000, 400: 1_000, 5_000: 300}
COLD_CALLS = {25: 500, 200: 300, 400: 300, 5_000: 30}
NUMPY_CALLS = {25: 3_000, 200: 3_000, 400: 3_000, 5_000: 1_000}
LOOP_CALLS = {25: 100, 200: 15, 400: 10, 5_000: 5}

TARGETS = (  # (what, size, median limit in ms)
    ("warm", 400, 0.2),
    ("warm", 5_000, 5.0),
    ("cold", 400, 2.0),
    ("warm", 5_000, 10.0),
    ("restart", 5_000, 200.0),
)

# -- the story's words ---------------------------------------------------------------------

_FIRST = (
    "Maren",
    "Alric",
    "Vane",
    "Pip",
    "Haddow",
    "Isolde",
    "Corwin",
    "Brisa",
    "Tamsin",
    "Oskar",
    "Liesel",
    "Dunstan",
    "Wren",
    "Ysolde",
    "Garrick",
    "Mireille",
    "Fenwick",
    "Odile",
    "Bram",
    "Sabeth",
    "Rook",
    "Talia",
    "Emeric",
    "Nessa",
    "Jory",
    "Ilse",
    "Caspian",
    "Hollis",
    "Petra",
    "Anselm",
    "Verity",
    "Quill",
    "Morrow",
    "Edda",
    "Lucan",
    "Sorrel",
    "Thane",
    "Ondine",
    "Barnaby",
    "Cressida",
)
_TITLES = ("Captain", "Keeper", "Old", "Sister", "Brother", "Lady", "Master", "Widow")
_PLACES = (
    "chapel crypt",
    "lighthouse gallery",
    "salt warehouse",
    "tide caves",
    "harbor master's office",
    "drowned bell tower",
    "smugglers' cove",
    "ledger house",
    "north breakwater",
    "fish market",
    "cliff road shrine",
    "abandoned cannery",
    "customs shed",
    "widow's walk",
    "lower docks",
    "old mill race",
    "sunken garden",
    "ropewalk",
    "signal station",
    "tannery yard",
    "chandlery",
    "hermit's hut",
    "sea wall steps",
    "gull rock",
    "night market",
    "kelp flats",
    "copper mine",
    "ferry landing",
    "boathouse loft",
    "monastery library",
)
_ITEMS = (
    "brass key",
    "tide chart",
    "sealed letter",
    "silver compass",
    "bone whistle",
    "ledger page",
    "lantern lens",
    "signet ring",
    "oilskin map",
    "copper coin",
    "glass eye",
    "blue ribbon",
    "ship's bell clapper",
    "salt-stained journal",
    "rusted cutlass",
    "wax seal",
    "pearl earring",
    "barrel of brandy",
    "hooded cloak",
    "music box",
    "spyglass",
    "iron nail",
    "apothecary vial",
    "prayer beads",
    "harpoon head",
    "tin soldier",
    "lock of hair",
    "deed to the cannery",
    "forged pardon",
    "carved driftwood fox",
)
_EVENTS = (
    "spring storm",
    "harvest fair",
    "last eclipse",
    "night of the fire",
    "wreck of the Gannet",
    "midwinter vigil",
    "customs raid",
    "flood tide festival",
    "duel on the pier",
    "mayor's funeral",
)
_VERBS = ("hid", "buried", "sold", "stole", "lost", "found", "pawned", "guarded")
_HIDES = ("under", "behind", "inside", "beneath", "near")
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
_SCENES = (
    "At the {place}. Present: {a}, {b}. {a} keeps glancing at the door while the wind "
    "rattles the shutters; somewhere below, the tide is turning.",
    "The {place} after the {event}. Present: {a}. Lamplight, wet stone, the smell of tar, "
    "and {a} counting coins on a barrel head.",
)


def _name(rng: random.Random) -> str:
    first = rng.choice(_FIRST)
    return f"{rng.choice(_TITLES)} {first}" if rng.random() < 0.2 else first


def _fill(rng: random.Random, template: str) -> str:
    a = _name(rng)
    b = _name(rng)
    while b == a:
        b = _name(rng)
    text = template.format(
        a=a,
        b=b,
        item=rng.choice(_ITEMS),
        place=rng.choice(_PLACES),
        event=rng.choice(_EVENTS),
        verb=rng.choice(_VERBS),
        prep=rng.choice(_HIDES),
        n=rng.randint(2, 90),
    )
    return text[0].upper() + text[1:]


def memory_text(rng: random.Random) -> str:
    return _fill(rng, rng.choice(_HEDGED if rng.random() < 0.15 else _FACTS))


def unit_vector(rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal(DIMS).astype(np.float32)
    return v / np.float32(np.linalg.norm(v))


# -- the database ----------------------------------------------------------------------------


@dataclass
class Story:
    size: int
    adventure_id: int
    lineage: tuple[tuple[int, int | None], ...]
    blobs: list[bytes]  # every memory's packed vector, for the pure-Python loop
    queries: list[tuple[str, np.ndarray, np.ndarray]]  # (input text, q_in, q_ctx)
    mean_terms: float = 0.0


def build_story(sessions: sessionmaker[Session], user_id: int, size: int, seed: int) -> Story:
    """An adventure whose path forks off the main branch, with ``size`` memories."""
    rng = random.Random(seed + size)
    vrng = np.random.default_rng(seed + size)
    length = max(size * DEPTHS_PER_MEMORY, 20)
    fork = int(length * FORK_AT)
    with session_scope(sessions) as session:
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
        blobs: list[bytes] = []
        for i in range(size):
            on_fork = rng.random() < ON_FORK
            depth = rng.randrange(fork, length) if on_fork else rng.randrange(0, length)
            text = memory_text(rng)
            blob = pack(unit_vector(vrng).tolist())
            blobs.append(blob)
            rows.append(
                {
                    "adventure_id": adventure.id,
                    "branch_id": side.id if on_fork else main.id,
                    "depth": depth,
                    "source_start": max(0, depth - DEPTHS_PER_MEMORY + 1),
                    "source_end": depth,
                    "text": text,
                    "authority": classify(text),
                    "origin": "auto",
                    "writer": "bench",
                    "status": "active",
                    "pinned": i % PIN_EVERY == PIN_EVERY - 1,
                    "vector": blob,
                    "vector_model": MODEL,
                    "terms": " ".join(sorted(term_set(text))),
                    "keyed": True,
                    "revision": i + 1,
                }
            )
        if rows:
            session.execute(insert(Memory), rows)
            _add_keys(session, adventure.id, rng, vrng)
        adventure.memory_revision = len(rows)  # the counter later changes take theirs from
        lineage = ((side.id, None), (main.id, fork - 1))
        mean_terms = statistics.fmean(len(r["terms"].split()) for r in rows)
        adventure_id = adventure.id
    queries = []
    for _ in range(QUERIES):
        text = _fill(rng, rng.choice(_ACTIONS))
        queries.append((text, unit_vector(vrng), unit_vector(vrng)))
    return Story(size, adventure_id, lineage, blobs, queries, mean_terms)


def _add_keys(
    session: Session, adventure_id: int, rng: random.Random, vrng: np.random.Generator
) -> None:
    memories = session.execute(
        select(Memory.id, Memory.depth).where(Memory.adventure_id == adventure_id)
    ).all()
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
    session.execute(insert(MemoryKey), keys)


# -- what is timed ---------------------------------------------------------------------------


def warm_rank(bank: Bank, story: Story, q: int, with_terms: bool = True) -> Any:
    text, q_in, q_ctx = story.queries[q % QUERIES]
    input_terms = terms(text) if with_terms else ()
    return rank(bank, lineage_mask(bank, story.lineage), q_in, q_ctx, input_terms, TOP_K)


def warm_path(sessions: sessionmaker[Session], cache: BankCache, story: Story, q: int) -> int:
    """As ``retrieval`` runs it, less the embedding call: ``_bank`` then ``_rank``."""
    text, q_in, q_ctx = story.queries[q % QUERIES]
    with session_scope(sessions) as session:
        bank = cache.bank(session, story.adventure_id, MODEL)
    considered = int(lineage_mask(bank, story.lineage).sum()) if bank.size else 0
    input_terms = terms(text)
    with session_scope(sessions) as session:
        mask = lineage_mask(bank, story.lineage)
        ranking = rank(bank, mask, q_in, q_ctx, input_terms, TOP_K)
        rows = MemoryRepository(session).texts([s.id for s in ranking.chosen])
        chosen = [rows[s.id].text for s in ranking.chosen if s.id in rows]
    return considered + len(chosen)


def cold(sessions: sessionmaker[Session], story: Story, q: int) -> Any:
    text, q_in, q_ctx = story.queries[q % QUERIES]
    cache = BankCache()
    with session_scope(sessions) as session:
        bank = cache.bank(session, story.adventure_id, MODEL)
    return rank(bank, lineage_mask(bank, story.lineage), q_in, q_ctx, terms(text), TOP_K)


def restart(sessions: sessionmaker[Session], snapshots: Snapshots, story: Story, q: int) -> Any:
    """The first turn after a restart: a new cache over the snapshot folder, then ``rank``."""
    text, q_in, q_ctx = story.queries[q % QUERIES]
    cache = BankCache(snapshots=snapshots, snapshot_at=10**9)  # reads, never writes
    with session_scope(sessions) as session:
        bank = cache.bank(session, story.adventure_id, MODEL)
    return rank(bank, lineage_mask(bank, story.lineage), q_in, q_ctx, terms(text), TOP_K)


def toggle_pins(
    sessions: sessionmaker[Session], story: Story, ids: list[int], cache: BankCache | None
) -> None:
    """A change ranking must see, for each of ``ids``: its pin toggled."""
    with session_scope(sessions) as session:
        for memory_id in ids:
            memory = session.get(Memory, memory_id)
            assert memory is not None
            set_pinned(session, memory, not memory.pinned, cache)


def refresh(sessions: sessionmaker[Session], cache: BankCache, story: Story) -> Any:
    with session_scope(sessions) as session:
        return cache.bank(session, story.adventure_id, MODEL)


def numpy_product(bank: Bank, story: Story, q: int) -> Any:
    _, q_in, q_ctx = story.queries[q % QUERIES]
    return bank.vectors @ q_in, bank.vectors @ q_ctx


def python_loop(rows: list[array[float]], story: Story, q: int) -> list[tuple[float, int]]:
    """Every row's cosine with both query vectors (unit vectors: dot products), top 5."""
    _, q_in, q_ctx = story.queries[q % QUERIES]
    qi, qc = array("f", q_in.tobytes()), array("f", q_ctx.tobytes())
    scores = []
    for i, row in enumerate(rows):
        cos_in = sum(a * b for a, b in zip(row, qi, strict=True))
        cos_ctx = sum(a * b for a, b in zip(row, qc, strict=True))
        scores.append((INPUT_WEIGHT * cos_in + CONTEXT_WEIGHT * cos_ctx, i))
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


@dataclass
class Footprint:
    vectors: int  # the bank's (N, 384) float32 matrix
    columns: int  # ids, branch ids, depths, pinned, heuristic
    postings: int  # term -> row indices: the vocabulary, its index and the flat arrays
    key_vectors: int  # the keys' float32 matrix
    key_codes: int  # the keys' int8 codes and their columns
    key_rest: int  # the keys' ids, owners, depths, runs, postings and names
    total: int  # everything reachable from the cache entry, shared objects once
    build_peak: int  # tracemalloc peak while a fresh cache reads and builds the bank
    retained: int  # tracemalloc: what stays allocated after the build (the cache)


def footprint(sessions: sessionmaker[Session], story: Story) -> Footprint:
    gc.collect()
    tracemalloc.start()
    cache = BankCache()
    with session_scope(sessions) as session:
        cache.bank(session, story.adventure_id, MODEL)
    gc.collect()
    retained, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    entry = cache._entries[story.adventure_id]  # the benchmark looks inside on purpose
    bank = entry.bank
    assert bank is not None
    columns = (bank.ids, bank.branch_ids, bank.depths, bank.pinned, bank.heuristic)
    keys = bank.keys
    codes = keys.codes if keys is not None else None
    code_bytes = (
        sum(a.nbytes for a in (codes.columns, codes.sums, codes.scale, codes.error, codes.norm))
        if codes is not None
        else 0
    )
    key_total = deep_size(keys, set()) if keys is not None else 0
    key_vectors = keys.vectors.nbytes if keys is not None else 0
    return Footprint(
        vectors=bank.vectors.nbytes,
        columns=sum(c.nbytes for c in columns),
        postings=deep_size(bank.postings, set()),
        key_vectors=key_vectors,
        key_codes=code_bytes,
        key_rest=max(0, key_total - key_vectors - code_bytes),
        total=deep_size(entry, set()),
        build_peak=peak,
        retained=retained,
    )


# -- the run ---------------------------------------------------------------------------------


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
class SizeResult:
    size: int
    considered: int
    distinct_terms: int
    mean_terms: float
    mean_input_terms: float
    times: dict[str, Samples] = field(default_factory=dict)
    footprint: Footprint | None = None
    snapshot_bytes: int = 0

    def t(self, name: str) -> Samples:
        return self.times.setdefault(name, Samples())


def timed(samples: Samples, calls: int, fn: Callable[[int], object]) -> None:
    for q in range(calls):
        started = time.perf_counter()
        fn(q)
        samples.ms.append((time.perf_counter() - started) * 1000)


def timed_pair(
    samples: tuple[Samples, Samples],
    calls: int,
    fns: tuple[Callable[[int], object], Callable[[int], object]],
) -> None:
    for q in range(calls):
        for out, fn in zip(samples, fns, strict=True):
            started = time.perf_counter()
            fn(q)
            out.ms.append((time.perf_counter() - started) * 1000)


def bench(sizes: list[int], seed: int, rounds: int) -> list[SizeResult]:
    with tempfile.TemporaryDirectory(prefix="talekeeper-ranking-") as root:
        engine = make_engine(f"sqlite:///{Path(root) / 'bench.sqlite'}")
        try:
            upgrade(engine)
            sessions = make_session_factory(engine)
            with session_scope(sessions) as session:
                user = User(name="ranking-bench")
                session.add(user)
                session.flush()
                user_id = user.id
            stories = [build_story(sessions, user_id, size, seed) for size in sizes]
            return measure(sessions, stories, rounds, Snapshots(Path(root) / "banks"))
        finally:
            engine.dispose()


def snapshot_now(sessions: sessionmaker[Session], snapshots: Snapshots, story: Story) -> int:
    """The story's snapshot written as its bank is now; its size in bytes."""
    writer = BankCache(snapshots=snapshots, snapshot_at=1)
    with session_scope(sessions) as session:
        writer.bank(session, story.adventure_id, MODEL)
    writer.wait_saved()
    return snapshots.path(story.adventure_id, MODEL).stat().st_size


def memory_ids(sessions: sessionmaker[Session], story: Story) -> list[int]:
    with session_scope(sessions) as session:
        query = select(Memory.id).where(Memory.adventure_id == story.adventure_id)
        return list(session.scalars(query.order_by(Memory.id)).all())


def measure(
    sessions: sessionmaker[Session], stories: list[Story], rounds: int, snapshots: Snapshots
) -> list[SizeResult]:
    cache = BankCache()
    banks: dict[int, Bank] = {}
    results: dict[int, SizeResult] = {}
    loops: dict[int, list[array[float]]] = {}
    for story in stories:
        with session_scope(sessions) as session:
            bank = cache.bank(session, story.adventure_id, MODEL)
        assert bank.size == story.size, (bank.size, story.size)
        banks[story.size] = bank
        loops[story.size] = [array("f", blob) for blob in story.blobs]
        results[story.size] = SizeResult(
            size=story.size,
            considered=int(lineage_mask(bank, story.lineage).sum()),
            distinct_terms=len(bank.postings),
            mean_terms=story.mean_terms,
            mean_input_terms=statistics.fmean(len(terms(t)) for t, _, _ in story.queries),
        )
        results[story.size].snapshot_bytes = snapshot_now(sessions, snapshots, story)
        # Warm-up: compiled SQL, NumPy's first calls, the regex.
        for q in range(20):
            warm_rank(bank, story, q)
            warm_path(sessions, cache, story, q)
            cold(sessions, story, q)
            restart(sessions, snapshots, story, q)
    for _ in range(rounds):
        for story in stories:
            gc.collect()
            one_round(
                sessions,
                cache,
                snapshots,
                story,
                loops[story.size],
                rounds,
                results[story.size],
            )
    for story in stories:
        results[story.size].footprint = footprint(sessions, story)
    return [results[s.size] for s in stories]


def one_round(
    sessions: sessionmaker[Session],
    cache: BankCache,
    snapshots: Snapshots,
    story: Story,
    loop_rows: list[array[float]],
    rounds: int,
    r: SizeResult,
) -> None:
    n = story.size
    with session_scope(sessions) as session:
        bank = cache.bank(session, story.adventure_id, MODEL)
        records = MemoryRepository(session).bank_rows(story.adventure_id)
        keyed: dict[int, list[Any]] = {}
        for key in KeyRepository(session).bank_keys(adventure_id=story.adventure_id):
            keyed.setdefault(key.memory_id, []).append(key)

    def read(q: int) -> int:
        with session_scope(sessions) as session:
            repo = MemoryRepository(session)
            repo.bank_state(story.adventure_id)
            rows = repo.bank_rows(story.adventure_id)
            keys = KeyRepository(session).bank_keys(adventure_id=story.adventure_id)
            return len(rows) + len(keys)

    warm, path, colds = WARM_CALLS.get(n, 1000), PATH_CALLS.get(n, 300), COLD_CALLS.get(n, 30)
    # With and without input terms call by call, so a busy moment weighs on both alike.
    timed_pair(
        (r.t("warm"), r.t("warm_no_terms")),
        warm // rounds,
        (lambda q: warm_rank(bank, story, q), lambda q: warm_rank(bank, story, q, False)),
    )
    timed(r.t("terms"), warm // rounds, lambda q: terms(story.queries[q % QUERIES][0]))
    timed(r.t("path"), path // rounds, lambda q: warm_path(sessions, cache, story, q))
    timed(r.t("cold"), max(colds // rounds, 1), lambda q: cold(sessions, story, q))
    timed(r.t("cold_read"), max(colds // rounds, 1), read)
    timed(r.t("cold_build"), max(colds // rounds, 1), lambda q: build(records, keyed))
    # The first turn after a restart: the snapshot as written, then behind the database.
    snapshot_now(sessions, snapshots, story)
    restarts = max(colds // rounds, 3)
    timed(r.t("restart"), restarts, lambda q: restart(sessions, snapshots, story, q))
    ids = memory_ids(sessions, story)
    moved = ids[:: max(1, len(ids) // SNAPSHOT_AFTER)][:SNAPSHOT_AFTER]
    toggle_pins(sessions, story, moved, cache)
    timed(r.t("restart_behind"), restarts, lambda q: restart(sessions, snapshots, story, q))
    toggle_pins(sessions, story, moved, cache)  # back as they were
    # One memory changed, then the cached bank refreshed (twice each: back as it was).
    refresh(sessions, cache, story)
    for q in range(max(colds // rounds, 3)):
        for _ in range(2):
            toggle_pins(sessions, story, [ids[(q * 7919) % len(ids)]], cache)
            timed(r.t("refresh"), 1, lambda _q: refresh(sessions, cache, story))
    with session_scope(sessions) as session:
        bank = cache.bank(session, story.adventure_id, MODEL)
    timed(r.t("numpy"), NUMPY_CALLS.get(n, 1000) // rounds, lambda q: numpy_product(bank, story, q))
    loops = max(LOOP_CALLS.get(n, 5) // rounds, 1)
    timed(r.t("python"), loops, lambda q: python_loop(loop_rows, story, q))


# -- the report ------------------------------------------------------------------------------


def _ms(value: float) -> str:
    return f"{value:.3f}" if value < 1 else f"{value:.2f}" if value < 100 else f"{value:.0f}"


def _kb(value: int) -> str:
    return f"{value / 1024:,.0f} KB" if value < 1024 * 1024 else f"{value / 2**20:.2f} MB"


def target_lines(results: list[SizeResult]) -> list[str]:
    by_size = {r.size: r for r in results}
    lines = []
    for what, size, limit in TARGETS:
        r = by_size.get(size)
        if r is None:
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


def markdown(results: list[SizeResult], run: dict[str, Any]) -> str:
    lines = [
        "Cost of ranking one adventure's bank as retrieval does it each turn: two query "
        f"vectors (the player's input and the scene), the hybrid score ({INPUT_WEIGHT:g}·"
        f"cos(input) + {CONTEXT_WEIGHT:g}·cos(context) + {LEXICAL_WEIGHT:g}·lexical), the "
        "lineage mask and the top 5 with duplicate "
        "suppression. A migrated SQLite file holds one adventure per size whose path forks "
        f"off the main branch at {FORK_AT:.0%} of the story, {ON_FORK:.0%} of the memories "
        "written on the fork, so the mask leaves out the main branch's memories past the "
        'fork ("considered"). Memories are seeded 1-2 sentence texts about names, places '
        "and items, with their terms as the memory pass stores them and 384-dimension "
        "random unit vectors (`bank.pack`, float32); each memory has "
        f"{KEYS_PER_MEMORY} evidence keys (seeded sentences, their terms and vectors), "
        "scored beside it as retrieval does (a memory scores as its best key), so "
        f"5,000 memories are {5_000 * (KEYS_PER_MEMORY + 1):,} scored rows. "
        "Times are medians (p95) in ms over "
        f"{run['rounds']} rounds taken round-robin over the sizes, after a warm-up. "
        f"BLAS on one thread (`OPENBLAS_NUM_THREADS={BLAS_THREADS}`, also OMP/MKL, set "
        "before NumPy loads: on a 2-core VM BLAS threads fight the interpreter and each "
        f"other). NumPy {np.__version__}. On {run['machine']}, load average "
        f"{run['load'][0]:.1f} before and {run['load'][1]:.1f} after the run, "
        f"{run['seconds']:.0f} s in all "
        "(`.venv/bin/python benchmarks/ranking.py --write docs/benchmarks.md`).",
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
        share = max(0.0, 1 - bare.median / warm.median)
        cells = [
            f"{r.size:,}",
            f"{r.considered:,}",
            f"{_ms(warm.median)} ({_ms(warm.p95)})",
            f"{_ms(bare.median)}",
            f"{share:.0%}",
            f"{_ms(r.t('terms').median)}",
            f"{_ms(r.t('path').median)} ({_ms(r.t('path').p95)})",
            f"{_ms(r.t('numpy').median)}",
            f"{_ms(r.t('python').median)}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
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
        parts = [r.t(k).median for k in ("cold", "cold_read", "cold_build", "warm")]
        rest = parts[0] - sum(parts[1:])
        cells = [
            f"{r.size:,}",
            f"{_ms(parts[0])} ({_ms(r.t('cold').p95)})",
            _ms(parts[1]),
            _ms(parts[2]),
            _ms(rest),
            f"{_ms(r.t('restart').median)} ({_ms(r.t('restart').p95)})",
            f"{_ms(r.t('restart_behind').median)} ({_ms(r.t('restart_behind').p95)})",
            f"{_ms(r.t('refresh').median)} ({_ms(r.t('refresh').p95)})",
            _kb(r.snapshot_bytes),
        ]
        lines.append("| " + " | ".join(cells) + " |")
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
        f = r.footprint
        assert f is not None
        cells = [
            f"{r.size:,}",
            f"{r.distinct_terms:,}",
            f"{r.mean_terms:.1f}",
            _kb(f.vectors),
            _kb(f.columns),
            _kb(f.postings),
            _kb(f.key_vectors),
            _kb(f.key_codes),
            _kb(f.key_rest),
            _kb(f.total),
            f"{f.total / max(r.size, 1) / 1024:.1f} KB",
            _kb(f.build_peak),
            _kb(f.retained),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    mean_input = statistics.fmean(r.mean_input_terms for r in results)
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
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", type=Path, help="store the tables in this Markdown file")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    results = bench(args.sizes, args.seed, args.rounds)
    run = {
        "rounds": args.rounds,
        "machine": machine_description(),
        "load": (load_before, os.getloadavg()[0]),
        "seconds": time.perf_counter() - started,
    }
    body = markdown(results, run)
    publish(body, args.write, "ranking", "Memory ranking")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
