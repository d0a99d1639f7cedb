"""The library's search (``services.library.search.KnowledgeSearch``) on a real migrated
database: the idf-weighted lexical score, the semantic score and their mix, the floor a
turn applies and the search box does not, top-K and the runners-up, passages without a
vector, ties, other users' sources, a query that cannot be embedded, the vector cache, and
the Knowledge section's budget.

Real parts: the app's runtime on the loopback model double (its deterministic embeddings:
``embed_text``), passages stored and indexed by the store and the indexer.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.kit.library_runtime import EMBED, Env, build_env, sections

from talekeeper.core.tokens import BpeCounter
from talekeeper.services.library import store
from talekeeper.services.library.ranking import (
    CONTEXT_WEIGHT,
    INPUT_WEIGHT,
    LEXICAL_WEIGHT,
    MIN_SCORE,
    RUNNERS_UP,
    SEMANTIC_WEIGHT,
)
from talekeeper.services.library.search import KnowledgeResult, KnowledgeSearch
from talekeeper.services.prompt.budgets import KNOWLEDGE_SLOT_TOKENS
from talekeeper.storage.db import session_scope
from talekeeper_testkit.double import ModelDouble, embed_text

COUNTER = BpeCounter()


@pytest.fixture
def env(tmp_path: Path, double: ModelDouble) -> Iterator[Env]:
    yield from build_env(tmp_path, double)


@pytest.fixture
def words(tmp_path: Path, double: ModelDouble) -> Iterator[Env]:
    """No embedding model: everything is ranked by words."""
    yield from build_env(tmp_path, double, embedding_model="none")


def search(
    env: Env,
    query: str,
    *,
    source_ids: list[int] | None = None,
    context: str = "",
    top_k: int = 3,
    floor: bool = True,
    searcher: KnowledgeSearch | None = None,
    user_id: int | None = None,
) -> KnowledgeResult:
    searcher = searcher or env.runtime.knowledge
    assert searcher is not None
    uid = user_id or env.user_id
    models = env.models(uid)
    found = searcher.search(uid, source_ids, query, context, top_k, models, floor=floor)
    result: KnowledgeResult = env.run(found)
    return result


def texts(hits: list[Any]) -> list[str]:
    return [h.text for h in hits]


# -- the lexical score ----------------------------------------------------------------------


def test_a_rare_term_outweighs_a_common_one(words: Env) -> None:
    paragraphs = [f"The lantern of house {n} burns." for n in range(5)]
    paragraphs += ["A gull circles the bay.", "Nothing here."]
    source = words.add(sections(*paragraphs), "coast.md")
    found = search(words, "lantern gull", source_ids=[source], top_k=10, floor=False)
    weights = found.query["term_weights"]
    assert weights["gull"] > weights["lantern"] > 0
    assert found.used[0].text == "A gull circles the bay."
    assert [h.text for h in found.used[1:]] == paragraphs[:5]  # then by reading order
    total = weights["gull"] + weights["lantern"]
    assert found.used[0].lexical_score == pytest.approx(weights["gull"] / total, abs=1e-3)
    assert found.used[1].lexical_score == pytest.approx(weights["lantern"] / total, abs=1e-3)
    for hit in found.used:
        assert hit.semantic_score is None  # no embedding model: no vector at all
        assert hit.final_score == pytest.approx(LEXICAL_WEIGHT * hit.lexical_score, abs=1e-3)
    assert found.considered == 7
    assert found.note == "no embedding model: ranked by words only"


def test_a_one_passage_source_is_found_by_its_words(words: Env) -> None:
    """Every term of the query is in the only passage: it is still a match, a full one."""
    source = words.add(b"Ysolde the archivist keeps the keys of the Drowned Library.", "n.txt")
    found = search(words, "Ysolde keys", source_ids=[source])
    assert len(found.used) == 1 and "Ysolde" in found.used[0].text
    assert found.used[0].lexical_score == 1.0
    assert found.used[0].final_score == pytest.approx(LEXICAL_WEIGHT)


def test_a_term_every_passage_holds_still_counts_a_little(words: Env) -> None:
    both = words.add(sections("The tide is high.", "The tide is low."), "tide.md")
    found = search(words, "tide high", source_ids=[both], top_k=5, floor=False)
    assert texts(found.used) == ["The tide is high.", "The tide is low."]
    assert 0 < found.used[1].lexical_score < found.used[0].lexical_score == 1.0


def test_the_floor_applies_to_a_turn_not_to_the_search_box(words: Env) -> None:
    source = words.add(
        sections("The beacon on the cliff.", "Orrin sails the cutter.", "Salt and tar."), "a.md"
    )
    query = "beacon harpoon whalebone"  # the passage holds one term of three
    turn = search(words, query, source_ids=[source])
    assert turn.used == [] and turn.note == "no embedding model: ranked by words only"
    assert [h.text for h in turn.runners_up] == ["The beacon on the cliff."]
    assert turn.runners_up[0].final_score < MIN_SCORE
    box = search(words, query, source_ids=[source], floor=False)
    assert [h.text for h in box.used] == ["The beacon on the cliff."]
    assert turn.reason() == turn.note  # nothing went in: Insights says why


def test_top_k_is_respected_and_the_next_ones_are_runners_up(words: Env) -> None:
    paragraphs = [f"Bell {n} rings over the harbour {'harbour ' * n}." for n in range(7)]
    source = words.add(sections(*paragraphs), "bells.md")
    found = search(words, "bell harbour", source_ids=[source], top_k=2)
    assert len(found.used) == 2 and len(found.runners_up) == RUNNERS_UP
    ranked = [*found.used, *found.runners_up]
    scores = [h.final_score for h in ranked]
    assert scores == sorted(scores, reverse=True)
    assert not {h.passage_id for h in found.used} & {h.passage_id for h in found.runners_up}
    assert [h.lexical_rank for h in ranked] == [1, 2, 3, 4, 5]
    assert search(words, "bell", source_ids=[source], top_k=0).used == []
    assert search(words, "bell", source_ids=[source], top_k=0).note == (
        "the knowledge top-K setting is 0"
    )


def test_ties_go_in_reading_order(env: Env) -> None:
    same = "The lamp oil is smuggled past the customs house."
    first = env.add(sections("Other things.", same, same), "first.md")
    second = env.add(sections(same), "second.md")
    env.index()
    found = search(env, "lamp oil customs", top_k=3)
    assert [(h.source_id, h.position) for h in found.used] == [(first, 1), (first, 2), (second, 0)]
    assert len({h.final_score for h in found.used}) == 1


# -- vectors, and passages without one ----------------------------------------------------


def unit(text: str) -> np.ndarray:
    vector = np.asarray(embed_text(text), dtype=np.float64)
    return vector / np.linalg.norm(vector)


def test_the_score_mixes_the_cosine_with_the_words(env: Env) -> None:
    source = env.add(sections("The archivist Ysolde keeps the keys.", "Gulls and slate."), "a.md")
    env.index()
    query, context = "Ysolde keys", "The tide is low at Marrow Point."
    found = search(env, query, context=context, source_ids=[source], floor=False, top_k=2)
    hit = found.used[0]
    weighted = INPUT_WEIGHT * unit(query) + CONTEXT_WEIGHT * unit(context)
    cosine = float(unit(hit.text) @ (weighted / np.linalg.norm(weighted)))
    assert hit.semantic_score == pytest.approx(cosine, abs=1e-3)
    expected = SEMANTIC_WEIGHT * max(cosine, 0) + LEXICAL_WEIGHT * hit.lexical_score
    assert hit.final_score == pytest.approx(expected, abs=1e-3)
    assert found.query["input_terms"] == ["ysolde", "keys"]
    assert found.note == ""


def test_passages_without_a_vector_are_ranked_by_words(env: Env) -> None:
    ready = env.add(sections("The lighthouse keeper is named Brann."), "ready.md")
    env.index()
    waiting = env.add(sections("Brann keeps a second lighthouse."), "waiting.md")
    found = search(env, "Brann lighthouse", top_k=5, floor=False)
    by_source = {h.source_id: h for h in found.used}
    assert set(by_source) == {ready, waiting}
    assert by_source[ready].semantic_score is not None
    assert by_source[waiting].semantic_score is None and by_source[waiting].lexical_score == 1.0
    assert found.note.startswith("1 source(s) not fully indexed yet")
    assert [s.state for s in found.sources] == ["ready", "indexing"]


def test_a_query_that_cannot_be_embedded_is_ranked_by_words(env: Env) -> None:
    source = env.add(sections("Brann keeps the lighthouse."), "a.md")
    env.index()
    env.double.fail_next("500", model=EMBED)
    found = search(env, "Brann lighthouse", source_ids=[source])
    assert [h.text for h in found.used] == ["Brann keeps the lighthouse."]
    assert found.used[0].semantic_score is None
    assert found.note.startswith("the query could not be embedded")
    assert "ranked by words only" in found.note


def test_a_deleted_and_uploaded_again_source_is_not_served_stale_vectors(env: Env) -> None:
    """On SQLite a new row may take the id of the last one deleted; the cache must not take
    the new source for the old one."""
    old = env.add(sections("Salt cod dries on racks.", "Nets hang by the door."), "a.md")
    env.index()
    search(env, "cod nets", source_ids=[old])  # the old vectors are cached
    with session_scope(env.sessions) as session:
        store.remove(session, env.user_id, old)
    new = env.add(sections("Copper doors open at low tide.", "Ysolde keeps keys."), "b.md")
    env.index()
    cached = search(env, "copper doors", source_ids=[new], floor=False)
    fresh = search(
        env, "copper doors", source_ids=[new], floor=False, searcher=KnowledgeSearch(env.sessions)
    )
    assert [(h.passage_id, h.semantic_score) for h in cached.used] == [
        (h.passage_id, h.semantic_score) for h in fresh.used
    ]
    top = cached.used[0]
    assert top.semantic_score == pytest.approx(
        float(unit(top.text) @ unit("copper doors")), abs=1e-3
    )


# -- whose sources -------------------------------------------------------------------------


def test_another_users_sources_are_never_searched(env: Env) -> None:
    other = env.user("other")
    theirs = env.add(sections("Their secret vault under the chapel."), "t.md", user_id=other)
    mine = env.add(sections("My vault is empty."), "m.md")
    env.index()
    everything = search(env, "secret vault chapel", top_k=10, floor=False)
    assert {h.source_id for h in everything.used} == {mine}
    assert everything.considered == 1
    asked = search(env, "secret vault chapel", source_ids=[theirs], floor=False)
    assert asked.used == [] and asked.sources == [] and asked.note == "no library attached"
    assert search(env, "vault", source_ids=[]).note == "no library attached"
    empty = search(env, "vault", user_id=env.user("third"))
    assert empty.note == "the library is empty"


# -- the Knowledge section's budget ---------------------------------------------------------


def test_a_passage_that_does_not_fit_the_section_is_not_in_context(env: Env) -> None:
    long_title = "The Complete and Unabridged Annals " * 8
    body = " ".join(f"Ysolde word{n} keeps the copper keys." for n in range(24))
    big = env.add(f"# {long_title}\n\n{body}".encode(), "annals.md")
    small = env.add(sections("Ysolde keeps the copper keys."), "note.md")
    env.index()
    found = search(env, "Ysolde copper keys", top_k=1, source_ids=[big])
    assert len(found.used) == 1
    found.fit(COUNTER, KNOWLEDGE_SLOT_TOKENS * found.top_k)
    assert found.used[0].in_context is False  # its heading line and text pass one slot
    assert found.section_text() == ""
    assert found.reason() == (found.note or "no library passage scored high enough")

    both = search(env, "Ysolde copper keys", top_k=2, source_ids=[small, big])
    both.fit(COUNTER, KNOWLEDGE_SLOT_TOKENS * both.top_k)
    assert [h.in_context for h in both.used] == [True, True]  # two slots hold both
    assert both.section_text().count("From ") == 2
    assert both.reason() == f"2 of {both.considered:,} library passages considered"
    both.keep(1)
    assert [h.in_context for h in both.used] == [True, False]
    assert math.isclose(both.used[0].final_score, max(h.final_score for h in both.used))
