"""The recall benchmark's baselines on tiny hand-made cases: BM25, the chunker, cosine."""

from __future__ import annotations

import math

import numpy as np
import pytest
from benchmarks.recall.methods import (
    ST_THRESHOLD,
    ST_TOP_K,
    TEXTDB_TOP_K,
    WEIGHT_GRID,
    MemoryQuery,
    best_first,
    bm25,
    chunk_spans,
    cosine_ranking,
    memory_rankings,
    overlap,
    tail,
    textdb_ranking,
    weight_rankings,
    weights_name,
)

from talekeeper.services.memory.ranking import WEIGHTS, Bank, BankRow, Weights, lineage_mask, rank


def test_bm25_by_hand() -> None:
    docs = [["salt", "rope"], ["salt"], ["heron"]]
    scores = bm25(["heron"], docs)
    idf = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))  # N = 3, df = 1
    average = 4 / 3
    norm = 1.2 * (1 - 0.75 + 0.75 * 1 / average)  # k1 = 1.2, b = 0.75, |d| = 1
    assert scores[0] == scores[1] == 0.0
    assert scores[2] == pytest.approx(idf * 2.2 / (1 + norm))


def test_bm25_rare_terms_weigh_more_and_repeats_in_the_query_count_once() -> None:
    docs = [["salt", "gate"], ["salt", "heron"], ["salt", "bell"]]
    scores = bm25(["salt", "heron"], docs)
    assert scores[1] > scores[0] == scores[2] > 0
    assert bm25(["heron", "heron"], docs) == bm25(["heron"], docs)
    assert bm25(["heron"], []) == []
    assert bm25(["nothing"], docs) == [0.0, 0.0, 0.0]


def test_bm25_shorter_documents_win_a_tie_on_term_frequency() -> None:
    scores = bm25(["key"], [["key", "a", "b", "c", "d"], ["key"], ["x"]])
    assert scores[1] > scores[0] > 0


def test_best_first_orders_by_score_then_key_and_keeps_only_scores_above() -> None:
    scores = [0.5, 0.9, 0.5, 0.25, 0.1]
    assert best_first(scores, [10, 11, 3, 4, 5]) == [1, 2, 0, 3, 4]
    assert best_first(scores, [10, 11, 3, 4, 5], above=0.25) == [1, 2, 0]  # 0.25 is not above


def test_chunks_cover_the_text_in_order_and_end_on_a_space() -> None:
    text = " ".join(f"word{i:03d}" for i in range(300))  # 2,399 characters
    spans = chunk_spans(text, 800)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    assert all(a[1] == b[0] for a, b in zip(spans, spans[1:], strict=False))
    assert all(0 < end - start <= 800 for start, end in spans)
    assert all(text[end] == " " for _, end in spans[:-1])  # no word is cut in two
    assert "".join(text[a:b] for a, b in spans) == text


def test_chunks_without_spaces_are_cut_at_the_size() -> None:
    assert chunk_spans("x" * 1700, 800) == [(0, 800), (800, 1600), (1600, 1700)]
    assert chunk_spans("", 800) == []
    assert chunk_spans("short text", 800) == [(0, 10)]


def test_overlap() -> None:
    assert overlap((0, 10), (5, 20)) == 5
    assert overlap((0, 10), (10, 20)) == 0
    assert overlap((3, 4), (0, 100)) == 1


def test_sillytavern_style_cosine_keeps_scores_above_the_threshold() -> None:
    vectors = np.array([[1, 0], [0.6, 0.8], [0, 1], [-1, 0]], dtype=np.float32)
    ranked = cosine_ranking(np.array([1, 0], dtype=np.float32), vectors, [4, 5, 6, 7])
    assert ranked.order == [0, 1]  # cos 1.0 and 0.6; 0.0 and -1.0 fall under the threshold
    assert ranked.scores == pytest.approx([1.0, 0.6])
    assert ranked.inject == ST_TOP_K and ST_THRESHOLD == 0.25
    empty = cosine_ranking(np.array([1, 0], dtype=np.float32), np.zeros((0, 2), np.float32), [])
    assert empty.order == []


def test_the_textdb_query_is_the_end_of_the_context_from_a_word_boundary() -> None:
    text = "alpha " * 100 + "the probe"
    assert tail(text, 300).endswith("the probe") and len(tail(text, 300)) <= 300
    assert not tail(text, 300).startswith("lpha")
    assert tail("short", 300) == "short"


def test_textdb_style_ranks_chunks_with_a_score_only() -> None:
    ranked = textdb_ranking(["heron"], [["salt"], ["heron", "salt"], ["heron"]])
    assert ranked.order == [2, 1] and ranked.inject == TEXTDB_TOP_K


def _bank() -> Bank:
    rows = [
        BankRow(1, 1, 10, np.array([1.0, 0.0, 0.0]), False, False, frozenset({"heron", "gate"})),
        BankRow(2, 1, 20, np.array([0.0, 1.0, 0.0]), False, False, frozenset({"salt"})),
        BankRow(3, 1, 30, np.array([0.7, 0.7, 0.0]), False, False, frozenset({"bell"})),
        BankRow(4, 2, 40, np.array([0.0, 0.0, 1.0]), False, False, frozenset({"heron"})),
    ]
    return Bank.build(rows, 3)


def test_memory_methods_rank_through_the_product_and_see_only_the_lineage() -> None:
    bank = _bank()
    mask = lineage_mask(bank, ((1, None),))  # memory 4 is on another branch
    ids = [int(i) for i in bank.ids[mask]]
    texts = ["The heron gate.", "Salt on the pier.", "The bell rang."]
    q = MemoryQuery(
        bank,
        mask,
        input_vec=np.array([0.0, 1.0, 0.0], dtype=np.float32),
        context_vec=np.array([1.0, 0.0, 0.0], dtype=np.float32),
        narration_vec=np.array([1.0, 0.0, 0.0], dtype=np.float32),
        input_terms=["heron"],
        top_k=2,
    )
    out = memory_rankings(q, ids, texts)
    product = rank(bank, mask, q.input_vec, q.context_vec, ["heron"], bank.size)
    assert [ids[i] for i in out["talekeeper"].order] == [s.id for s in product.chosen]
    assert out["talekeeper"].inject == 2
    cosine = rank(bank, mask, q.input_vec, q.context_vec, [], bank.size)
    assert [ids[i] for i in out["cosine-only"].order] == [s.id for s in cosine.chosen]
    assert [ids[i] for i in out["narration-only"].order][0] == 1  # the narration's direction
    assert [ids[i] for i in out["bm25-memories"].order] == [1]  # only memory 1 says "heron"
    assert all(4 not in [ids[i] for i in r.order] for r in out.values())


def test_the_weight_grid_holds_the_weights_in_use_and_ranks_with_each() -> None:
    bank = _bank()
    mask = lineage_mask(bank, ((1, None),))
    ids = [int(i) for i in bank.ids[mask]]
    q = MemoryQuery(
        bank,
        mask,
        input_vec=np.array([0.0, 1.0, 0.0], dtype=np.float32),
        context_vec=np.array([1.0, 0.0, 0.0], dtype=np.float32),
        narration_vec=None,
        input_terms=["heron"],
        top_k=2,
    )
    grid = weight_rankings(q, ids)
    assert set(grid) == {weights_name(w) for w in WEIGHT_GRID}
    in_use = memory_rankings(q, ids, ["The heron gate.", "Salt on the pier.", "The bell rang."])
    assert grid[weights_name(WEIGHTS)].order == in_use["talekeeper"].order
    # With no lexical weight to speak of, the input's direction (memory 2) wins; with the
    # most, the one memory that says "heron" does.
    assert ids[grid[weights_name(Weights(1.0, 0.0, 0.15))].order[0]] == 2
    assert ids[grid[weights_name(Weights(0.6, 0.4, 1.0))].order[0]] == 1
