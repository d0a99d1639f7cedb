"""The library benchmark: its generated book, its figures on hand-made results, and a quick
run of every part through the real engine (the loopback double's embeddings, tiny sizes)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from pathlib import Path

import pytest
from benchmarks.library import measure
from benchmarks.library import run as library_run
from benchmarks.library.book import CHAPTERS, KINDS, fill, generate, questions
from benchmarks.library.measure import (
    GRID,
    IN_USE,
    LEXICAL_ONLY,
    SEMANTIC_ONLY,
    Asked,
    weighted,
    weights_name,
)
from benchmarks.library.metrics import (
    above,
    empty_share,
    percentile,
    rank_of,
    recall_at,
    sign_test,
)
from benchmarks.library.report import (
    best_floor,
    best_weights,
    floor_agreement,
    floor_row,
    markdown,
    score,
    wins,
)
from benchmarks.recall.play import EMBEDDERS, player

from benchmarks.kit.report import write_section
from talekeeper.services.library import search
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


def test_absent_entities_are_not_in_the_book() -> None:
    book = generate(10, 60_000)
    held = _words(book.markdown)
    assert book.absent
    for item in book.absent:
        assert not _words(item.entity) & held, item.entity
        assert item.entity in item.question


# -- the figures ---------------------------------------------------------------------------


def test_ranks_and_recall() -> None:
    assert rank_of(7, [3, 7, 9]) == 2
    assert rank_of(7, [3, 9]) is None
    assert rank_of(None, [3, 7]) is None
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


def test_a_floor_keeps_order_and_drops_only_what_is_under_it() -> None:
    returned = [(4, 0.61), (9, 0.35), (2, 0.2)]
    assert above(returned, 0.2) == [4, 9, 2]
    assert above(returned, 0.3) == [4, 9]
    assert above(returned, 0.7) == []
    assert empty_share([[1], [], [2, 3], []]) == 0.5


def test_the_sign_test() -> None:
    assert sign_test(0, 0) == 1.0
    assert sign_test(5, 5) == 1.0
    assert sign_test(10, 0) == pytest.approx(2 / 1024)
    assert sign_test(0, 10) == sign_test(10, 0)
    assert sign_test(9, 2) == pytest.approx(2 * (1 + 11 + 55) / 2048)


def _asked(answer: int | None, returned: list[tuple[int, float]], key: str = "q") -> Asked:
    return Asked(key, "export", "?", answer, {weights_name(w): returned for w in GRID})


def test_a_method_told_the_answer_scores_one_and_one_returning_nothing_zero() -> None:
    name = weights_name(IN_USE)
    oracle = [_asked(n, [(n, 0.9), (n + 100, 0.5)]) for n in range(10)]
    assert score(oracle, name) == (1.0, 1.0)
    nothing = [_asked(n, []) for n in range(10)]
    assert score(nothing, name) == (0.0, 0.0)
    second = [_asked(n, [(n + 100, 0.9), (n, 0.5)]) for n in range(10)]
    assert score(second, name) == (0.0, 1.0)
    # An absent question is no answerable question: it neither helps nor hurts recall.
    assert score([*oracle, _asked(None, [(1, 0.9)])], name) == (1.0, 1.0)


def test_the_tune_rules_pick_on_the_tune_set() -> None:
    lexical = weights_name(LEXICAL_ONLY)
    asked = [_asked(n, [(n + 100, 0.9)]) for n in range(4)]
    for item in asked:  # only the lexical-only ranking finds the answers
        item.returned[lexical] = [(int(item.answer or 0), 0.9)]
    assert best_weights(asked) == lexical
    tied = [_asked(n, [(n, 0.9)]) for n in range(4)]
    assert best_weights(tied) == weights_name(IN_USE)  # a tie changes nothing
    # Answers score 0.5, absent questions' best 0.3: a floor between them costs nothing.
    floor_set = [_asked(n, [(n, 0.5)]) for n in range(4)] + [_asked(None, [(1, 0.3)], "a")]
    name = weights_name(IN_USE)
    assert floor_row(floor_set, name, 0.2) == (1.0, 0.0, 0.0)
    assert floor_row(floor_set, name, 0.35) == (1.0, 0.0, 1.0)
    assert best_floor(floor_set, name) == 0.35
    assert floor_row(floor_set, name, 0.6) == (0.0, 1.0, 1.0)


def test_wins_count_the_questions_only_one_side_answers() -> None:
    new, old = weights_name(LEXICAL_ONLY), weights_name(IN_USE)
    asked = [_asked(n, [(n + 100, 0.9), (n + 200, 0.8), (n, 0.7)]) for n in range(5)]
    for item in asked[:3]:  # the new weights put three answers first
        item.returned[new] = [(int(item.answer or 0), 0.9)]
    asked[4].returned[new] = []  # and lose one the old found at 3
    assert wins(asked, new, old, 1) == (3, 0)
    assert wins(asked, new, old, 3) == (0, 1)


def test_weights_are_set_for_the_call_and_put_back() -> None:
    before = (search.SEMANTIC_WEIGHT, search.LEXICAL_WEIGHT)
    with weighted(LEXICAL_ONLY):
        assert (search.SEMANTIC_WEIGHT, search.LEXICAL_WEIGHT) == LEXICAL_ONLY
    assert before == (search.SEMANTIC_WEIGHT, search.LEXICAL_WEIGHT)
    with pytest.raises(RuntimeError), weighted((0.3, 0.7)):
        raise RuntimeError
    assert before == (search.SEMANTIC_WEIGHT, search.LEXICAL_WEIGHT)


# -- a quick run ---------------------------------------------------------------------------

TINY = library_run.Sizes(
    book_bytes=20_000,
    index_limit_s=120.0,
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
    assert im.complete and im.indexed == im.passages > 0 and im.batches >= im.passages // 32
    assert im.size_bytes >= TINY.book_bytes and im.prepare_s > 0
    # Recall: every question searched under every weights, and with the floor on.
    assert [s.seed for s in run.recall] == [3, 4]
    for seed in run.recall:
        assert seed.imported.complete and seed.imported.indexed == seed.imported.passages
        answerable = [a for a in seed.asked if a.answer is not None]
        assert len(answerable) == TINY.questions and len(seed.asked) > len(answerable)
        assert all(set(a.returned) == {weights_name(w) for w in GRID} for a in seed.asked)
        assert all(len(hits) <= measure.TOP_K for a in seed.asked for hits in a.returned.values())
    same, total, rounding = floor_agreement([a for s in run.recall for a in s.asked])
    assert same + rounding == total
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
    # A stored run reports the same as the run itself.
    stored = tmp_path / "run.json"
    stored.write_text(json.dumps(dataclasses.asdict(run)))
    assert markdown(library_run.load(stored)) == body
    text = doc.read_text()
    assert "kept" in text and text.count("<!-- bench:library -->") == 1


async def _search_under_each_weights() -> None:
    with ModelDouble() as double:
        async with player(EMBEDDERS["double"], double) as p:
            await measure.stop_indexer(p)
            book = generate(11, 20_000)
            imported = await measure.import_book(p, book, 60.0)
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
