"""The memory system's exit scenario (docs/memory.md §2 to §5), end to end against the
loopback double.

A 44+ action game through the JSON API: memories appear every 6 actions from 12,
the Story Summary every 15, a fact planted early is retrieved through the Memory
Bank once it has scrolled out of the history window, and Insights shows which
memories were used with their scores, how many were considered, which were
suppressed, and the query. Run with the double's summary model and with the
extractive writer (no model at all).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.conftest import LOCAL, make_settings

from talekeeper.services.memory.scoring import LEXICAL_WEIGHT, SOURCE_WEIGHT
from talekeeper.services.memory.summary import SUMMARY_EVERY
from talekeeper.services.memory.writer import BLOCK_ACTIONS, FIRST_AT, SETTLE_SLACK
from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble

PLANT_TURN = 5  # its reply lands at depth 12: the first action of the third block
FACT = (
    "Old Maren makes you swear to guard the vault password, HELIOTROPE-7, and tells you "
    "it opens the drowned archive."
)
FILLER = "The tide rolls under the pier. Gulls wheel over the grey water."
TURNS = 24  # 1 opening + 2 per turn = 49 actions


@pytest.fixture(params=["double-summary", "extractive"])
def game(request: pytest.FixtureRequest, tmp_path: Path, double: ModelDouble) -> Iterator[Any]:
    settings = make_settings(
        tmp_path,
        endpoint_url=double.url,
        model="double-narrator",
        embedding_model="double-embed",
        summary_model=request.param,
        context_tokens="900",  # a short history window: the planted fact scrolls out early
        reply_tokens="60",
    )
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        yield client, request.param


def expected_memories(length: int) -> int:
    """Full blocks of 6 with one more action past their end, from 12 actions on."""
    if length < FIRST_AT:
        return 0
    return (length - SETTLE_SLACK) // BLOCK_ACTIONS


def idle(client: TestClient) -> None:
    client.portal.call(client.app.state.runtime.memory.idle)  # type: ignore[union-attr]


def test_the_exit_scenario(game: Any, double: ModelDouble) -> None:
    client, writer = game
    adventure = client.post("/api/adventures", json={"scenario": "lantern-coast"}).json()["id"]
    replies = [FACT if turn == PLANT_TURN else f"{FILLER} Turn {turn}." for turn in range(TURNS)]
    double.script(*replies)
    length = 1
    covers_to = -1
    summaries = 0
    planted_depth = None
    for turn in range(TURNS):
        body = client.post(
            f"/api/adventures/{adventure}/actions",
            json={"type": "do", "text": f"walk the harbour wall, stretch {turn}"},
        ).json()
        length += 2
        if turn == PLANT_TURN:
            planted_depth = body["reply"]["depth"]
        idle(client)
        memories = memory_rows(client, adventure)
        assert len(memories) == expected_memories(length), (turn, length)
        if length - 1 - covers_to >= SUMMARY_EVERY:
            covers_to, summaries = length - 1, summaries + 1
        summary = client.get(f"/api/adventures/{adventure}/summary").json()
        assert len(summary["versions"]) == summaries, (turn, length)
        assert summary["covers_to"] == covers_to
    assert length >= 44 and planted_depth == 12
    derived = client.get(f"/api/adventures/{adventure}/derived").json()
    assert not derived["pending"]
    assert all(derived[k]["state"] == "idle" for k in ("memory", "summary", "embedding"))
    memories = memory_rows(client, adventure)
    assert all(m["embedded"] for m in memories)
    covering = [m for m in memories if m["source_start"] <= planted_depth <= m["source_end"]]
    assert len(covering) == 1 and "HELIOTROPE-7" in covering[0]["text"]
    summary_text = client.get(f"/api/adventures/{adventure}").json()["story_summary"]
    assert summary_text and len(summary_text.split()) <= 250

    # The fact has left the history window; asking about it brings it back from the bank.
    double.script("Maren's word comes back to you.")
    body = client.post(
        f"/api/adventures/{adventure}/actions",
        json={"type": "say", "text": "What was the vault password Maren told me?"},
    ).json()
    insights = body["insights"]
    history = next(s for s in insights["sections"] if s["name"] == "history")
    assert "HELIOTROPE-7" not in history["text"]
    assert insights["history"]["dropped"] > 0 or insights["history"]["unread_older"]
    used = insights["memories"]["used"]
    hit = [u for u in used if u["id"] == covering[0]["id"]]
    assert hit, used
    assert hit[0] == max(used, key=lambda u: u["final_score"])  # ranked first
    for memory in used:
        assert {"semantic_score", "lexical_score", "final_score", "pinned", "authority"} <= set(
            memory
        )
        matched = memory["semantic_score"] + LEXICAL_WEIGHT * memory["lexical_score"]
        if memory["matched"] == "text":
            assert memory["final_score"] == pytest.approx(matched, abs=2e-4)
        else:  # a passage scored above the text: the memory gains a share of the difference
            own = memory["text_score"]
            assert own < matched and memory["evidence"]
            assert memory["final_score"] == pytest.approx(
                own + SOURCE_WEIGHT * (matched - own), abs=3e-4
            )
        assert memory["source"]["source_start"] <= memory["source"]["source_end"]
    assert hit[0]["lexical_score"] > 0
    assert insights["memories"]["considered"] == len(memories)
    assert isinstance(insights["memories"]["suppressed"], list)
    query = insights["memories"]["query"]
    assert query["input"] == "What was the vault password Maren told me?"
    assert {"vault", "password", "maren"} <= set(query["input_terms"])
    assert query["context"]  # the scene and the end of the newest narration
    section = next(s for s in insights["sections"] if s["name"] == "memories")
    assert "HELIOTROPE-7" in section["text"] and "(established)" in section["text"]
    # The narrator was shown it.
    last = [r for r in double.requests if (r.body or {}).get("model") == "double-narrator"][-1]
    assert "HELIOTROPE-7" in str(last.body)
    if writer == "double-summary":
        kinds = [r.body.get("model") for r in double.requests if r.body]
        assert "double-summary" in kinds


def memory_rows(client: TestClient, adventure: int) -> list[dict[str, Any]]:
    response = client.get(f"/api/adventures/{adventure}/memories")
    assert response.status_code == 200, response.text
    rows: list[dict[str, Any]] = response.json()
    return rows
