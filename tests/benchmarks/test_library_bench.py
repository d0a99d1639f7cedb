"""The library benchmark: its generated book, its figures on hand-made results, and a quick
run of every part through the real engine (the loopback double's embeddings, tiny sizes)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from benchmarks.kit.report import write_section
from benchmarks.kit.runtime import EMBEDDERS, player
from benchmarks.library import measure
from benchmarks.library import run as library_run
from benchmarks.library.book import CHAPTERS, KINDS, fill, generate, questions
from benchmarks.library.measure import (
    IN_USE,
    LEXICAL_ONLY,
    SEMANTIC_ONLY,
    SIGNALS,
    Asked,
    weighted,
)
from benchmarks.library.report import floored_score, markdown, percentile, rank_of, recall_at, score

from talekeeper.services.library import ranking
from talekeeper.services.memory.terms import terms
from talekeeper_testkit.double import ModelDouble

_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


# -- the book ------------------------------------------------------------------------------


def test_the_book_is_seeded_and_sized() -> None:
    one, again, other = generate(5, 40_000), generate(5, 40_000), generate(6, 40_000)
    assert one.markdown == again.markdown and one.facts == again.facts
    assert one.markdown != other.markdown
    assert 40_000 <= len(one.data) < 50_000  # whole towns: a little over, never under
    assert len(generate(5, 120_000).data) >= 120_000
    assert [f.key for f in questions(one, 30)] == [f.key for f in questions(again, 30)]


def test_every_fact_is_stated_once_and_every_kind_has_a_chapter() -> None:
    book = generate(7, 60_000)
    for fact in book.facts:
        assert book.markdown.count(fact.sentence) == 1, fact.sentence
        assert fact.entity in fact.sentence and fact.entity in fact.question
    keys = [k for f in book.facts for k in [f.key]]
    assert len(keys) == len(set(keys))
    chaptered = [kind for _, kinds in CHAPTERS for kind in kinds]
    assert sorted(chaptered) == sorted(k.key for k in KINDS)


def test_a_question_shares_no_word_with_its_statement_but_the_entity() -> None:
    for kind in KINDS:
        for statement in kind.statements:
            said = set(terms(fill(statement, "", "", "")))
            for question in kind.questions:
                assert not said & set(terms(fill(question, ""))), (statement, question)
    for fact in generate(8, 60_000).facts:
        entity = set(terms(fact.entity))
        assert not (set(terms(fact.value)) - entity) & set(terms(fact.question)), fact


def test_questions_are_drawn_evenly_over_kinds() -> None:
    chosen = questions(generate(9, 100_000), len(KINDS) * 3)
    counts = {k.key: sum(1 for f in chosen if f.kind == k.key) for k in KINDS}
    assert set(counts.values()) == {3}


# -- the figures ---------------------------------------------------------------------------


def test_ranks_and_recall() -> None:
    assert rank_of(7, [3, 7, 9]) == 2
    assert rank_of(7, [3, 9]) is None
    ranks = [1, 2, 3, None]
    assert recall_at(ranks, 1) == 0.25
    assert recall_at(ranks, 3) == 0.75
    assert recall_at([], 3) == 0.0


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 51)]
    assert percentile(values, 50) == 25.0
    assert percentile(values, 95) == 48.0
    assert percentile(values, 100) == 50.0
    assert percentile([4.0], 95) == 4.0
    assert percentile([], 50) == 0.0


def _asked(answer: int, returned: list[int]) -> Asked:
    return Asked("q", "export", "?", answer, {w: returned for w in SIGNALS}, returned)


def test_a_method_told_the_answer_scores_one_and_one_returning_nothing_zero() -> None:
    oracle = [_asked(n, [n, n + 100]) for n in range(10)]
    assert score(oracle, IN_USE) == (1.0, 1.0) and floored_score(oracle) == 1.0
    nothing = [_asked(n, []) for n in range(10)]
    assert score(nothing, IN_USE) == (0.0, 0.0) and floored_score(nothing) == 0.0
    second = [_asked(n, [n + 100, n]) for n in range(10)]
    assert score(second, IN_USE) == (0.0, 1.0)
    for item in second:  # only the lexical-only search puts the answer first
        item.returned[LEXICAL_ONLY] = [item.answer]
    assert score(second, LEXICAL_ONLY) == (1.0, 1.0) and score(second, IN_USE) == (0.0, 1.0)


def test_weights_are_set_for_the_call_and_put_back() -> None:
    before = (ranking.SEMANTIC_WEIGHT, ranking.LEXICAL_WEIGHT)
    with weighted(LEXICAL_ONLY):
        assert (ranking.SEMANTIC_WEIGHT, ranking.LEXICAL_WEIGHT) == LEXICAL_ONLY
    assert before == (ranking.SEMANTIC_WEIGHT, ranking.LEXICAL_WEIGHT)
    with pytest.raises(RuntimeError), weighted((0.3, 0.7)):
        raise RuntimeError
    assert before == (ranking.SEMANTIC_WEIGHT, ranking.LEXICAL_WEIGHT)


# -- a quick run ---------------------------------------------------------------------------

TINY = library_run.Sizes(
    book_bytes=20_000,
    recall_bytes=20_000,
    questions=6,
    library=(150, 400),
    per_book_bytes=40_000,
    queries=5,
    cold=2,
)


def test_a_quick_run_of_every_part(tmp_path: Path) -> None:
    run = asyncio.run(
        library_run.collect(TINY, embedder_key="double", tune_seed=3, held_out=(4,), short=True)
    )
    im = run.imported
    assert im.passages > 0 and im.batches >= im.passages // 32
    assert im.size_bytes >= TINY.book_bytes and im.prepare_s > 0 and im.index_s > 0
    # Recall: every question searched under each signal's weights, and with the floor on.
    assert [s.book.seed for s in run.recall] == [3, 4]
    for seed in run.recall:
        assert len(seed.asked) == TINY.questions
        assert all(set(a.returned) == set(SIGNALS) for a in seed.asked)
        assert all(len(hits) <= measure.TOP_K for a in seed.asked for hits in a.returned.values())
        # The floor only drops the floor-off search's lowest: what is left is its head.
        assert all(a.floored == a.returned[IN_USE][: len(a.floored)] for a in seed.asked)
    # Latency: the library grew to each size, and the database with it.
    sizes = [row.passages for row in run.latency]
    assert sizes[0] >= 150 and sizes[1] >= 400 and sizes[0] < sizes[1]
    assert run.latency[0].db_bytes < run.latency[1].db_bytes
    assert all(len(r.cold_ms) == 2 and len(r.warm_ms) == 5 for r in run.latency)
    assert (
        run.latency[1].tables["library_passages"] >= run.latency[1].payloads["library_passages"] > 0
    )
    assert run.width == 64 and len(run.embed_ms) == TINY.queries  # the double's vectors
    # The section replaces only itself.
    doc = tmp_path / "benchmarks.md"
    doc.write_text("# Benchmarks\n\n<!-- bench:other -->\nkept\n<!-- /bench:other -->\n")
    body = markdown(run)
    for heading in ("### Import speed", "### Retrieval latency", "### Recall of paraphrased"):
        assert heading in body
    write_section(doc, library_run.SECTION, library_run.TITLE, body)
    write_section(doc, library_run.SECTION, library_run.TITLE, body)
    text = doc.read_text()
    assert "kept" in text and text.count("<!-- bench:library -->") == 1


async def _search_under_each_weights() -> None:
    with ModelDouble() as double:
        async with player(EMBEDDERS["double"], double) as p:
            book = generate(11, 20_000)
            imported = await measure.import_book(p, book)
            assert p.rt.knowledge is not None
            for fact in questions(book, 8):
                seen = {}
                for w in (LEXICAL_ONLY, SEMANTIC_ONLY, IN_USE):
                    with weighted(w):
                        got = await p.rt.knowledge.search(
                            p.uid,
                            [imported.source_id],
                            fact.question,
                            "",
                            3,
                            p.models,
                            floor=False,
                        )
                    seen[w] = got.used
                # The weights reach the product's score: each signal alone is the final score.
                for hit in seen[LEXICAL_ONLY]:
                    assert hit.lexical_score > 0
                    assert hit.final_score == pytest.approx(hit.lexical_score, abs=1e-4)
                for hit in seen[SEMANTIC_ONLY]:
                    semantic = max(hit.semantic_score or 0.0, 0.0)
                    assert hit.final_score == pytest.approx(semantic, abs=1e-4)
                for hit in seen[IN_USE]:
                    mixed = IN_USE[0] * max(hit.semantic_score or 0.0, 0.0)
                    mixed += IN_USE[1] * hit.lexical_score
                    assert hit.final_score == pytest.approx(mixed, abs=1e-3)


def test_the_baselines_are_the_products_search_under_other_weights() -> None:
    asyncio.run(_search_under_each_weights())
