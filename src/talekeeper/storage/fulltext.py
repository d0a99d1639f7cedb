"""The knowledge library's full-text index: which passages hold a term, on either database.

The index holds each passage's ``terms`` (``services.memory.terms``: lowercase words,
stop words removed, plurals folded), so it agrees with the memories on what a word is; a
query asks it one term at a time, and the scoring is ours (``services.library.ranking``),
identical on both databases. The index only answers "which passages hold this term".

- SQLite: an FTS5 table ``library_fts`` (rowid = the passage's id, ``source_id``
  unindexed), tokenizer ``unicode61`` with diacritics kept and the apostrophe a word
  character, so a term is one token ("o'brien", "café"). Rows are written and deleted
  here, with the passages (a virtual table has no cascade).
- PostgreSQL: a GIN index over ``to_tsvector('simple', terms)``: the ``simple``
  configuration only lowercases, and a term is asked as a phrase, so "o'brien" (two
  lexemes there) still means the two words side by side.

Invariants: a term reaches the database only as a bound parameter; ``holding`` returns
only passages of the sources asked for; a passage holds a term when the term, lowercased,
is one of the words of its ``terms``, whole (the index finds the candidates, and the words
themselves are checked, so "brien" never matches "o'brien" on PostgreSQL, whose parser
splits at the apostrophe); anything that is not one word as ``terms`` makes them (FTS
syntax, spaces, punctuation) is held by no passage, never an error. So both backends
return the same ids (``tests/storage/test_fulltext.py`` runs on both).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from sqlalchemy import bindparam, text
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Session

from talekeeper.storage.dialect import Backend, backend_of

FTS_TABLE = "library_fts"  # SQLite (with its shadow tables, library_fts_*)
FTS_INDEX = "ix_library_passages_fts"  # PostgreSQL
SQLITE_CREATE = (
    f"CREATE VIRTUAL TABLE {FTS_TABLE} USING fts5(terms, source_id UNINDEXED, "
    "tokenize=\"unicode61 remove_diacritics 0 tokenchars ''''\")"
)
# One word as ``services.memory.terms`` makes them: letters and digits, apostrophes inside.
TERM = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
POSTGRESQL_CREATE = (
    f"CREATE INDEX {FTS_INDEX} ON library_passages "
    "USING gin (to_tsvector('simple'::regconfig, terms))"
)


def create(connection: Connection) -> None:
    """The index (a migration's step)."""
    if backend_of(connection) is Backend.SQLITE:
        connection.exec_driver_sql(SQLITE_CREATE)
    else:
        connection.exec_driver_sql(POSTGRESQL_CREATE)


def drop(connection: Connection) -> None:
    if backend_of(connection) is Backend.SQLITE:
        connection.exec_driver_sql(f"DROP TABLE IF EXISTS {FTS_TABLE}")
    else:
        connection.exec_driver_sql(f"DROP INDEX IF EXISTS {FTS_INDEX}")


def is_index_object(name: str | None) -> bool:
    """Whether a database object is the index's own (the models do not describe it)."""
    return bool(name) and (name == FTS_INDEX or str(name).startswith(FTS_TABLE))


def add(session: Session, rows: Sequence[tuple[int, int, str]]) -> None:
    """Index passages ``(id, source_id, terms)`` just inserted (PostgreSQL indexes its own)."""
    if rows and backend_of(session.get_bind()) is Backend.SQLITE:
        session.execute(
            text(f"INSERT INTO {FTS_TABLE} (rowid, terms, source_id) VALUES (:id, :terms, :sid)"),
            [{"id": i, "sid": s, "terms": t} for i, s, t in rows],
        )


def remove_source(session: Session, source_id: int) -> None:
    """Forget a source's passages (before the source's rows are deleted)."""
    if backend_of(session.get_bind()) is Backend.SQLITE:
        session.execute(text(f"DELETE FROM {FTS_TABLE} WHERE source_id = :sid"), {"sid": source_id})


def holding(session: Session, terms: Sequence[str], source_ids: Sequence[int]) -> list[list[int]]:
    """For each term, the ids of the passages of ``source_ids`` that hold it."""
    if not terms or not source_ids:
        return [[] for _ in terms]
    sqlite = backend_of(session.get_bind()) is Backend.SQLITE
    if sqlite:
        # FTS5's tokens are our words already (the tokenizer splits only where ``terms``
        # does), so a quoted word matches whole words only: no check of the text needed.
        statement = text(
            f"SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH :query AND source_id IN :ids"
        )
    else:
        statement = text(
            "SELECT id FROM library_passages WHERE source_id IN :ids AND "
            "to_tsvector('simple'::regconfig, terms) @@ "
            "phraseto_tsquery('simple'::regconfig, :query) "
            "AND strpos(' ' || terms || ' ', :word) > 0"
        )
    statement = statement.bindparams(bindparam("ids", expanding=True))
    out: list[list[int]] = []
    for term in terms:
        word = term.lower()
        if not TERM.fullmatch(word):
            out.append([])  # the index holds only words: nothing holds this one
            continue
        query = f'"{word}"' if sqlite else word  # in double quotes FTS5 reads no operator
        values = {"query": query, "word": f" {word} ", "ids": list(source_ids)}
        out.append(list(session.execute(statement, values).scalars()))
    return out
