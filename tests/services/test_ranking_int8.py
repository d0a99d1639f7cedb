"""Large banks: passages read as int8 first, the order still the float32 one; the rank window."""

from __future__ import annotations

import numpy as np
import pytest

from talekeeper.services.memory.int8 import Codes, available
from talekeeper.services.memory.keyset import KeyInput
from talekeeper.services.memory.ranking import WEIGHTS, Bank, BankRow, Ranking, rank

DIMS = 384
VOCAB = [f"w{i}" for i in range(30)]
NAMES = ["toen", "mara", "edda", "iwo"]

pytestmark = pytest.mark.skipif(not available(), reason="onnxruntime's int8 kernel is missing")


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    m = rng.standard_normal((n, DIMS)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def test_the_int8_reading_stays_within_its_bound() -> None:
    rng = np.random.default_rng(5)
    rows = unit(rng, 3000)
    rows[0] = 0.0  # a zero row
    rows[1] = 0.0
    rows[1, 7] = 1.0  # all in one component
    rows[2] *= 1e-3  # tiny, not normalised
    rows[3, :] = np.linspace(-1, 1, DIMS) / np.linalg.norm(np.linspace(-1, 1, DIMS))
    codes = Codes.of(rows)
    for scale in (1.0, 0.7, 0.05):
        for query in unit(rng, 20) * scale:
            estimate = codes.estimate(query.astype(np.float32))
            assert estimate is not None
            dot, bound = estimate
            exact = rows.astype(np.float64) @ query.astype(np.float64)
            assert np.all(np.abs(exact - dot) <= bound)
    # and tight enough to be of use: about a hundredth for unit vectors
    _, bound = codes.estimate(unit(rng, 1)[0])  # type: ignore[misc]
    assert float(np.median(bound)) < 0.02


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
        return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)

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
