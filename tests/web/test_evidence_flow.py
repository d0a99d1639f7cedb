"""Memories keep their evidence, through the app against the loopback double: keys are read
from the source by the embedding pass, a question about a fact the memory does not state
brings the sentence that states it into the Memories section, and the keys follow the
memory's life (an edit of the source, an undo, a change of embedding model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from tests.conftest import LOCAL, make_settings
from tests.kit.memory import idle, memories

from talekeeper.services.prompt.budgets import MEMORY_SLOT_TOKENS
from talekeeper.storage.db import session_scope
from talekeeper.storage.models import Action, Memory, MemoryKey
from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble

# Every reply states several facts; the extractive memory of a block keeps one or two.
REPLIES = [
    "Old Maren mends a net on the quay. She tells you the ferry leaves at dawn on Tuesdays.",
    "Brother Tam counts coins by the well. His cousin Odile keeps goats above Saltmarsh.",
    "A gull steals bread from the baker. The baker swears he will close the shop in winter.",
    "Captain Ilse points at the reef. She lost her first ship, the Heron, on those rocks.",
    "The harbourmaster stamps your papers. His daughter Wynne plays the fiddle at weddings.",
    "Rain drums on the roof of the inn. Maren hid the spare lantern key under the red tile.",
    "Tam sells you a lamp for two pennies. He says the lighthouse keeper drowned in 1812.",
    "Ilse buys a coil of rope. She means to sail for Carrow Point before the first frost.",
    "A child chases a crab across the sand. Wynne's brother Piet carves whistles from bone.",
    "The tide comes in fast over the flats. Odile sends word that her goats are sick.",
    "The inn is loud tonight. Maren says the mayor owes the smith forty silver marks.",
    "Fog rolls in from the sea. Ilse admits she fears the deep water off Carrow Point.",
    "You walk the long road to the chapel. The bell there was cast from melted anchors.",
    "The lamp gutters and goes out. Tam promises to fix the chapel door by Sunday.",
]
FACT = "His cousin Odile keeps goats above Saltmarsh."
QUESTION = "Who keeps goats above Saltmarsh, and whose cousin is she?"


@pytest.fixture
def client(app_client: TestClient) -> TestClient:
    return app_client


def start(client: TestClient, double: ModelDouble) -> int:
    adventure: int = client.post("/api/adventures", json={"scenario": "lantern-coast"}).json()["id"]
    for i, reply in enumerate(REPLIES):
        double.script(reply)
        answer = client.post(
            f"/api/adventures/{adventure}/actions", json={"type": "do", "text": f"wait {i}"}
        )
        assert answer.status_code == 200, answer.text
        idle(client)
    return adventure


def ask(client: TestClient, adventure: int, text: str = QUESTION) -> dict[str, Any]:
    answer = client.post(
        f"/api/adventures/{adventure}/insights/dry-run", json={"type": "do", "text": text}
    )
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def section(insights: dict[str, Any]) -> str:
    found = [s for s in insights["sections"] if s["name"] == "memories"]
    return str(found[0]["text"]) if found else ""


def carried(insights: dict[str, Any]) -> str:
    """The passages the memories carried into the context: under their memory in the
    Memories section, or (``in_history``) read in the history, which holds their action."""
    used = insights["memories"]["used"]
    return " ".join(p["text"] for m in used for p in m["passages"] if p["order"] is not None)


def keys(client: TestClient) -> list[MemoryKey]:
    with session_scope(client.app.state.runtime.sessions) as session:  # type: ignore[attr-defined]
        rows = list(session.scalars(select(MemoryKey).order_by(MemoryKey.id)).all())
        session.expunge_all()
        return rows


def test_a_fact_the_memory_does_not_state_reaches_the_narrator_through_its_evidence(
    client: TestClient, double: ModelDouble
) -> None:
    adventure = start(client, double)
    covering = [m for m in memories(client, adventure) if FACT not in m["text"]]
    assert not any("Odile" in m["text"] for m in memories(client, adventure))
    assert covering and all(k.vector is not None for k in keys(client))
    stated = [k for k in keys(client) if FACT in k.text]
    assert len(stated) == 1 and stated[0].vector_model == "double-embed"

    insights = ask(client, adventure)
    used = insights["memories"]["used"]
    carried = [u for u in used if u["evidence_in_context"] and FACT in u["evidence"]]
    assert len(carried) == 1 and carried[0]["matched"] == "source", used
    assert carried[0]["evidence_key"] == stated[0].id
    start_, end = carried[0]["source"]["source_start"], carried[0]["source"]["source_end"]
    assert start_ <= carried[0]["evidence_depth"] <= end
    assert carried[0]["text_score"] < carried[0]["final_score"]
    text = section(insights)
    passage = next(p for p in carried[0]["passages"] if p["key"] == stated[0].id)
    # The story is short: the history still holds the passage's action, so the narrator
    # reads the fact there and the section does not say it again.
    assert passage["in_history"] and FACT not in text
    history = next(s["text"] for s in insights["sections"] if s["name"] == "history")
    assert carried[0]["evidence"] in history
    tokens = next(s["tokens"] for s in insights["sections"] if s["name"] == "memories")
    assert insights["memories"]["budget"] == MEMORY_SLOT_TOKENS * 5
    assert tokens <= insights["memories"]["budget"] + 8  # the section's title and separator


def test_editing_the_source_drops_the_old_evidence_at_once_and_reads_the_new(
    client: TestClient, double: ModelDouble
) -> None:
    adventure = start(client, double)
    with session_scope(client.app.state.runtime.sessions) as session:  # type: ignore[attr-defined]
        action_id = session.scalar(select(Action.id).where(Action.text.contains(FACT)))
    assert action_id is not None
    edited = REPLIES[1].replace("Odile keeps goats above Saltmarsh", "Odile keeps geese")
    answer = client.patch(f"/api/actions/{action_id}", json={"text": edited})
    assert answer.status_code == 200, answer.text
    # the memory is stale now; its keys quoted the old text and are gone with the edit
    assert not [k for k in keys(client) if "Saltmarsh" in k.text]
    asked = ask(client, adventure)
    assert "Saltmarsh" not in section(asked) + carried(asked)
    idle(client)
    client.post(f"/api/adventures/{adventure}/actions", json={"type": "do", "text": "rest"})
    idle(client)
    assert [k for k in keys(client) if "Odile keeps geese" in k.text]
    asked = ask(client, adventure)
    assert "Saltmarsh" not in section(asked) + carried(asked)


def test_an_undone_stretch_takes_its_evidence_with_it(
    client: TestClient, double: ModelDouble
) -> None:
    adventure = start(client, double)
    assert FACT in carried(ask(client, adventure))
    for _ in range(2 * len(REPLIES) - 2):  # back to the second turn: every memory withdrawn
        assert client.post(f"/api/adventures/{adventure}/undo").status_code == 200
    idle(client)
    insights = ask(client, adventure)
    assert "Saltmarsh" not in section(insights) + carried(insights)
    assert not insights["memories"]["used"]


def test_a_new_embedding_model_re_embeds_the_evidence_too(tmp_path: Path) -> None:
    double = ModelDouble(models=("double-narrator", "embed-a", "embed-b"))
    common = {
        "endpoint_url": "",
        "model": "double-narrator",
        "summary_model": "extractive",
        "timeout": "2",
    }
    with double:
        common["endpoint_url"] = double.url
        settings = make_settings(tmp_path, embedding_model="embed-a", **common)
        with TestClient(create_app(settings), base_url=LOCAL) as client:
            adventure = start(client, double)
            assert {k.vector_model for k in keys(client)} == {"embed-a"}
        settings = make_settings(tmp_path, embedding_model="embed-b", **common)
        with TestClient(create_app(settings), base_url=LOCAL) as client:
            double.script("The bell rings.")
            client.post(f"/api/adventures/{adventure}/actions", json={"type": "do", "text": "go"})
            idle(client)
            assert {k.vector_model for k in keys(client)} == {"embed-b"}
            assert FACT in carried(ask(client, adventure))


def test_an_imported_story_has_its_memories_keyed_after_a_turn(
    client: TestClient, double: ModelDouble
) -> None:
    adventure = start(client, double)
    exported = client.get(f"/api/adventures/{adventure}/export").json()
    imported = client.post("/api/adventures/import", json=exported)
    assert imported.status_code == 201, imported.text
    copy = imported.json()["id"]
    with session_scope(client.app.state.runtime.sessions) as session:  # type: ignore[attr-defined]
        ids = list(session.scalars(select(Memory.id).where(Memory.adventure_id == copy)).all())
        assert (
            ids
            and not session.scalars(select(MemoryKey).where(MemoryKey.memory_id.in_(ids))).first()
        )  # passages are never exported: the copy reads its own
    double.script("The bell rings.")
    client.post(f"/api/adventures/{copy}/actions", json={"type": "do", "text": "listen"})
    idle(client)
    assert FACT in carried(ask(client, copy))
    with session_scope(client.app.state.runtime.sessions) as session:  # type: ignore[attr-defined]
        keyed = session.scalars(select(Memory.keyed).where(Memory.id.in_(ids))).all()
        assert keyed and all(keyed)
