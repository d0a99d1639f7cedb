"""The recall benchmark's metrics on hand-made rankings, and its report on made-up results."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from benchmarks.recall.methods import METHODS, REFERENCE, WEIGHT_GRID, Ranked, weights_name
from benchmarks.recall.metrics import (
    Outcome,
    bucket,
    bucket_edges,
    bucket_labels,
    false_hit_rate,
    mrr,
    outcome,
    recall_at,
    typical_hit_score,
)
from benchmarks.recall.probe import Leaving, ProbeResult
from benchmarks.recall.report import Run, markdown, miss_kinds

from talekeeper.services.memory.ranking import WEIGHTS


def test_outcome_reads_the_first_hit_off_the_ranking() -> None:
    ranked = Ranked(order=[2, 0, 3, 1], scores=[0.9, 0.7, 0.5, 0.1], inject=2)
    hits = [False, False, False, True]
    got = outcome(ranked, hits, [True, False, False, False], [10, 20, 30, 40])
    assert got.rank == 3 and not got.injected  # item 3 is third in the order
    assert got.top_score == 0.9 and got.hit_score == 0.5
    assert got.injected_states  # item 0 is injected (second) and states the fact
    assert got.injected_chars == 30 + 10
    first = outcome(ranked, [False, False, True, False], [False] * 4)
    assert first.rank == 1 and first.injected and first.hit_score == 0.9


def test_outcome_with_no_hit_or_nothing_ranked() -> None:
    none = outcome(Ranked([0, 1], [0.5, 0.4], 5), [False, False], [False, False])
    assert none.rank is None and not none.injected and none.hit_score is None
    empty = outcome(Ranked([], [], 3), [True], [True])
    assert empty.rank is None and empty.top_score is None and not empty.injected_states


def test_recall_at_k_and_mrr_by_hand() -> None:
    ranks = [1, 3, None, 6]
    assert recall_at(ranks, 1) == 0.25
    assert recall_at(ranks, 5) == 0.5
    assert recall_at(ranks, 6) == 0.75
    assert mrr(ranks) == pytest.approx((1 + 1 / 3 + 0 + 1 / 6) / 4)
    assert math.isnan(recall_at([], 5)) and math.isnan(mrr([]))


def _o(rank: int | None, top: float | None, hit: float | None = None) -> Outcome:
    return Outcome(rank, rank is not None and rank <= 5, top, hit, False)


def test_false_hits_compare_the_top_score_with_the_typical_first_ranked_hit() -> None:
    hits = [_o(1, 0.8, 0.8), _o(1, 0.6, 0.6), _o(2, 0.9, 0.5), _o(None, 0.4)]
    assert typical_hit_score(hits) == pytest.approx(0.7)  # median of 0.8 and 0.6 only
    never = [_o(None, 0.75), _o(None, 0.69), _o(None, None), _o(None, 0.7)]
    assert false_hit_rate(never, 0.7) == 0.5
    assert math.isnan(false_hit_rate(never, None)) and typical_hit_score([_o(None, 1.0)]) is None


def test_distance_buckets() -> None:
    edges = bucket_edges(40)
    assert edges[:4] == (41, 80, 120, 180)
    assert bucket(41, edges) == "41–79" and bucket(179, edges) == "120–179"
    assert bucket(400, edges) == "180+"
    assert bucket_labels(edges) == ["41–79", "80–119", "120–179", "180+"]
    assert bucket_edges(100)[:2] == (101, 120)  # edges below the window are dropped
    with pytest.raises(ValueError):
        bucket(40, edges)


def _result(fact: str, role: str, rank: int | None, distance: int | None) -> ProbeResult:
    r = ProbeResult("embedded", "a1", fact, "name", role, 90, distance, cast=rank == 1)
    r.outcomes = {m: _o(rank, 0.5, 0.5 if rank else None) for m in METHODS}
    r.covered, r.covering_states = role == "planted", rank == 1
    return r


def _run(results: list[ProbeResult], **more: Any) -> Run:
    probes = len(results)
    return Run(
        results=results,
        leavings=more.pop("leavings", []),
        embedders=["embedded"],
        window=40,
        adventures=[{"key": "a1", "actions": 150, "facts": 2, "probes": probes}],
        seconds={"embedded": 12.0},
        machine="test machine",
        load=(0.1, 0.2),
        seed=1,
        **more,
    )


def test_the_report_words_a_missed_target_and_zero_honesty_failures(tmp_path: Path) -> None:
    results = [_result("f1", "planted", 1, 50), _result("f2", "planted", None, 130)]
    results += [_result("n1", "never", None, None), _result("undone", "undone", None, 60)]
    run = _run(results, leavings=[Leaving("embedded", "a1", "undone", 1)])
    text = markdown(run, ["benchmarks/recall-by-method.png"])
    assert "**missed** by 0.45 (0.50)" in text and "Why:" in text
    assert "| embedded | undo | 1 | 1 of 1 adventures | 0 | 0 | 0 |" in text
    assert "| 41–79 | 1 |" in text and "| 120–179 | 1 |" in text
    assert "![benchmarks/recall-by-method.png](benchmarks/recall-by-method.png)" in text
    pytest.importorskip("matplotlib")
    from benchmarks.recall import plots

    paths = plots.draw(run, tmp_path)
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in paths)


def _graded(fact: str, in_use: int | None, other: int | None) -> ProbeResult:
    r = _result(fact, "planted", in_use, 60)
    r.grid = {weights_name(w): _o(other, 0.5, 0.5 if other else None) for w in WEIGHT_GRID}
    r.grid[weights_name(WEIGHTS)] = _o(in_use, 0.5, 0.5 if in_use else None)
    return r


def test_the_weights_table_compares_every_weights_on_every_set() -> None:
    never = _result("n1", "never", None, None)
    never.grid = {weights_name(w): _o(None, 0.6) for w in WEIGHT_GRID}  # scores like a hit
    main = [_graded("f1", 1, 1), _graded("f2", None, 2), never]
    other = [_graded("f3", 6, 1)]
    run = _run(main, sweep={7: other})
    text = markdown(run)
    assert (
        "| input/context + lexical | embedded, seed 1 | embedded, seed 7 | embedded, all 2 sets |"
        in text
    )
    in_use = weights_name(WEIGHTS)
    assert (
        f"| **{in_use}** (in use) | 0.50 / 0.50 / 1.00 | 0.00 / 0.17 / – | 0.33 / 0.39 / 1.00 |"
        in text
    )
    reference = weights_name(REFERENCE)
    if reference != in_use:
        assert f"| {reference} (the reference's, in use before) | 1.00 / 0.75 / 1.00 |" in text
    # Every other weights beats those in use on both sets here: all are listed.
    assert "on every embedded set: " + weights_name(WEIGHT_GRID[0]) in text


def test_misses_are_sorted_by_their_first_reason() -> None:
    unstated = _result("f1", "planted", None, 60)
    unstated.covering_states = False
    addressed = _result("f2", "planted", 9, 60)
    addressed.covering_states, addressed.question = True, "Vegurk, how did I hurt my shoulder?"
    addressed.covering_text = "A lynx rakes Rorao's left shoulder."
    no_word = _result("f3", "planted", None, 60)
    no_word.covering_states, no_word.question = True, "What do we say at the grille?"
    no_word.covering_text = "The password for the ossuary grate is heron."
    other = _result("f4", "planted", 7, 60)
    other.covering_states, other.question = True, "Where is the heron?"
    other.covering_text = "The heron sleeps in the reeds."
    hit = _result("f5", "planted", 2, 60)
    kinds = miss_kinds([unstated, addressed, no_word, other, hit])
    assert {k: [r.fact for r in v] for k, v in kinds.items()} == {
        "unstated": ["f1"],
        "addressed": ["f2"],
        "no word": ["f3"],
        "other": ["f4"],
    }
