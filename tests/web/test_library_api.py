"""The knowledge library over the JSON API: upload, background vectors, search, attach, and
the passage that reaches the narrator with its scores and place (Insights and dry run).

Every rule and refusal of the routes, each with a test that fails if it breaks: each kind
of file with the place of its passages; every refused upload (a 4xx saying what to fix,
nothing written); the per-user caps; another account's library, out of reach; a foreign
page's upload; attaching; the background vectors (progress, a failure searched by words
and caught up after a turn, words only, reindex); knowledge without the Memory Bank; and
an overflowing context that cuts Knowledge first while Insights says what went in.

Real parts: the app on a migrated database (either pass), the loopback model double
(embeddings, scripted replies, ``fail_next`` faults), the app's own background indexer;
the body-size test speaks raw HTTP to the app under uvicorn."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from ebooklib import epub
from fastapi.testclient import TestClient
from sqlalchemy import update
from tests.background import postpone
from tests.conftest import LOCAL, double_settings
from tests.kit.accounts import As
from tests.kit.library import BIBLE, listed, refused, settled, upload
from tests.kit.web import OCTETS, post_head, raw
from tests.services.library import builders

from talekeeper.core.clock import utcnow
from talekeeper.services.background.port import Subject
from talekeeper.services.library import store
from talekeeper.services.library.indexer import BATCH
from talekeeper.settings import Settings
from talekeeper.storage.db import session_scope
from talekeeper.storage.models import LibrarySource
from talekeeper.web.app import create_app
from talekeeper.web.guard import LIBRARY_FILE_MAX
from talekeeper_testkit.double import ModelDouble
from talekeeper_testkit.live import serving


def wait_ready(client: TestClient, source_id: int, timeout: float = 20.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        got = client.get(f"/api/library/{source_id}").json()
        if got["state"] == "ready" or time.monotonic() > deadline:
            return got  # type: ignore[no-any-return]
        time.sleep(0.1)


def adventure(client: TestClient) -> int:
    made = client.post("/api/adventures", json={"title": "Salt"})
    assert made.status_code == 201, made.text
    return int(made.json()["id"])


def test_an_uploaded_bible_is_indexed_attached_and_reaches_the_narrator(
    client: TestClient, double: ModelDouble
) -> None:
    made = upload(client, BIBLE, "salt-coast.md")
    assert made.status_code == 201, made.text
    source = made.json()
    assert source["title"] == "The Salt Coast" and source["kind"] == "md"
    assert source["passage_count"] >= 3
    ready = wait_ready(client, source["id"])
    assert ready["state"] == "ready", ready
    assert ready["embedded"] == ready["passage_count"] and ready["progress"] == 1.0
    found = client.get("/api/library/search", params={"q": "copper doors vault"}).json()
    assert found["hits"][0]["heading_path"][-1] == "The Drowned Library"
    aid = adventure(client)
    put = client.put(f"/api/adventures/{aid}/knowledge", json={"source_ids": [source["id"]]})
    assert put.status_code == 200, put.text
    assert [s["id"] for s in put.json()["sources"]] == [source["id"]]
    dry = client.post(
        f"/api/adventures/{aid}/insights/dry-run",
        json={"type": "do", "text": "I search for the Drowned Library and its copper doors"},
    )
    assert dry.status_code == 200, dry.text
    insights = dry.json()
    section = next(s for s in insights["sections"] if s["name"] == "knowledge")
    assert "Drowned Library" in section["text"]
    assert section["passages"][0]["location"].endswith("The Drowned Library")
    used = insights["knowledge"]["used"][0]
    assert used["lexical_score"] > 0 and used["semantic_score"] is not None


# -- helpers ----------------------------------------------------------------------------------

EMBED = "double-embed"
FOREIGN = {"origin": "http://evil.example"}
SOURCE_FIELDS = {
    "id", "title", "filename", "kind", "size_bytes", "characters", "passage_count",
    "token_count", "state", "embedding_model", "embedded", "progress", "error", "retry_at",
    "created_at", "attached_to",
}  # fmt: skip


def hits(client: Any, query: str, limit: int = 10) -> list[dict[str, Any]]:
    answer = client.get("/api/library/search", params={"q": query, "limit": limit})
    assert answer.status_code == 200, answer.text
    return answer.json()["hits"]  # type: ignore[no-any-return]


def attach(client: Any, aid: int, ids: list[Any]) -> Any:
    return client.put(f"/api/adventures/{aid}/knowledge", json={"source_ids": ids})


def attached(client: Any, aid: int) -> list[tuple[int, str]]:
    answer = client.get(f"/api/adventures/{aid}/knowledge")
    assert answer.status_code == 200, answer.text
    return [(s["id"], s["state"]) for s in answer.json()["sources"]]


def dry_run(client: TestClient, aid: int, text: str) -> dict[str, Any]:
    answer = client.post(
        f"/api/adventures/{aid}/insights/dry-run", json={"type": "do", "text": text}
    )
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def knowledge_section(insights: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in insights["sections"] if s["name"] == "knowledge")


def runtime_of(client: TestClient) -> Any:
    return client.app.state.runtime  # type: ignore[attr-defined]


# -- every kind, with its place ---------------------------------------------------------------

HTML = (
    b"<html><head><title>Harbour Guide</title><script>alert(1)</script></head><body>"
    b"<h1>Harbour</h1><h2>Customs</h2><p>The customs house weighs every barrel of lamp oil."
    b"</p></body></html>"
)


def pdf_file() -> bytes:
    return builders.pdf(
        [
            ("Book One", 0, ["The first page is about nothing much."]),
            ("Gulls", 1, ["Gulls nest on the slate roofs of Gullhaven."]),
        ],
        title="Coast Atlas",
    )


def epub_file() -> bytes:
    chapters = [
        builders.chapter("a.xhtml", "Crossing", "<h1>Crossing</h1><p>A ferry leaves at dawn.</p>"),
        builders.chapter(
            "b.xhtml", "Vessmoor", "<h1>Vessmoor</h1><p>The abbey stands on a tidal island.</p>"
        ),
    ]
    return builders.ebook(chapters, [(epub.Section("Book One"), chapters)], title="Tidewalker")


KINDS = [
    # name, bytes, kind, title, query, location of the first hit
    ("orrin.txt", b"Orrin smuggles lamp oil past the customs house.", "txt", "orrin",
     "smuggles lamp oil", ""),
    ("salt-coast.md", BIBLE, "md", "The Salt Coast", "copper doors vault",
     "The Salt Coast › Places › The Drowned Library"),
    ("guide.html", HTML, "html", "Harbour Guide", "customs barrel", "Harbour › Customs"),
    ("atlas.pdf", pdf_file(), "pdf", "Coast Atlas", "gulls nest slate", "Book One › Gulls, p. 2"),
    ("tide.epub", epub_file(), "epub", "Tidewalker", "abbey tidal island",
     "Book One › Vessmoor"),
]  # fmt: skip


@pytest.mark.parametrize(
    "name, data, kind, title, query, location", KINDS, ids=[k[2] for k in KINDS]
)
def test_each_kind_is_uploaded_with_the_place_of_its_passages(
    client: TestClient, name: str, data: bytes, kind: str, title: str, query: str, location: str
) -> None:
    made = upload(client, data, name)
    assert made.status_code == 201, made.text
    source = made.json()
    assert set(source) == SOURCE_FIELDS
    assert (source["kind"], source["title"], source["filename"]) == (kind, title, name)
    assert source["size_bytes"] == len(data) and source["passage_count"] >= 1
    assert source["state"] == "indexing" and source["embedded"] == 0
    assert source["embedding_model"] == EMBED and source["attached_to"] == 0
    assert source["characters"] > 0 and source["token_count"] > 0
    assert [s["id"] for s in listed(client)] == [source["id"]]
    ready = wait_ready(client, source["id"])
    assert (ready["state"], ready["progress"]) == ("ready", 1.0)
    found = hits(client, query)
    assert found[0]["source_id"] == source["id"] and found[0]["location"] == location
    assert "alert" not in json.dumps(found)  # a script is never text


# -- refusals -----------------------------------------------------------------------------------

REFUSALS = [
    # query, body, words of the message
    ({}, b"words", ["Name the file", "?filename="]),
    ({"filename": ""}, b"words", ["Name the file"]),
    ({"filename": "bad\x07name.txt"}, b"words", ["control characters", "rename"]),
    ({"filename": "x" * 300 + ".txt"}, b"words", ["304 characters", "at most 255"]),
    ({"filename": "empty.txt"}, b"", ["empty", "request body"]),
    ({"filename": "blank.txt"}, b"\n \n\t", ["no text"]),
    ({"filename": "manual.pdf"}, bytes(range(256)) * 4, ["not a PDF"]),
    ({"filename": "broken.pdf"}, b"%PDF-1.4\n" + bytes(range(256)) * 4, ["cannot be read"]),
    ({"filename": "scan.pdf"}, builders.blank_pdf(2), ["no text", "OCR"]),
    ({"filename": "book.epub"}, epub_file()[:900], ["cannot be read"]),
    ({"filename": "book.epub"}, b"just words", ["not an EPUB"]),
    ({"filename": "photo.png"}, b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8, ["not a text"]),
    ({"filename": "letter.docx"}, builders.zip_of({"word/document.xml": b"<w/>"}), ["not an EPUB"]),
]  # fmt: skip


@pytest.mark.parametrize("query, body, words", REFUSALS)
def test_a_refused_upload_says_what_to_fix_and_leaves_nothing(
    client: TestClient, query: dict[str, str], body: bytes, words: list[str]
) -> None:
    answer = client.post("/api/library", params=query, content=body, headers=OCTETS)
    refused(answer, 400, "invalid_input", *words)
    assert listed(client) == []


def test_a_body_over_the_limit_is_refused_before_it_is_read(
    endpoint_settings: Settings,
) -> None:
    with serving(create_app(endpoint_settings)) as (url, _loop):
        head = post_head("/api/library?filename=huge.txt", LIBRARY_FILE_MAX + 1)
        status, body = raw(url, head)
        assert status == b"HTTP/1.1 413 Request Entity Too Large", body
        assert body["error"]["code"] == "body_too_large"
        assert "library file" in body["error"]["message"]
        get = b"GET /api/library HTTP/1.1\r\nHost: localhost\r\n\r\n"
        assert raw(url, get) == (b"HTTP/1.1 200 OK", {"sources": []})


def test_the_per_user_caps_refuse_with_a_conflict_and_write_nothing(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "MAX_SOURCES", 1)
    first = upload(client, b"The first source.", "one.txt")
    assert first.status_code == 201, first.text
    refused(upload(client, b"A second source.", "two.txt"), 409, "limit_reached", "delete")
    # A full library is refused before the file is read: not even a broken PDF is looked at.
    refused(upload(client, b"not a pdf at all", "broken.pdf"), 409, "limit_reached")
    assert [s["id"] for s in listed(client)] == [first.json()["id"]]

    monkeypatch.setattr(store, "MAX_SOURCES", 10)
    monkeypatch.setattr(store, "MAX_PASSAGES", 2)
    refused(upload(client, BIBLE, "bible.md"), 409, "limit_reached", "at most 2")
    assert [s["id"] for s in listed(client)] == [first.json()["id"]]
    assert hits(client, "copper") == []


def test_an_upload_from_a_foreign_page_is_refused(client: TestClient) -> None:
    answer = client.post(
        "/api/library",
        params={"filename": "planted.txt"},
        content=b"Planted words.",
        headers=OCTETS | FOREIGN,
    )
    refused(answer, 403, "cross_origin")
    assert listed(client) == []


# -- accounts: nobody reaches another's library ------------------------------------------------


def test_another_account_can_neither_see_nor_touch_a_source(accounts: TestClient) -> None:
    mara, tal = As(accounts, "mara"), As(accounts, "tal")
    made = mara.post("/api/library", params={"filename": "bible.md"}, content=BIBLE, headers=OCTETS)
    assert made.status_code == 201, made.text
    sid = made.json()["id"]
    deadline = time.monotonic() + 20
    while mara.get(f"/api/library/{sid}").json()["state"] == "indexing":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    before = mara.get(f"/api/library/{sid}").json()
    theirs = tal.post("/api/adventures", json={"title": "Tal's"}).json()["id"]
    for answer in (
        tal.get(f"/api/library/{sid}"),
        tal.delete(f"/api/library/{sid}"),
        tal.post(f"/api/library/{sid}/reindex"),
        tal.post(f"/api/library/{sid}/retry"),
        tal.request("PUT", f"/api/adventures/{theirs}/knowledge", json={"source_ids": [sid]}),
    ):
        message = refused(answer, 404, "not_found", str(sid))
        assert "Drowned" not in message
    assert listed(tal) == []
    assert tal.get("/api/library/search", params={"q": "copper doors vault"}).json()["hits"] == []
    assert attached(tal, theirs) == []
    # Mara's source is as it was, and hers to find.
    assert mara.get(f"/api/library/{sid}").json() == before
    assert hits(mara, "copper doors vault")[0]["source_id"] == sid
    # Tal's own upload is his alone, and Mara's search never returns it.
    own = tal.post(
        "/api/library", params={"filename": "t.txt"}, content=b"Tal's copper doors.", headers=OCTETS
    )
    assert own.status_code == 201, own.text
    assert [s["id"] for s in listed(mara)] == [sid]
    assert {h["source_id"] for h in hits(mara, "copper doors", limit=50)} == {sid}
    # Mara's adventure cannot take Tal's source either.
    hers = mara.post("/api/adventures", json={"title": "Mara's"}).json()["id"]
    refused(
        mara.request(
            "PUT", f"/api/adventures/{hers}/knowledge", json={"source_ids": [own.json()["id"]]}
        ),
        404,
        "not_found",
    )


# -- attaching -----------------------------------------------------------------------------------


def test_attaching_replaces_exactly_and_lists_with_the_state(client: TestClient) -> None:
    a, b = (upload(client, f"Source {n} words.".encode(), f"{n}.txt").json()["id"] for n in "ab")
    aid = adventure(client)
    answer = attach(client, aid, [b, a, b])
    assert answer.status_code == 200, answer.text
    assert answer.json()["adventure_id"] == aid
    assert [s["id"] for s in answer.json()["sources"]] == [a, b]  # duplicates collapse
    assert {s for _, s in attached(client, aid)} <= {"indexing", "ready"}
    assert attach(client, aid, [a]).status_code == 200
    settled(client, a)
    assert attached(client, aid) == [(a, "ready")]
    assert {s["id"]: s["attached_to"] for s in listed(client)} == {a: 1, b: 0}
    assert attach(client, aid, []).json()["sources"] == []


@pytest.mark.parametrize(
    "body, words",
    [
        ({"source_ids": ["1"]}, ["source_ids.0", "integer"]),
        ({"source_ids": [True]}, ["source_ids.0", "integer"]),
        ({"source_ids": [1.5]}, ["source_ids.0", "integer"]),
        ({"source_ids": [-1]}, ["-1", "ids of library sources"]),
        ({"source_ids": [0]}, ["ids of library sources"]),
        ({"source_ids": [10**30]}, ["ids of library sources"]),
        ({"source_ids": "1"}, ["source_ids"]),
        ({"source_ids": [1], "title": "x"}, ["title", "not permitted"]),
        ({}, ["source_ids", "required"]),
    ],
)
def test_attaching_bad_values_is_refused_and_changes_nothing(
    client: TestClient, body: Any, words: list[str]
) -> None:
    sid = upload(client, b"Kept words.", "k.txt").json()["id"]
    aid = adventure(client)
    assert attach(client, aid, [sid]).status_code == 200
    answer = client.put(f"/api/adventures/{aid}/knowledge", json=body)
    refused(answer, 400, "invalid_input", *words)
    assert [i for i, _ in attached(client, aid)] == [sid]


def test_attaching_an_unknown_source_is_not_found_and_changes_nothing(client: TestClient) -> None:
    sid = upload(client, b"Kept words.", "k.txt").json()["id"]
    aid = adventure(client)
    assert attach(client, aid, [sid]).status_code == 200
    refused(attach(client, aid, [sid, sid + 41]), 404, "not_found", str(sid + 41))
    assert [i for i, _ in attached(client, aid)] == [sid]
    refused(attach(client, aid + 99, [sid]), 404, "not_found")


def test_deleting_a_source_detaches_it_and_deleting_an_adventure_drops_its_attachments(
    client: TestClient,
) -> None:
    gone, kept = (upload(client, f"{n} words.".encode(), f"{n}.txt").json()["id"] for n in "gk")
    first, second = adventure(client), adventure(client)
    assert attach(client, first, [gone, kept]).status_code == 200
    assert attach(client, second, [kept]).status_code == 200
    assert client.delete(f"/api/library/{gone}").status_code == 204
    refused(client.get(f"/api/library/{gone}"), 404, "not_found")
    assert [i for i, _ in attached(client, first)] == [kept]
    assert client.get(f"/api/library/{kept}").json()["attached_to"] == 2
    assert client.delete(f"/api/adventures/{first}").status_code == 200
    assert client.get(f"/api/library/{kept}").json()["attached_to"] == 1
    refused(client.delete(f"/api/library/{gone}"), 404, "not_found")


# -- in the background --------------------------------------------------------------------------


def test_a_source_bigger_than_a_batch_is_indexed_with_progress(client: TestClient) -> None:
    paragraphs = [f"Entry {n} of the harbour log records bell {n}." for n in range(2 * BATCH + 5)]
    data = "\n\n".join(f"# Day {n}\n\n{p}" for n, p in enumerate(paragraphs)).encode()
    source = upload(client, data, "log.md").json()
    assert source["passage_count"] == 2 * BATCH + 5
    seen = {(source["state"], source["embedded"])}
    deadline = time.monotonic() + 20
    while (got := client.get(f"/api/library/{source['id']}").json())["state"] == "indexing":
        seen.add((got["state"], got["embedded"]))
        assert got["embedded"] % BATCH == 0 and 0 <= got["progress"] < 1
        assert time.monotonic() < deadline
    assert (got["state"], got["embedded"], got["progress"]) == ("ready", 2 * BATCH + 5, 1.0)
    assert ("indexing", 0) in seen


def push_retry(client: TestClient, source_id: int, when: datetime) -> None:
    """As after many failures: the next retry far off, on the source and in the queue."""
    with session_scope(runtime_of(client).sessions) as session:
        session.execute(
            update(LibrarySource).where(LibrarySource.id == source_id).values(retry_at=when)
        )
        postpone(session, Subject.library_source(source_id), when)


def test_a_failed_source_is_searched_by_words_and_caught_up_after_a_turn(
    client: TestClient, double: ModelDouble
) -> None:
    # The retry is pushed an hour off: "caught up" can only come from the turn asking
    # for the source's run now.
    double.fail_next("500", model=EMBED)
    sid = upload(client, BIBLE, "salt-coast.md").json()["id"]
    failed = settled(client, sid)
    assert failed["state"] == "failed" and failed["embedded"] == 0
    assert "HTTP 500" in failed["error"] and failed["retry_at"] is not None
    later = utcnow() + timedelta(hours=1)
    push_retry(client, sid, later)
    aid = adventure(client)
    assert attach(client, aid, [sid]).status_code == 200

    # A dry run works, by words, and says so; it changes nothing.
    insights = dry_run(client, aid, "I look for the Drowned Library and its copper doors")
    section = knowledge_section(insights)
    assert "copper doors" in section["text"]
    assert section["passages"][0]["semantic_score"] is None
    knowledge = insights["knowledge"]
    assert knowledge["note"].startswith("1 source(s) not fully indexed yet")
    assert "ranked by words" in knowledge["note"]
    assert knowledge["sources"][0]["state"] == "failed" and knowledge["sources"][0]["error"]
    assert client.get(f"/api/library/{sid}").json()["retry_at"] == later.isoformat()

    # A real turn uses it too, then brings its retry forward: it is caught up.
    double.script("The copper doors are shut.")
    turn = client.post(
        f"/api/adventures/{aid}/actions",
        json={"type": "do", "text": "I look for the Drowned Library and its copper doors"},
    )
    assert turn.status_code == 200, turn.text
    assert turn.json()["insights"]["knowledge"]["used"][0]["source_id"] == sid
    ready = wait_ready(client, sid, timeout=5)
    assert (ready["state"], ready["error"], ready["retry_at"]) == ("ready", None, None)
    assert ready["embedded"] == ready["passage_count"]
    again = dry_run(client, aid, "I look for the Drowned Library and its copper doors")
    assert knowledge_section(again)["passages"][0]["semantic_score"] is not None


def test_without_an_embedding_model_sources_are_searched_by_words(
    tmp_path: Path, double: ModelDouble
) -> None:
    settings = double_settings(tmp_path, double, embedding_model="none")
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        source = upload(client, BIBLE, "salt-coast.md").json()
        assert (source["state"], source["embedded"], source["progress"]) == ("words_only", 0, 0.0)
        assert source["embedding_model"] is None
        found = client.get("/api/library/search", params={"q": "copper doors vault"}).json()
        assert found["hits"][0]["heading_path"][-1] == "The Drowned Library"
        assert found["hits"][0]["semantic_score"] is None
        assert found["note"] == "no embedding model: ranked by words only"
        aid = adventure(client)
        assert attach(client, aid, [source["id"]]).status_code == 200
        insights = dry_run(client, aid, "I look for the Drowned Library and its copper doors")
        assert "copper doors" in knowledge_section(insights)["text"]
        reindexed = client.post(f"/api/library/{source['id']}/reindex")
        assert reindexed.status_code == 200 and reindexed.json()["state"] == "words_only"
        time.sleep(0.3)
        assert client.get(f"/api/library/{source['id']}").json()["state"] == "words_only"
    assert not [r for r in double.requests if r.path.endswith("/embeddings")]


def test_reindex_drops_the_vectors_and_makes_them_again(
    client: TestClient, double: ModelDouble
) -> None:
    sid = upload(client, BIBLE, "salt-coast.md").json()["id"]
    first = wait_ready(client, sid)
    calls = double.embedding_calls
    answer = client.post(f"/api/library/{sid}/reindex")
    assert answer.status_code == 200, answer.text
    assert (answer.json()["state"], answer.json()["embedded"]) == ("indexing", 0)
    again = wait_ready(client, sid)
    assert again["embedded"] == first["embedded"] and again["state"] == "ready"
    assert double.embedding_calls == calls + 1  # one batch, made again
    assert hits(client, "copper doors vault")[0]["semantic_score"] is not None
    refused(client.post(f"/api/library/{sid + 7}/reindex"), 404, "not_found")


def test_knowledge_does_not_depend_on_the_memory_bank(client: TestClient) -> None:
    sid = upload(client, BIBLE, "salt-coast.md").json()["id"]
    wait_ready(client, sid)
    aid = adventure(client)
    assert attach(client, aid, [sid]).status_code == 200
    off = client.patch(f"/api/adventures/{aid}", json={"memory_bank": False})
    assert off.status_code == 200, off.text
    insights = dry_run(client, aid, "I look for the Drowned Library and its copper doors")
    section = knowledge_section(insights)
    assert section["passages"][0]["location"].endswith("The Drowned Library")
    assert section["passages"][0]["semantic_score"] is not None


# -- the context's budget -----------------------------------------------------------------------

# Three vaults of the same size, one passage each.
VAULTS = "\n\n".join(
    f"# Vault {n}\n\n"
    + " ".join(f"Vault {n} of the Drowned Library keeps copper door {i} shut." for i in range(4))
    for n in range(3)
).encode()


def test_an_overflowing_context_cuts_knowledge_first_and_insights_tells_what_went_in(
    client: TestClient,
) -> None:
    sid = upload(client, VAULTS, "vaults.md").json()["id"]
    wait_ready(client, sid)
    aid = adventure(client)
    assert attach(client, aid, [sid]).status_code == 200
    query = "the copper doors of the Drowned Library vaults"
    roomy = dry_run(client, aid, query)
    whole = knowledge_section(roomy)
    assert len(whole["passages"]) == 3 and not whole["cut"]
    others = roomy["budget"]["used"] - whole["tokens"]
    spare = roomy["budget"]["context_tokens"] - roomy["budget"]["available"]

    def squeezed(knowledge_room: int) -> dict[str, Any]:
        tokens = spare + others + knowledge_room
        assert client.patch("/api/settings", json={"context_tokens": tokens}).status_code == 200
        return dry_run(client, aid, query)

    # Room for one passage of three: the section keeps the best one whole.
    one = squeezed(whole["tokens"] // 2)
    section = knowledge_section(one)
    assert section["cut"] and len(section["passages"]) == 1
    kept = section["passages"][0]
    assert kept["passage_id"] == whole["passages"][0]["passage_id"]
    assert kept["text"] in section["text"]
    used = one["knowledge"]["used"]
    assert [u["in_context"] for u in used] == [True, False, False]
    assert all(u["text"] not in section["text"] for u in used[1:])
    assert next(s for s in one["sections"] if s["name"] == "ai_instructions")["cut"] is False
    assert one["budget"]["used"] <= one["budget"]["available"]

    # Room for less than one: what is left is a piece, and no passage is said to be in.
    piece = squeezed(whole["tokens"] // 8)
    section = knowledge_section(piece)
    assert section["passages"] == []
    assert not any(u["in_context"] for u in piece["knowledge"]["used"])
    assert all(u["text"] not in section["text"] for u in piece["knowledge"]["used"])


def test_retry_brings_a_failed_source_forward_and_leaves_any_other_as_it_is(
    client: TestClient, double: ModelDouble
) -> None:
    double.fail_next("500", model="double-embed")
    sid = upload(client, BIBLE, "bible.md").json()["id"]
    failed = settled(client, sid)
    assert failed["state"] == "failed" and failed["retry_at"], failed
    push_retry(client, sid, utcnow() + timedelta(hours=1))  # not due for an hour
    answer = client.post(f"/api/library/{sid}/retry")
    assert answer.status_code == 200, answer.text
    deadline = time.monotonic() + 20  # due at once, and the indexer woken: not in an hour
    while client.get(f"/api/library/{sid}").json()["state"] != "ready":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    again = client.post(f"/api/library/{sid}/retry")
    assert again.status_code == 200 and again.json()["state"] == "ready"
    refused(client.post("/api/library/999999/retry"), 404, "not_found")
