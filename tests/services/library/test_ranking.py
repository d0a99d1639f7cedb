"""The library's scoring (``services.library.ranking``) on arrays alone: the two floors of
the choice, the runners-up, ties to the earlier passage, the weights read when a search
runs; and the searched sources as Insights stores them (``search.SourceBrief``).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from talekeeper.services.library import ranking
from talekeeper.services.library.ranking import (
    MIN_SCORE,
    RELATIVE_FLOOR,
    RUNNERS_UP,
    Ranked,
    best,
    choose,
    place,
    rank,
)
from talekeeper.services.library.search import KnowledgeResult, SourceBrief
from talekeeper.services.library.vectors import Vectors
from talekeeper.services.prompt.insights.stored import KnowledgePart
from talekeeper.storage.vocabulary import SourceState

pytestmark = pytest.mark.no_database


def ranked(final: list[float], keep: int) -> Ranked:
    ids = np.arange(1, len(final) + 1, dtype=np.int64)
    scores = np.asarray(final, dtype=np.float64)
    nothing = np.full(scores.size, np.nan)
    return Ranked(ids, nothing, scores, scores, best(ids, scores, keep), {})


def test_a_turn_leaves_out_what_falls_under_either_floor() -> None:
    assert (MIN_SCORE, RELATIVE_FLOOR, RUNNERS_UP) == (0.25, 0.5, 3)
    scores = ranked([0.9, 0.5, 0.44, 0.3, 0.2, 0.1, 0.0], keep=5 + RUNNERS_UP)
    # Under half the best one's 0.9: 0.44 rides on loose words, though over MIN_SCORE.
    assert choose(scores, 5, floor=True) == ([0, 1], [2, 3, 4])
    weak = ranked([0.3, 0.2], keep=5 + RUNNERS_UP)  # half of 0.3 is under MIN_SCORE
    assert choose(weak, 5, floor=True) == ([0], [1])


def test_the_search_box_takes_the_best_top_k_above_zero() -> None:
    scores = ranked([0.9, 0.5, 0.44, 0.3, 0.2, 0.1, 0.0], keep=5 + RUNNERS_UP)
    assert choose(scores, 5, floor=False) == ([0, 1, 2, 3, 4], [5, 6])
    assert choose(ranked([0.0, 0.0], keep=RUNNERS_UP + 1), 1, floor=False) == ([], [0, 1])


def test_equal_scores_go_to_the_earlier_passage_in_the_order_and_each_rank() -> None:
    ids = np.asarray([30, 10, 20, 40], dtype=np.int64)
    final = np.asarray([0.5, 0.5, 0.7, 0.5])
    assert best(ids, final, 3) == [2, 1, 0]  # 0.7, then the 0.5s by id
    assert [place(ids, final, row) for row in range(4)] == [3, 2, 1, 4]
    unranked = np.asarray([np.nan, 0.5, np.nan, 0.5])
    assert [place(ids, unranked, row) for row in range(4)] == [None, 1, None, 2]


def test_the_weights_are_read_when_a_search_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    matrix = np.eye(2, dtype=np.float32)
    vectors = [Vectors("m", 1, np.asarray([1, 2], dtype=np.int64), matrix)]
    query = np.asarray([1.0, 0.0], dtype=np.float32)
    mixed = rank(["lamp"], [[2]], vectors, query, 2, 2)
    assert list(mixed.final) == pytest.approx([ranking.SEMANTIC_WEIGHT, ranking.LEXICAL_WEIGHT])
    monkeypatch.setattr(ranking, "SEMANTIC_WEIGHT", 0.0)
    monkeypatch.setattr(ranking, "LEXICAL_WEIGHT", 1.0)
    words = rank(["lamp"], [[2]], vectors, query, 2, 2)
    assert list(words.final) == [0.0, 1.0] and words.order == [1, 0]


def test_the_searched_sources_are_stored_in_insights_as_plain_json() -> None:
    failed = SourceBrief(7, "Atlas", SourceState.FAILED, 12, 4, "timed out")
    ready = SourceBrief(8, "Novel", SourceState.READY, 3, 3, None)
    result = KnowledgeResult(sources=[failed, ready])
    assert result.source_ids == [7, 8] and result.failed_source_ids == [7]
    stored = KnowledgePart.of(result).public()["sources"]
    assert json.loads(json.dumps(stored)) == [
        {
            "id": 7,
            "title": "Atlas",
            "state": "failed",
            "passage_count": 12,
            "embedded": 4,
            "error": "timed out",
        },
        {
            "id": 8,
            "title": "Novel",
            "state": "ready",
            "passage_count": 3,
            "embedded": 3,
            "error": None,
        },
    ]
