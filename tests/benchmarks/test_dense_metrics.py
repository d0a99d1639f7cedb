"""The dense benchmark's measurements on hand-made inputs, its report on made-up results, and
a quick run through the real engine."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from benchmarks.kit.report import Clock
from benchmarks.recall.dense import run as dense_run
from benchmarks.recall.dense.baselines import (
    BLOCK_SIZES,
    RANKERS,
    blocks,
    bm25,
    cosine,
    hit,
    hybrid,
    lexical,
    order,
    tokens,
)
from benchmarks.recall.dense.generator import Statement, bucket, bucket_edges
from benchmarks.recall.dense.measure import (
    covers,
    fact_in,
    in_one_piece,
    key_kinds,
    sections,
    source_ranges,
)
from benchmarks.recall.dense.play import Background, ProbeResult, Ranked, Reading, reading
from benchmarks.recall.dense.report import Run, markdown

GREY_MARE = Statement("f1", "possession", 7, "Tal sold you a grey mare.", ("grey", "mare"))
HARROW = Statement("f2", "place", 30, "Tal's sister lives in Harrow.", ("harrow",))


def test_fact_in_prompt_needs_every_answer_word_of_every_statement() -> None:
    # The extractive writer turns "you" into the protagonist: the memory still holds it.
    memory = "- (established) Tal sold Aro a GREY mare, cheap."
    assert fact_in(memory, [GREY_MARE])
    assert not fact_in("- (established) Tal sold Aro a grey cloak.", [GREY_MARE])
    assert fact_in(memory + "\n- Tal's sister lives in Harrow.", [GREY_MARE, HARROW])
    assert not fact_in(memory, [GREY_MARE, HARROW])  # a multihop probe needs both
    assert not fact_in(memory, [])  # a probe that needs nothing is never "found"


def test_words_gathered_across_lines_are_no_statement() -> None:
    scattered = "- Mira owns a grey cloak.\n- Odo sold his mare."
    assert fact_in(scattered, [GREY_MARE])
    assert not in_one_piece(scattered, [GREY_MARE])
    assert in_one_piece("- x\n  from the story: Tal sold you a grey mare.", [GREY_MARE])
    # A summary is one paragraph: read a sentence at a time.
    summary = "Mira owns a grey cloak. Odo sold his mare. Tal is tired."
    assert not in_one_piece(summary, [GREY_MARE], "sentence")
    assert in_one_piece("Tal is tired. Tal sold Aro a grey mare.", [GREY_MARE], "sentence")


def test_memory_cover_needs_every_stating_depth_in_an_injected_range() -> None:
    ranges = [(1, 6), (25, 30), (None, None)]
    assert covers(ranges, [3, 30])
    assert not covers(ranges, [3, 12])  # 12 lies in no range
    assert not covers([(None, None)], [0])  # a hand-written memory covers nothing
    assert not covers(ranges, [])


def _snapshot(memories: str, used: list[dict[str, Any]], summary: str = "") -> dict[str, Any]:
    return {
        "sections": [
            {"name": "story_summary", "text": summary, "tokens": 3},
            {"name": "memories", "text": memories, "tokens": 41},
            {
                "name": "history",
                "text": '> You say "Where?"\n\nTal\'s sister is kind.',
                "tokens": 9,
            },
        ],
        "memories": {"used": used},
        "history": {"kept": 2},
    }


def test_a_reading_of_a_snapshot() -> None:
    used = [
        {"final_score": 1.2, "source": {"source_start": 1, "source_end": 12}, "matched": "source"},
        {"final_score": 0.9, "source": {"source_start": 25, "source_end": 30}, "matched": "text"},
        {"final_score": 0.8, "source": {"source_start": 13, "source_end": 18}},
    ]
    text = "[Memories]\n- (established) Odo sold Aro a grey mare.\n- Tal's sister lives in Harrow."
    got = reading(_snapshot(text, used, "Tal sold Aro a grey mare."), [GREY_MARE, HARROW])
    assert got == Reading(
        fact=True,
        one_line=True,
        summary=False,  # the summary holds one of the two statements only
        history=False,
        cover=True,
        tokens=41,
        injected=3,
        top_score=1.2,
        keys={"source": 1, "text": 1},  # the third memory does not say which key won
    )
    missed = reading(_snapshot("[Memories]\n- Mira hates eels.", used[2:]), [GREY_MARE])
    assert not missed.fact and not missed.cover and missed.keys == {}
    assert sections(_snapshot("x", []))["memories"] == ("x", 41)
    assert source_ranges(used) == [(1, 12), (25, 30), (13, 18)]
    assert key_kinds([{"matched": {"kind": "source"}}, {}]) == {"source": 1}


def test_blocks_are_whole_and_rendered() -> None:
    actions = [
        (d, "do" if d % 2 else "narration", f"I wait {d}" if d % 2 else f"Rain {d}.")
        for d in range(14)
    ]
    six = blocks(actions, 6, limit=13)
    assert [(b.start, b.end) for b in six] == [(0, 5), (6, 11)]  # 12..13 is not whole yet
    assert six[0].text.splitlines()[:3] == ["Rain 0.", "", "> You wait 1."]
    assert blocks(actions, 3, limit=4) == blocks(actions, 3, limit=5)[:1]


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
    # A shorter document wins a tie on term frequency.
    short = bm25(["key"], [["key", "a", "b", "c", "d"], ["key"], ["x"]])
    assert short[1] > short[0] > 0


def test_distance_buckets() -> None:
    edges = bucket_edges(40)
    assert edges[:4] == (41, 80, 120, 180)
    assert bucket(41, edges) == "41–79" and bucket(179, edges) == "120–179"
    assert bucket(400, edges) == "180+"
    assert bucket_edges(100)[:2] == (101, 120)  # edges below the window are dropped
    with pytest.raises(ValueError):
        bucket(40, edges)


def test_bm25_cosine_and_hybrid_rankings() -> None:
    texts = ["Mira hates eels.", "Tal sold you a grey mare.", "The mare is grey and old, grey."]
    lex = lexical("Who sold me the grey mare?", texts)
    assert lex[0] == 0 and lex[1] > 0 and lex[2] > 0
    assert order(lex)[2] == 0  # no shared term: last
    vectors = np.array([[1, 0], [0.6, 0.8], [0, 1]], dtype=np.float32)
    cos = cosine(np.array([1, 0], dtype=np.float32), vectors)
    assert cos == [1.0, pytest.approx(0.6), 0.0]
    # The hybrid adds the lexical score scaled by the probe's best: the top BM25 adds 0.75.
    mixed = hybrid(cos, lex)
    best = max(lex)
    assert mixed == [pytest.approx(c + 0.75 * x / best) for c, x in zip(cos, lex, strict=True)]
    assert hybrid([0.2, 0.1], [0.0, 0.0]) == [0.2, 0.1]  # no shared term: cosine alone
    assert order([0.5, 0.9, 0.5]) == [1, 0, 2]  # ties: the earlier block first


def test_a_baseline_hits_only_with_one_action_holding_each_statement() -> None:
    texts = [
        "Mira owns a grey cloak.\n\nOdo sold his mare.",  # the words, but across two actions
        "Tal sold you a grey mare.\n\nRain.",
        "Tal's sister lives in Harrow.",
    ]
    assert not hit([0], texts, [GREY_MARE], 1)
    assert hit([0, 1], texts, [GREY_MARE], 2) and not hit([0, 1], texts, [GREY_MARE], 1)
    assert hit([2, 1], texts, [GREY_MARE, HARROW], 2)
    assert not hit([2, 0], texts, [GREY_MARE, HARROW], 2)
    assert not hit([0, 1, 2], texts, [], 3)
    assert tokens([2, 0, 1], [10, 20, 30], 2) == 30 + 10


def _result(seed: int, kind: str, fact: bool, hits: bool) -> ProbeResult:
    statements = [] if kind == "never" else [{"depth": 3, "answer": ["grey", "mare"]}]
    r = ProbeResult(
        "embedded",
        seed,
        "a",
        "narrative",
        kind,
        60,
        None if kind == "never" else 55,
        "Where?",
        statements,
        history_kept=20,
    )
    for k in (5, 10):
        r.product[k] = Reading(fact, fact, False, False, fact, 300 * k // 5, 5, 1.0)
    for size in BLOCK_SIZES:
        for ranker in RANKERS:
            r.baselines[f"{ranker}/{size}"] = Ranked({5: hits, 10: True}, {5: 900, 10: 1800})
    return r


def test_the_report_keeps_the_tune_seed_apart() -> None:
    results = [_result(1, "direct", True, False), _result(1, "when", False, True)]
    results += [_result(2, "paraphrase", True, True) for _ in range(3)]
    results += [_result(2, "never", False, False)]
    run = Run(
        results,
        ["embedded"],
        1,
        [2],
        40,
        [
            {
                "key": "a",
                "seed": s,
                "style": "narrative",
                "actions": 150,
                "statements": 300,
                "probes": 3,
            }
            for s in (1, 2)
        ],
        {"embedded": 12.0},
        Clock("dense", "test machine", load_before=0.5, load_after=0.7, seconds=12.5),
        {"embedded": Background(10, 2.0, 4, 4, 800.0, 1000)},
    )
    text = markdown(run)
    assert "#### Tune seed 1" in text and "#### Held-out seeds 2" in text
    tune, held = text.split("#### Held-out seeds 2")
    assert "| **Talekeeper** (memories) | 0.50 | 0.50 | 0.50 | 300 | 600 |" in tune
    assert "| **Talekeeper** (memories) | 1.00 | 1.00 | 1.00 | 300 | 600 |" in held
    assert "| raw blocks of 6, hybrid | 1.00 | 1.00 |  | 900 | 1800 |" in held
    assert "| paraphrase | 3 | 1.00 | 1.00 |" in held and "| direct |" not in held
    assert "Never-stated facts (1 probe)" in held
    assert "200 ms and 250 tokens per memory" in text
    assert "load average 0.5 before and 0.7 after, 12 s in all (`dense`)." in text


def test_a_quick_run_through_the_engine(tmp_path: Path) -> None:
    """One short adventure per style, played for real with the loopback double's embedder:
    every probe measured, the history never holding a probed statement, the section
    written."""
    doc, out = tmp_path / "benchmarks.md", tmp_path / "dense.json"
    doc.write_text("# Benchmarks\n")
    code = dense_run.main(
        ["--quick", "--embedders", "double", "--write", str(doc), "--json", str(out)]
    )
    assert code == 0
    data = json.loads(out.read_text())
    planned = sum(len(a.questions) for a in dense_run.quick_set(dense_run.TUNE_SEED))
    results = data["results"]
    assert len(results) == planned == sum(a["probes"] for a in data["adventures"])
    assert not any(r["product"][k]["history"] for r in results for k in ("5", "10"))
    answered = [r for r in results if r["statements"]]
    assert any(r["product"]["5"]["fact"] for r in answered)
    assert all(r["product"]["5"]["tokens"] > 0 for r in results)
    never = [r for r in results if not r["statements"]]
    assert never and not any(b["hits"]["5"] for r in never for b in r["baselines"].values())
    assert data["background"]["double"]["memories"] > 0
    text = doc.read_text()
    assert "<!-- bench:dense-recall -->" in text and "## Recall on dense stories" in text
