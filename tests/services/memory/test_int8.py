"""Large banks: passages read as int8 first, the order still the float32 one; the rank window.

What the int8 kernel computes depends on the CPU (``int8``'s docstring): these tests run on
this machine's kernel and on models of the others (``KERNELS``): AVX2's, which adds
neighbouring products in saturating 16-bit sums, and an exact one (AVX-512 VNNI, SSE4.1).
``test_int8_cpus.py`` runs them again on a forced AVX2 CPU, onnxruntime's own kernel.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
import pytest

from talekeeper.services.memory import int8
from talekeeper.services.memory.arrays import Bank, BankRow
from talekeeper.services.memory.int8 import Codes, Kernel, available
from talekeeper.services.memory.keyset import KeyInput
from talekeeper.services.memory.ranking import rank
from talekeeper.services.memory.scoring import WEIGHTS, Ranking

DIMS = 384
VOCAB = [f"w{i}" for i in range(30)]
NAMES = ["toen", "mara", "edda", "iwo"]
STRONG = 0.3  # the shared pair's components (MiniLM's largest reach 0.26)
LARGE_SEEDS = range(4)
WIDE_VOCAB = [f"v{i}" for i in range(200)]  # words a few memories share, not most

pytestmark = [
    pytest.mark.no_database,
    pytest.mark.skipif(not available(), reason="onnxruntime's int8 kernel is missing"),
]


def exact_product(query: npt.NDArray[np.uint8], columns: npt.NDArray[np.int8]) -> np.ndarray:
    return query.astype(np.int64) @ columns.astype(np.int64)


def saturating_quads(query: npt.NDArray[np.uint8], columns: npt.NDArray[np.int8]) -> np.ndarray:
    """No CPU's that we know: four neighbouring products summed in 16 bits (the check must
    refuse it: 4 x 128 x 127 overflows)."""
    products = query.astype(np.int64)[:, None] * columns.astype(np.int64)
    products = np.pad(products, ((0, -products.shape[0] % 4), (0, 0)))
    quads = products.reshape(-1, 4, products.shape[1]).sum(axis=1)
    out: np.ndarray = np.clip(quads, -32768, 32767).sum(axis=0)
    return out


# None: this machine's own (onnxruntime's); the others are models of other CPUs' kernels.
KERNELS = {
    "this-cpu": None,
    "avx2-model": Kernel("AVX2 (model)", int8.saturating_pairs),
    "exact-model": Kernel("AVX-512 VNNI (model)", exact_product),
}


@pytest.fixture(params=list(KERNELS))
def kernel(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each test with this fixture runs once per kernel, that kernel in use."""
    model = KERNELS[request.param]
    if model is not None:
        assert int8.install(model) is None
    try:
        yield request.param
    finally:
        int8.restore()


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    m: np.ndarray = rng.standard_normal((n, DIMS)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    return m


def awkward_rows(rng: np.random.Generator) -> np.ndarray:
    rows = unit(rng, 3000)
    rows[0] = 0.0  # a zero row
    rows[1] = 0.0
    rows[1, 7] = 1.0  # all in one component
    rows[2] *= 1e-3  # tiny, not normalised
    rows[3, :] = np.linspace(-1, 1, DIMS) / np.linalg.norm(np.linspace(-1, 1, DIMS))
    rows[4:40] = spiky(rng, 36, 0.3)  # strong components shared with the spiky queries
    return rows


def spiky(rng: np.random.Generator, n: int, strength: float, at: int = 100) -> np.ndarray:
    """Unit vectors whose two largest components are a neighbouring pair (``at``,
    ``at + 1``) of ``strength`` each: where a 16-bit pair sum overflows first."""
    m = unit(rng, n) * np.sqrt(1 - 2 * strength**2)
    m[:, at : at + 2] = 0.0
    m = m / np.linalg.norm(m, axis=1, keepdims=True) * np.sqrt(1 - 2 * strength**2)
    m[:, at : at + 2] = strength
    out: np.ndarray = m.astype(np.float32)
    return out


def queries(rng: np.random.Generator) -> list[np.ndarray]:
    plain = [q * s for s in (1.0, 0.7, 0.05) for q in unit(rng, 12)]
    one = np.zeros(DIMS, dtype=np.float32)
    one[5] = 1.0
    return [*plain, *spiky(rng, 8, 0.3), one, (unit(rng, 1)[0] * 1e-4)]


class Spiky(NamedTuple):
    coded: Bank  # passages held as int8 codes too (the default threshold)
    plain: Bank  # the same, float32 alone
    mask: np.ndarray
    q_in: np.ndarray
    q_ctx: np.ndarray
    terms: list[str]

    def both(self, top_k: int, context: bool = True) -> tuple[Ranking, Ranking]:
        ctx = self.q_ctx if context else None
        return (
            rank(self.coded, self.mask, self.q_in, ctx, self.terms, top_k),
            rank(self.plain, self.mask, self.q_in, ctx, self.terms, top_k),
        )


def spiky_bank(seed: int, memories: int = 700) -> Spiky:
    """A large bank (12 passages a memory: past ``QUANTIZE_AT`` from 683 memories) about one
    subject, where the query and half the texts and passages share their strongest
    components, a neighbouring pair (as a real embedder's vectors on one subject share
    theirs): on AVX2 with full-range codes, exactly the passages that matter saturate."""
    rng = np.random.default_rng(seed)
    base = unit(rng, 1)[0]

    def near(n: int, spread: npt.ArrayLike, share: float) -> np.ndarray:
        """``n`` vectors about the subject, each with the strong pair with chance ``share``."""
        noise = rng.standard_normal((n, DIMS)).astype(np.float32) / np.sqrt(DIMS)
        m = base + np.reshape(spread, (-1, 1)) * noise
        m[:, 100:102] = 0.0
        m = m / np.linalg.norm(m, axis=1, keepdims=True) * np.sqrt(1 - 2 * STRONG**2)
        m[rng.random(n) < share, 100:102] = STRONG
        out: np.ndarray = (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)
        return out

    def words(n: int, each: int) -> list[frozenset[str]]:
        picks = rng.random((n, len(WIDE_VOCAB))).argsort(axis=1)[:, :each]
        return [frozenset(WIDE_VOCAB[j] for j in row) for row in picks.tolist()]

    texts = near(memories, 1.0, 0.5)
    pinned = (rng.random(memories) < 0.004).tolist()
    rows = [
        BankRow(i + 1, 1, i, texts[i], pinned[i], False, terms)
        for i, terms in enumerate(words(memories, 3))
    ]
    # Each memory's passages spread about the subject by a width of its own.
    vectors = near(12 * memories, np.repeat(rng.uniform(0.4, 1.2, memories), 12), 0.5)
    keys = [
        KeyInput(1000 * (k // 12 + 1) + k % 12, k // 12 + 1, k // 12, vectors[k], terms)
        for k, terms in enumerate(words(12 * memories, 4))
    ]
    coded = Bank.build(rows, DIMS, keys=keys)
    plain = Bank.build(rows, DIMS, keys=keys, quantize_at=10**9)
    assert coded.keys is not None and coded.keys.codes is not None
    assert plain.keys is not None and plain.keys.codes is None
    mask = rng.random(memories) < 0.9
    q_in, q_ctx = near(2, 0.6, 1.0)
    return Spiky(coded, plain, mask, q_in, q_ctx, sorted(words(1, 2)[0]))


def test_the_int8_reading_stays_within_its_bound(kernel: str) -> None:
    rng = np.random.default_rng(5)
    rows = awkward_rows(rng)
    codes = Codes.of(rows)
    for query in queries(rng):
        estimate = codes.estimate(query.astype(np.float32))
        assert estimate is not None
        dot, bound = estimate
        exact = rows.astype(np.float64) @ query.astype(np.float64)
        assert np.all(np.abs(exact - dot) <= bound)
    # and tight enough to be of use: about two hundredths for unit vectors (the query's
    # codes use half the int8 range: docs/benchmarks.md)
    _, bound = codes.estimate(unit(rng, 1)[0])  # type: ignore[misc]
    assert float(np.median(bound)) < 0.025


def test_every_kernel_reads_the_same_estimate() -> None:
    """The codes leave every kernel's sums room, so each computes the exact integers: the
    estimate and its bound, and so the rows rescored, are the same on every CPU."""
    rng = np.random.default_rng(8)
    rows = awkward_rows(rng)
    codes = Codes.of(rows)
    readings: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    for name, model in KERNELS.items():
        if model is not None:
            assert int8.install(model) is None
        try:
            readings[name] = [codes.estimate(q) for q in queries(np.random.default_rng(9))]  # type: ignore[misc]
        finally:
            int8.restore()
    first = readings["this-cpu"]
    for name, reading in readings.items():
        for (dot, bound), (dot0, bound0) in zip(reading, first, strict=True):
            assert np.array_equal(dot, dot0), name
            assert np.array_equal(bound, bound0), name


def raising(query: npt.NDArray[np.uint8], columns: npt.NDArray[np.int8]) -> np.ndarray:
    raise RuntimeError("no such instruction")


def test_the_kernel_check_refuses_what_is_not_exact_and_ranking_goes_on_in_float32() -> None:
    assert int8.check(exact_product) is None
    assert int8.check(int8.saturating_pairs) is None  # AVX2's, at these codes' ranges
    refused: dict[str, int8.Product] = {
        "sums of four in 16 bits": saturating_quads,
        "off by one": lambda r, q: exact_product(r, q) + 1,
        "wrong shape": lambda r, q: exact_product(r, q)[:-1],
        "raises": raising,
        "not a number": lambda r, q: exact_product(r, q).astype(np.float64) * np.nan,
    }
    for what, product in refused.items():
        assert int8.check(product) is not None, what
    bank = spiky_bank(2)
    try:
        reason = int8.install(Kernel("four in 16 bits", saturating_quads))
        assert reason is not None and "exact product" in reason
        assert not available()
        assert bank.coded.keys is not None and bank.coded.keys.codes is not None
        assert bank.coded.keys.codes.estimate(bank.q_in) is None  # no reading: float32 alone
        same(*bank.both(5))
    finally:
        int8.restore()
    assert available()


def test_a_kernel_that_fails_in_use_is_dropped_for_float32() -> None:
    """One that passed its check but raises on a bank's rows (out of memory, say): that
    ranking and every later one use float32 alone, and choose the same."""

    def small_only(query: npt.NDArray[np.uint8], columns: npt.NDArray[np.int8]) -> np.ndarray:
        if columns.shape[1] > 100:
            raise MemoryError("no room for the product")
        return exact_product(query, columns)

    bank = spiky_bank(1)
    try:
        assert int8.install(Kernel("small only", small_only)) is None
        assert available()
        a, b = bank.both(5)
        same(a, b)
        assert a.rescored == 0  # nothing read at int8, so nothing read again
        assert not available()
    finally:
        int8.restore()


def test_the_whole_int8_range_would_break_on_avx2(monkeypatch: pytest.MonkeyPatch) -> None:
    """Why the query's codes stop at 64: with the whole range (the codes before), AVX2's
    kernel leaves the bound and the large spiky bank below is ranked wrong, and the check
    refuses that kernel. (A test of the tests: they can fail.)"""
    monkeypatch.setattr(int8, "QUERY_PEAK", 127)
    assert int8.check(int8.saturating_pairs) is not None
    monkeypatch.setattr(int8, "check", lambda product: None)  # forced in, as it used to be
    rng = np.random.default_rng(5)
    rows = awkward_rows(rng)
    codes = Codes.of(rows)
    try:
        assert int8.install(KERNELS["avx2-model"]) is None
        outside = 0
        for query in queries(rng):
            dot, bound = codes.estimate(query)  # type: ignore[misc]
            outside += int(np.sum(np.abs(rows.astype(np.float64) @ query - dot) > bound))
        assert outside > 0
        for seed in LARGE_SEEDS:  # every case of the large-bank test below would fail
            bank = spiky_bank(seed)
            pairs = [bank.both(top_k, context) for top_k in (1, 5, 9) for context in (True, False)]
            assert any(chosen(a) != chosen(b) for a, b in pairs), seed
    finally:
        int8.restore()


@pytest.mark.parametrize("seed", LARGE_SEEDS)
def test_a_large_bank_sharing_the_query_s_strongest_components_ranks_as_float32(
    kernel: str, seed: int
) -> None:
    bank = spiky_bank(seed)
    assert bank.coded.keys is not None
    for top_k in (1, 5, 9):
        for context in (True, False):
            coded, plain = bank.both(top_k, context)
            same(coded, plain)
            # a few passages read again in float32, not the bank's thousands
            assert 0 < coded.rescored < bank.coded.keys.size // 10 and plain.rescored == 0


def clustered_bank(
    seed: int, memories: int, quantize_at: int
) -> tuple[Bank, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Memories whose passages crowd around a few topics, so closely that many keys score
    within the int8 bound of each other (none exactly equal); terms and names from small
    vocabularies, some pinned, a random path."""
    rng = np.random.default_rng(seed)
    topics = unit(rng, 6)

    def near(n: int, spread: float) -> np.ndarray:
        picks = topics[rng.integers(0, len(topics), n)]
        m = picks + spread * rng.standard_normal((n, DIMS)).astype(np.float32)
        out: np.ndarray = (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)
        return out

    texts = near(memories, 0.08)
    rows = [
        BankRow(
            id=i + 1,
            branch_id=1,
            depth=i,
            vector=texts[i],
            pinned=bool(rng.random() < 0.03),
            heuristic=bool(rng.random() < 0.3),
            terms=frozenset(rng.choice(VOCAB, 3, replace=False).tolist()),
        )
        for i in range(memories)
    ]
    keys: list[KeyInput] = []
    for i in range(memories):
        count = int(rng.integers(0, 15))
        vectors = near(count, 0.0002)
        for j in range(count):
            named = frozenset(rng.choice(NAMES, int(rng.integers(0, 3)), replace=False).tolist())
            words = frozenset(rng.choice(VOCAB, 4, replace=False).tolist())
            keys.append(KeyInput(1000 * (i + 1) + j, i + 1, i, vectors[j], words | named, named))
    bank = Bank.build(rows, DIMS, keys=keys, quantize_at=quantize_at)
    mask = rng.random(memories) < 0.8
    query_in = near(1, 0.1)[0]
    query_ctx = near(1, 0.1)[0]
    terms = rng.choice(VOCAB + NAMES[:1], 3, replace=False).tolist()
    return bank, mask, query_in, query_ctx, terms


def chosen(ranking: Ranking) -> list[int]:
    return [s.id for s in ranking.chosen]


def same(a: Ranking, b: Ranking) -> None:
    assert [(s.id, s.key, s.via, s.names) for s in a.chosen] == [
        (s.id, s.key, s.via, s.names) for s in b.chosen
    ]
    for x, y in zip(a.chosen, b.chosen, strict=True):
        assert (x.text_rank, x.key_rank) == (y.text_rank, y.key_rank)
        assert x.fused == pytest.approx(y.fused, abs=1e-12)
        assert (x.semantic, x.lexical, x.final) == pytest.approx(
            (y.semantic, y.lexical, y.final), abs=1e-5
        )
    assert a.suppressed == b.suppressed


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("window", [50, 8])
def test_int8_first_then_exact_chooses_what_float32_alone_chooses(seed: int, window: int) -> None:
    weights = WEIGHTS._replace(window=window)
    memories = 260 if seed % 2 else 90
    coded = clustered_bank(seed, memories, quantize_at=0)
    plain = clustered_bank(seed, memories, quantize_at=10**9)
    assert coded[0].keys is not None and coded[0].keys.codes is not None
    assert plain[0].keys is not None and plain[0].keys.codes is None
    for top_k in (1, 5, 9):
        for context in (True, False):
            args = [(b, m, q, c if context else None, t) for b, m, q, c, t in (coded, plain)]
            a = rank(*args[0], top_k, weights)
            b = rank(*args[1], top_k, weights)
            same(a, b)


def test_a_place_past_the_window_counts_for_nothing() -> None:
    """Fused = 1/(k + text place) + w/(k + passage place), each term 0 past the window; the
    passage place is not told (None) where it did not count, the text place always is."""
    bank, mask, q_in, q_ctx, terms = clustered_bank(3, 200, quantize_at=0)
    window = 6
    narrow = rank(bank, mask, q_in, q_ctx, terms, bank.size, WEIGHTS._replace(window=window))
    wide = rank(bank, mask, q_in, q_ctx, terms, bank.size, WEIGHTS._replace(window=10**6))
    places = {s.id: (s.text_rank, s.key_rank) for s in wide.chosen}
    k, w = WEIGHTS.fusion_k, WEIGHTS.source
    seen_past = 0
    for s in narrow.chosen:
        text, passage = places[s.id]
        assert s.text_rank == text  # told in full
        expected = (1 / (k + text) if text <= window else 0.0) + (
            w / (k + passage) if passage is not None and passage <= window else 0.0
        )
        assert s.fused == pytest.approx(expected)
        if passage is not None and passage > window:
            assert s.key_rank is None
            seen_past += 1
        else:
            assert s.key_rank == passage
    assert seen_past > 0


@pytest.mark.parametrize("quantize_at", [0, 10**9])
def test_the_hop_starts_from_the_best_passage_of_all_even_below_its_memory_text(
    quantize_at: int,
) -> None:
    """The bridge is the best-scoring passage of all, though its own memory is ranked by its
    text (which scores higher): the passages that can matter include it, on both paths."""

    def flat(*xy: float) -> np.ndarray:
        v = np.array(xy, dtype=np.float32)
        return v / np.linalg.norm(v)

    rows = [
        BankRow(1, 1, 1, flat(1, 0), False, False, frozenset()),
        BankRow(2, 1, 2, flat(0, 1), False, False, frozenset()),
        BankRow(3, 1, 3, flat(-0.5, 1), False, False, frozenset()),
        BankRow(4, 1, 4, flat(-1, 0.1), False, False, frozenset()),
    ]
    mara = frozenset({"mara"})
    keys = [
        KeyInput(11, 1, 1, flat(0.99, 0.14), mara, mara),  # best of all, below its text
        KeyInput(21, 2, 2, flat(0.9, 0.43), frozenset(), frozenset()),
        KeyInput(31, 3, 3, flat(0.2, 0.98), mara, frozenset()),  # where the name leads
    ]
    bank = Bank.build(rows, 2, keys=keys, quantize_at=quantize_at)
    assert (bank.keys is not None) and ((bank.keys.codes is not None) == (quantize_at == 0))
    ranking = rank(bank, np.ones(4, dtype=np.bool_), flat(1, 0), None, [], 3)
    hop = [s for s in ranking.chosen if s.via is not None]
    assert [(s.id, s.key, s.via, s.names) for s in hop] == [(3, 31, 1, ("mara",))]


def test_the_cpu_s_kernel_flags_are_read_and_told(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nmodel name\t: AMD EPYC\n"
        "flags\t\t: fpu sse4_1 avx avx2 fma avx512f avx512bw avx512_vnni\n\n"
        "processor\t: 1\nflags\t\t: fpu\n"
    )
    assert int8.cpu_flags(cpuinfo) == (
        "sse4_1",
        "avx",
        "avx2",
        "avx512f",
        "avx512bw",
        "avx512_vnni",
    )
    assert int8.cpu_flags(tmp_path / "missing") == ()
    told = int8.describe()
    assert told.kernel == "onnxruntime MatMulInteger" and told.full_range is not None
    assert told.full_range.value in told.line()
    off = int8.KernelReport(None, None, ("avx2",))
    assert off.line() == "int8 ranking off (float32 only); CPU flags: avx2"
    try:
        assert int8.install(None) is None
        assert int8.describe().kernel is None
    finally:
        int8.restore()
