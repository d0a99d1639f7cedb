"""The knowledge library's full-text index on either database (this file runs on each pass).

``fulltext.holding`` must answer exactly what a reading of the passages' terms answers:
the passages whose terms hold the asked term as a whole word. The reference here is that
reading, done in Python; both passes are held to it, so SQLite's FTS5 table and
PostgreSQL's GIN index return the same ids. Real parts: a migrated database, passages
written and indexed by the store (``services.library.store``), terms made by ``terms``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from tests.conftest import database_url

from talekeeper.core.tokens import BpeCounter
from talekeeper.services.library import store
from talekeeper.services.memory.terms import terms
from talekeeper.storage import fulltext, migrate
from talekeeper.storage.db import make_engine, make_session_factory, session_scope
from talekeeper.storage.models import LibraryPassage
from talekeeper.storage.repositories.users import UserRepository

COUNTER = BpeCounter()

# One paragraph a passage (the paragraphs are short and each is its own section).
TRICKY = [
    "Captain O'Brien keeps the lighthouse.",
    "O Brien is a different man, and Brien a third.",
    "The café on the quay serves bitter coffee.",
    "A cafe without an accent is a cheaper place.",
    "CAFÉ written in capitals, CAFE too.",
    "東京タワー stands over the harbour.",
    "東京 alone, and abc東京 run together.",
    "In 1984 the 3rd bell rang x² times; 1984 again.",
    "Don't rock'n'roll near the AND gate.",
    "Plain words: lantern, rope, harbour.",
]


@pytest.fixture
def sessions(tmp_path: Path) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(database_url(tmp_path / "fulltext.db"))
    migrate.upgrade(engine)
    yield make_session_factory(engine)
    engine.dispose()


def markdown(paragraphs: list[str]) -> bytes:
    """A Markdown file with one heading per paragraph: each paragraph one passage."""
    return "\n\n".join(f"# Part {i}\n\n{p}" for i, p in enumerate(paragraphs)).encode()


def add_source(sessions: sessionmaker[Session], paragraphs: list[str], name: str) -> int:
    prepared = store.prepare(name, markdown(paragraphs), COUNTER)
    assert len(prepared.passages) == len(paragraphs)
    with session_scope(sessions) as session:
        user = UserRepository(session).local_user().id
        return store.store(session, user, prepared, None).id


def passage_terms(sessions: sessionmaker[Session], source_ids: list[int]) -> dict[int, list[str]]:
    with session_scope(sessions) as session:
        rows = session.execute(
            select(LibraryPassage.id, LibraryPassage.terms)
            .where(LibraryPassage.source_id.in_(source_ids))
            .order_by(LibraryPassage.id)
        ).all()
    return {int(pid): str(t).split() for pid, t in rows}


def reference(index: dict[int, list[str]], term: str) -> list[int]:
    return sorted(pid for pid, held in index.items() if term.lower() in held)


def holding(
    sessions: sessionmaker[Session], asked: list[str], source_ids: list[int]
) -> list[list[int]]:
    with session_scope(sessions) as session:
        return [sorted(ids) for ids in fulltext.holding(session, asked, source_ids)]


def test_the_tricky_terms_are_found_exactly_as_the_terms_read(
    sessions: sessionmaker[Session],
) -> None:
    source = add_source(sessions, TRICKY, "tricky.md")
    index = passage_terms(sessions, [source])
    asked = sorted({t for p in TRICKY for t in terms(p)} | {"o", "brien", "東京", "abc"})
    found = holding(sessions, asked, [source])
    assert found == [reference(index, t) for t in asked]
    by_term = dict(zip(asked, found, strict=True))
    ids = sorted(index)
    # Spelled out, so the reference itself is checked too.
    assert by_term["o'brien"] == [ids[0]]  # not the "O Brien" of the next passage
    assert by_term["brien"] == [ids[1]]  # nor is "brien" found inside "o'brien"
    assert by_term["o"] == [ids[1]]
    assert by_term["café"] == [ids[2], ids[4]]  # accents matter; capitals do not
    assert by_term["cafe"] == [ids[3], ids[4]]
    assert by_term["東京タワー"] == [ids[5]]
    assert by_term["東京"] == [ids[6]]  # a run of CJK is one term: no part of one matches
    assert by_term["abc東京"] == [ids[6]]
    assert by_term["1984"] == by_term["3rd"] == by_term["x²"] == [ids[7]]
    assert by_term["rock'n'roll"] == by_term["near"] == [ids[8]]


@pytest.mark.parametrize(
    "asked",
    ['"', '""', "*", "cast*", "NEAR", "near", "AND", "OR", "NOT", "lantern OR rope",
     "lantern NEAR rope", "NEAR(lantern rope)", "^lantern", "lantern:", "{terms}: rope",
     "(", "'", "-", "a'", "'s", "\\", "%", "_", "lan%", "x_y", "CAFÉ"],
)  # fmt: skip
def test_query_syntax_is_a_plain_word_never_an_error(
    sessions: sessionmaker[Session], asked: str
) -> None:
    source = add_source(sessions, TRICKY, "tricky.md")
    index = passage_terms(sessions, [source])
    [found] = holding(sessions, [asked], [source])
    assert found == reference(index, asked)


def test_syntax_words_that_are_words_are_found_as_words(
    sessions: sessionmaker[Session],
) -> None:
    source = add_source(sessions, TRICKY, "tricky.md")
    ids = sorted(passage_terms(sessions, [source]))
    near, operator, star, capital = holding(
        sessions, ["NEAR", "lantern OR rope", "*", "CAFÉ"], [source]
    )
    assert near == [ids[8]]  # "near" is in that passage (the upper case is folded)
    assert operator == star == []  # no passage holds the word "lantern OR rope" or "*"
    assert capital == [ids[2], ids[4]]


def test_another_sources_passages_are_never_returned(sessions: sessionmaker[Session]) -> None:
    mine = add_source(sessions, ["The lantern is lit.", "A rope and a lantern."], "mine.md")
    theirs = add_source(sessions, ["Their lantern, their rope."], "theirs.md")
    index = passage_terms(sessions, [mine, theirs])
    mine_ids = sorted(passage_terms(sessions, [mine]))
    lantern, rope = holding(sessions, ["lantern", "rope"], [mine])
    assert lantern == mine_ids and rope == [mine_ids[1]]
    both = holding(sessions, ["lantern"], [mine, theirs])
    assert both == [reference(index, "lantern")] and len(both[0]) == 3
    assert holding(sessions, ["lantern"], []) == [[]]
    assert holding(sessions, ["lantern"], [theirs + 1000]) == [[]]


def test_a_removed_source_is_gone_from_the_index(sessions: sessionmaker[Session]) -> None:
    gone = add_source(sessions, ["The lantern is lit."], "gone.md")
    kept = add_source(sessions, ["Another lantern."], "kept.md")
    with session_scope(sessions) as session:
        store.remove(session, UserRepository(session).local_user().id, gone)
    assert holding(sessions, ["lantern"], [gone, kept]) == [sorted(passage_terms(sessions, [kept]))]


WORDS = st.sampled_from(
    ["o'brien", "o", "brien", "café", "cafe", "東京", "タワー", "東京タワー", "1984", "3rd",
     "x²", "don't", "rock'n'roll", "lantern", "lanterns", "near", "and", "ÉCLAIR", "éclair"]
)  # fmt: skip
TEXTS = st.lists(st.lists(WORDS, min_size=1, max_size=8).map(" ".join), min_size=1, max_size=6)


def test_any_mix_of_tricky_words_is_found_as_the_terms_read(
    sessions: sessionmaker[Session],
) -> None:
    made: list[int] = []

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(TEXTS, st.lists(WORDS, min_size=1, max_size=5))
    def check(paragraphs: list[str], asked: list[str]) -> None:
        source = add_source(sessions, paragraphs, f"mix{len(made)}.md")
        made.append(source)
        index = passage_terms(sessions, [source])
        query = [t for a in asked for t in terms(a)] or ["o"]
        assert holding(sessions, query, [source]) == [reference(index, t) for t in query]

    check()
    assert made


# Words of any script: letters and digits of every Unicode category, apostrophes inside.
LETTERS = st.characters(whitelist_categories=("Lu", "Ll", "Lt", "Lm", "Lo", "Nd", "Nl", "No"))
UNICODE_WORDS = st.lists(st.text(LETTERS, min_size=1, max_size=4), min_size=1, max_size=2).map(
    "'".join
)


def test_words_of_any_script_are_found_as_the_terms_read(
    sessions: sessionmaker[Session],
) -> None:
    made: list[int] = []

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(st.lists(UNICODE_WORDS, min_size=1, max_size=6), min_size=1, max_size=4))
    def check(paragraphs: list[list[str]]) -> None:
        texts = [" ".join(words) + " lantern" for words in paragraphs]
        source = add_source(sessions, texts, f"script{len(made)}.md")
        made.append(source)
        index = passage_terms(sessions, [source])
        query = sorted({t for held in index.values() for t in held})
        assert holding(sessions, query, [source]) == [reference(index, t) for t in query]

    check()
    assert made
