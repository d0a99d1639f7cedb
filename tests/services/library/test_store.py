"""The library's rules (``services.library.store``) on a real migrated database: what an
upload is refused for, what it writes, the per-user caps, ownership, removal, re-indexing,
a changed embedding model, and the sources attached to an adventure.

Real parts: the app's runtime on the loopback model double (``Env``, in
``tests/kit/library_runtime.py``, shared with the indexer's and the search's tests), the
cl100k counter, the full-text index.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, update
from tests.kit.library_runtime import COUNTER, EMBED, Env, build_env, numbered
from tests.services.library import builders

from talekeeper.core.errors import Conflict, InvalidInput, NotFound
from talekeeper.services.common.limits import MAX_ID
from talekeeper.services.library import store
from talekeeper.services.story import adventures
from talekeeper.storage.db import read_scope, session_scope
from talekeeper.storage.models import Adventure, AdventureKnowledge, LibraryPassage, LibrarySource
from talekeeper.storage.vocabulary import SourceState
from talekeeper_testkit.double import ModelDouble


@pytest.fixture
def env(tmp_path: Path, double: ModelDouble) -> Iterator[Env]:
    yield from build_env(tmp_path, double)


def counts(env: Env) -> tuple[int, int, int]:
    """Sources, passages and attachments in the whole database."""
    with read_scope(env.sessions) as session:
        return (
            int(session.scalar(select(func.count()).select_from(LibrarySource)) or 0),
            int(session.scalar(select(func.count()).select_from(LibraryPassage)) or 0),
            int(session.scalar(select(func.count()).select_from(AdventureKnowledge)) or 0),
        )


# -- prepare: what is refused, with the reason --------------------------------------------


@pytest.mark.parametrize(
    "name, data, words",
    [
        ("", b"text", ["Name the file", "?filename="]),
        ("  ", b"text", ["Name the file"]),
        ("folder/", b"text", ["Name the file"]),
        ("a\x00b.txt", b"text", ["control characters", "rename"]),
        ("a\u200bb.txt", b"text", ["control characters"]),
        ("x" * 252 + ".txt", b"text", ["256 characters", "at most 255"]),
        ("notes.txt", b"", ["empty", "request body"]),
        ("notes.txt", b" \n\n \t ", ["no text"]),
        ("scan.pdf", builders.blank_pdf(), ["OCR"]),
        ("manual.pdf", b"\x8f\x01 random bytes \x02\x03" * 40, ["not a PDF", "%PDF-"]),
        ("manual.pdf", b"<html><body><p>Not found</p></body></html>", ["not a PDF"]),
        ("broken.pdf", b"%PDF-1.7\n" + b"\x00garbage" * 50, ["cannot be read"]),
        ("book.epub", b"plain words", ["not an EPUB"]),
        ("photo.png", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8, ["not a text document"]),
        ("tool.exe", b"MZ\x90\x00\x03" + bytes(range(1, 32)) * 30, ["not a text document"]),
        ("letter.docx", builders.zip_of({"word/document.xml": b"<w/>"}), ["not an EPUB"]),
    ],
)
def test_prepare_refuses_with_the_reason(name: str, data: bytes, words: list[str]) -> None:
    with pytest.raises(InvalidInput) as refused:
        store.prepare(name, data, COUNTER)
    for word in words:
        assert word in refused.value.message, refused.value.message


def test_a_corrupt_epub_is_refused() -> None:
    book = builders.ebook([builders.chapter("a.xhtml", "A", "<h1>A</h1><p>Alpha text.</p>")])
    assert store.prepare("whole.epub", book, COUNTER).kind == "epub"
    for broken in (book[: len(book) // 2], book[:30] + b"\x00" * 200 + book[230:]):
        with pytest.raises(InvalidInput, match="cannot be read|not an EPUB"):
            store.prepare("book.epub", broken, COUNTER)


@pytest.mark.parametrize(
    "data, text",
    [
        (b"An old DOS letter.\r\nYours truly.\r\n\x1a", "An old DOS letter. Yours truly. \x1a"),
        ("Caf\xe9 cr\xe8me, na\xefve.".encode("cp1252"), "Café crème, naïve."),
        ("With a mark.".encode("utf-16"), "With a mark."),
        ("No mark.".encode("utf-16-le"), "No mark."),  # its NULs are dropped
        (b"\x1b[1mBold\x1b[0m log line.", "\x1b[1mBold\x1b[0m log line."),
        (b"Vertical\x0btab and form\x0cfeed.", "Vertical tab and form feed."),
    ],
)
def test_odd_but_real_text_files_are_read(data: bytes, text: str) -> None:
    prepared = store.prepare("old.txt", data, COUNTER)
    assert [p.text for p in prepared.passages] == [text]


def test_prepare_names_the_source_by_its_file_without_folders() -> None:
    prepared = store.prepare("C:\\Users\\me\\Canon\\coast notes.txt", b"Words.", COUNTER)
    assert prepared.filename == "coast notes.txt"
    assert prepared.title == "coast notes" and prepared.kind == "txt"
    titled = store.prepare("bible.md", b"# The Salt Coast\n\nWords.", COUNTER)
    assert titled.title == "The Salt Coast"


# -- store: one unit, with the caps ---------------------------------------------------------


def test_a_stored_source_holds_its_passages_in_order_with_their_place(env: Env) -> None:
    data = builders.pdf(
        [("Book One", 0, ["The harbour freezes."]), ("Gulls", 1, ["Gulls nest on slate."])]
    )
    source = env.add(data, "coast.pdf")
    row = env.row(source)
    assert (row.kind, row.state, row.vector_model) == ("pdf", SourceState.INDEXING, EMBED)
    assert (row.embedded, row.revision, row.failures, row.error) == (0, 0, 0, None)
    passages = env.passages(source)
    assert row.passage_count == len(passages) == 2
    assert row.token_count == sum(p.tokens for p in passages)
    assert row.characters == sum(len(p.text) for p in passages)
    assert [p.position for p in passages] == [0, 1]
    assert [json.loads(p.heading_path) for p in passages] == [["Book One"], ["Book One", "Gulls"]]
    assert [p.page for p in passages] == [1, 2]
    assert [p.terms.split()[-3:] for p in passages] == [
        ["one", "harbour", "freeze"],
        ["gull", "nest", "slate"],
    ]
    assert all(p.vector is None for p in passages)
    assert env.holding("gull", [source]) == [passages[1].id]


def test_without_an_embedding_model_a_source_is_words_only(env: Env) -> None:
    env.settings(embedding_model="none")
    assert env.model() is None
    row = env.row(env.add(b"Words alone.", "a.txt"))
    assert (row.state, row.vector_model) == (SourceState.WORDS_ONLY, None)
    view = store.source_view(row)
    assert (view["state"], view["embedded"], view["progress"]) == ("words_only", 0, 0.0)


def test_the_source_cap_refuses_before_anything_is_written(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "MAX_SOURCES", 2)
    other = env.user("other")
    env.add(b"First.", "1.txt")
    env.add(b"Second.", "2.txt")
    env.add(b"Another user's.", "3.txt", user_id=other)  # the cap is each user's
    before = counts(env)
    with pytest.raises(Conflict) as refused:
        env.add(b"Third.", "4.txt")
    assert refused.value.code == "limit_reached" and "delete sources" in refused.value.message
    assert counts(env) == before


def test_the_passage_cap_counts_the_new_file_whole(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "MAX_PASSAGES", 5)
    env.add(numbered(3), "three.md")
    before = counts(env)
    with pytest.raises(Conflict) as refused:
        env.add(numbered(3), "three-more.md")  # 6 > 5: refused, not cut
    assert refused.value.code == "limit_reached" and "3 passages" in refused.value.message
    assert counts(env) == before
    env.add(numbered(2), "two.md")  # exactly at the cap
    assert counts(env)[1] == 5


# -- ownership and removal ------------------------------------------------------------------


def test_another_users_source_is_not_found(env: Env) -> None:
    other = env.user("other")
    theirs = env.add(b"Their secret.", "s.txt", user_id=other)
    with session_scope(env.sessions) as session:
        for source_id in (theirs, 0, -1, MAX_ID + 1, theirs + 1):
            with pytest.raises(NotFound, match=f"no library source {source_id}"):
                store.source(session, env.user_id, source_id)
        with pytest.raises(NotFound):
            store.remove(session, env.user_id, theirs)
        with pytest.raises(NotFound):
            store.reindex(session, env.user_id, theirs, EMBED)
        assert store.sources(session, env.user_id) == []
        assert store.source(session, other, theirs).id == theirs


def test_removing_a_source_takes_its_passages_index_and_attachments(env: Env) -> None:
    gone, kept = env.add(numbered(3), "gone.md"), env.add(numbered(2), "kept.md")
    adventure = env.adventure()
    with session_scope(env.sessions) as session:
        store.set_attached(session, session.get_one(Adventure, adventure), [gone, kept])
    with session_scope(env.sessions) as session:
        store.remove(session, env.user_id, gone)
    assert env.passages(gone) == [] and len(env.passages(kept)) == 2
    assert env.holding("lantern", [gone, kept]) == [p.id for p in env.passages(kept)]
    with read_scope(env.sessions) as session:
        assert store.attached_ids(session, adventure) == [kept]


# -- re-indexing and a changed model -------------------------------------------------------


def test_reindex_drops_the_vectors_and_rebuilds_the_terms(env: Env) -> None:
    source = env.add(numbered(3, "beacon"), "b.md")
    env.index()
    before = env.row(source)
    assert before.state == SourceState.READY and before.embedded == 3
    with session_scope(env.sessions) as session:  # terms gone stale, say by a rule change
        session.execute(update(LibraryPassage).values(terms="stale"))
        session.execute(
            update(LibrarySource).values(state=SourceState.FAILED, error="x", failures=4)
        )
    with session_scope(env.sessions) as session:
        store.reindex(session, env.user_id, source, EMBED)
    row = env.row(source)
    assert (row.state, row.embedded, row.error, row.failures, row.retry_at) == (
        SourceState.INDEXING,
        0,
        None,
        0,
        None,
    )
    assert row.revision == before.revision + 1
    passages = env.passages(source)
    assert all(p.vector is None and p.vector_model is None for p in passages)
    assert all(p.terms.startswith("entry") for p in passages)
    assert env.holding("beacon", [source]) == [p.id for p in passages]
    assert env.holding("stale", [source]) == []
    calls = env.double.embedding_calls
    env.index()
    assert env.row(source).state == SourceState.READY
    assert env.double.embedding_calls == calls + 1  # made again, in one batch


def test_a_changed_model_starts_the_sources_again_and_none_makes_them_words_only(
    env: Env,
) -> None:
    source = env.add(numbered(2), "a.md")
    env.index()
    with session_scope(env.sessions) as session:
        assert store.sync_model(session, env.user_id, EMBED) == 0  # nothing to do
        assert store.sync_model(session, env.user_id, "double-embed-2") == 1
    row = env.row(source)
    assert (row.state, row.vector_model, row.embedded) == (
        SourceState.INDEXING,
        "double-embed-2",
        0,
    )
    with session_scope(env.sessions) as session:
        assert store.sync_model(session, env.user_id, None) == 1
    row = env.row(source)
    assert (row.state, row.vector_model) == (SourceState.WORDS_ONLY, None)
    with session_scope(env.sessions) as session:
        assert store.sync_model(session, env.user_id, None) == 0
        assert store.sync_model(session, env.user_id, EMBED) == 1
    # Back to the model its vectors are of: they were kept, so nothing is embedded again.
    calls = env.double.embedding_calls
    env.index()
    row = env.row(source)
    assert (row.state, row.embedded) == (SourceState.READY, 2)
    assert env.double.embedding_calls == calls


# -- attachments ----------------------------------------------------------------------------


def attach(env: Env, adventure: int, ids: list[Any]) -> list[int]:
    with session_scope(env.sessions) as session:
        row = session.get_one(Adventure, adventure)
        store.set_attached(session, row, ids)
    with read_scope(env.sessions) as session:
        return store.attached_ids(session, adventure)


def test_attaching_replaces_exactly_and_collapses_duplicates(env: Env) -> None:
    a, b, c = (env.add(f"Source {n}.".encode(), f"{n}.txt") for n in "abc")
    adventure, other_adventure = env.adventure(), env.adventure(title="Other")
    assert attach(env, adventure, [b, a, b, a]) == [a, b]
    assert attach(env, adventure, [c]) == [c]
    assert attach(env, other_adventure, [a]) == [a]
    assert attach(env, adventure, []) == []
    assert attach(env, other_adventure, [a, a]) == [a]
    with read_scope(env.sessions) as session:
        assert store.attached_counts(session, [a, b, c]) == {a: 1}


@pytest.mark.parametrize("bad", ["1", True, -1, 0, 1.5, MAX_ID + 1, None, [1]])
def test_attaching_a_value_that_is_no_id_is_refused_and_changes_nothing(env: Env, bad: Any) -> None:
    source = env.add(b"Kept.", "k.txt")
    adventure = env.adventure()
    attach(env, adventure, [source])
    with pytest.raises(InvalidInput, match="source_ids"):
        attach(env, adventure, [bad])
    assert attach(env, adventure, [source]) == [source]


def test_attaching_an_unknown_or_anothers_source_is_not_found_and_changes_nothing(
    env: Env,
) -> None:
    mine = env.add(b"Mine.", "m.txt")
    theirs = env.add(b"Theirs.", "t.txt", user_id=env.user("other"))
    adventure = env.adventure()
    attach(env, adventure, [mine])
    for wanted in ([theirs], [mine, theirs], [theirs + 99]):
        with pytest.raises(NotFound):
            attach(env, adventure, wanted)
        with read_scope(env.sessions) as session:
            assert store.attached_ids(session, adventure) == [mine]


def test_at_most_max_attached_sources(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store, "MAX_ATTACHED", 2)
    ids = [env.add(f"Source {n}.".encode(), f"{n}.txt") for n in range(3)]
    adventure = env.adventure()
    assert attach(env, adventure, ids[:2] + ids[:2]) == ids[:2]  # duplicates count once
    with pytest.raises(InvalidInput, match="at most 2"):
        attach(env, adventure, ids)
    with read_scope(env.sessions) as session:
        assert store.attached_ids(session, adventure) == ids[:2]


def test_deleting_an_adventure_removes_its_attachments(env: Env) -> None:
    source = env.add(b"Kept.", "k.txt")
    adventure = env.adventure()
    attach(env, adventure, [source])
    with session_scope(env.sessions) as session:
        adventures.delete(session, adventure, env.user_id)
    assert counts(env) == (1, 1, 0)


def test_the_view_shows_progress_and_the_failure(env: Env) -> None:
    source = env.add(numbered(4), "n.md")
    row = env.row(source)
    view = store.source_view(row, attached_to=2)
    assert view["state"] == "indexing" and view["progress"] == 0.0
    assert view["attached_to"] == 2 and view["embedding_model"] == EMBED
    row.embedded = 1
    row.state = SourceState.FAILED
    row.error = "the endpoint said no"
    assert store.source_view(row)["progress"] == 0.25
    assert store.source_view(row)["error"] == "the endpoint said no"
    assert "attached_to" not in store.source_view(row)
