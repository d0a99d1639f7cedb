"""The knowledge library in play, end to end: a player uploads a setting bible and a novel,
attaches both to an adventure, asks about a place that only the novel describes, and that
passage reaches the narrator (it is in the request the model received) and shows in the
reply's Insights with its scores and its place in the book. Runs on both databases."""

from __future__ import annotations

import json
from typing import Any

from ebooklib import epub
from fastapi.testclient import TestClient
from tests.kit.library import settled
from tests.kit.library import upload as upload_file
from tests.services.library import builders

from talekeeper_testkit.double import ModelDouble

BIBLE = b"""# The Salt Coast: a setting bible

## Towns

### Gullhaven

Gullhaven is a fishing town of slate roofs and tarred nets. Its harbour freezes every
third winter, and the guild of net-menders rules it.

### Brinmouth

Brinmouth trades salt and dried cod with the inland baronies. Its bell has no clapper.

## Factions

The Lamplighters keep the coast's beacons and answer to no baron.
"""

NOVEL_CHAPTERS = [
    (
        "ch1.xhtml",
        "The Crossing",
        "<h1>The Crossing</h1><p>Teodor left Gullhaven on the morning ferry. The gulls "
        "followed the boat until the fog swallowed them.</p><p>He slept through the "
        "afternoon with his coat for a pillow.</p>",
    ),
    (
        "ch2.xhtml",
        "Vessmoor Abbey",
        "<h1>Vessmoor Abbey</h1><p>The ruined abbey of Vessmoor stands on a tidal island, "
        "reachable only across the causeway of black basalt when the sea draws back. Its "
        "bell tower leans north, and the monks who left it buried their library under "
        "the chapter house floor.</p>",
    ),
    (
        "ch3.xhtml",
        "The Return",
        "<h1>The Return</h1><p>Teodor came home with salt in his hair and nothing in his "
        "purse, and his sister laughed at him for a week.</p>",
    ),
]


def novel() -> bytes:
    chapters = [builders.chapter(f, t, b) for f, t, b in NOVEL_CHAPTERS]
    toc = [(epub.Section("Book One"), chapters)]
    return builders.ebook(chapters, toc, title="The Tidewalker")


def upload(client: TestClient, data: bytes, name: str) -> dict[str, Any]:
    made = upload_file(client, data, name)
    assert made.status_code == 201, made.text
    source: dict[str, Any] = made.json()
    return source


def narrator_prompts(double: ModelDouble) -> list[str]:
    """The text of every chat request the narrator was sent."""
    out = []
    for request in double.requests:
        body = request.body
        chat = request.path.endswith("/chat/completions") and isinstance(body, dict)
        if chat and body.get("model") == "double-narrator":  # type: ignore[union-attr]
            out.append(json.dumps(body["messages"], ensure_ascii=False))  # type: ignore[index]
    return out


def test_a_place_only_the_novel_describes_reaches_the_narrator_with_its_scores_and_place(
    client: TestClient, double: ModelDouble
) -> None:
    bible = upload(client, BIBLE, "salt-coast.md")
    book = upload(client, novel(), "the-tidewalker.epub")
    assert (bible["kind"], book["kind"], book["title"]) == ("md", "epub", "The Tidewalker")
    assert settled(client, bible["id"])["state"] == "ready"
    assert settled(client, book["id"])["state"] == "ready"
    made = client.post("/api/adventures", json={"title": "Salt and Stone"})
    assert made.status_code == 201, made.text
    aid = made.json()["id"]
    both = [bible["id"], book["id"]]
    attached = client.put(f"/api/adventures/{aid}/knowledge", json={"source_ids": both})
    assert attached.status_code == 200, attached.text
    listed = client.get(f"/api/adventures/{aid}/knowledge").json()["sources"]
    assert [(s["id"], s["state"]) for s in listed] == [(i, "ready") for i in both]

    double.script("The causeway glistens as the tide pulls back.")
    turn = client.post(
        f"/api/adventures/{aid}/actions",
        json={"type": "say", "text": "How do I reach the abbey of Vessmoor across the causeway?"},
    )
    assert turn.status_code == 200, turn.text
    # The passage reached the narrator: it is in what the model was sent.
    sent = narrator_prompts(double)[-1]
    assert "tidal island" in sent and "black basalt" in sent
    assert "The Tidewalker" in sent  # the line naming its source

    reply_id = turn.json()["reply"]["id"]
    insights = client.get(f"/api/actions/{reply_id}/insights").json()
    section = next(s for s in insights["sections"] if s["name"] == "knowledge")
    assert section["tokens"] > 0 and "black basalt" in section["text"]
    first = section["passages"][0]
    assert first["source_id"] == book["id"] and first["source_title"] == "The Tidewalker"
    assert first["heading_path"] == ["Book One", "Vessmoor Abbey"]
    assert first["location"] == "Book One › Vessmoor Abbey"
    assert first["lexical_score"] > 0 and first["semantic_score"] is not None
    assert first["final_score"] >= insights["knowledge"]["min_score"]
    assert first["lexical_rank"] == 1
    knowledge = insights["knowledge"]
    assert {s["id"] for s in knowledge["sources"]} == set(both)
    assert knowledge["considered"] == bible["passage_count"] + book["passage_count"]
    # The bible's towns do not describe the abbey: not one of its passages went in.
    assert all(p["source_id"] == book["id"] for p in section["passages"])
