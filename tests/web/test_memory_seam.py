"""The engine's seam to the memory system, observed through a recording memory service set
on the runtime (the composition root's own field): what is asked before the context, what
is recorded inside the turn's commit, what is scheduled, and what a dry run leaves alone."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from talekeeper.services.endpoints.models import ModelSet
from talekeeper.services.memory.base import (
    NullMemory,
    Retrieval,
    RetrievalQuery,
    StoryChange,
    UsedMemory,
)
from talekeeper.storage.db import session_scope
from talekeeper.storage.models import Action
from talekeeper_testkit.double import ModelDouble

PLANTED = UsedMemory(
    id=41,
    text="Tamsin hid the brass key under the third step.",
    semantic_score=0.8,
    lexical_score=0.5,
    final_score=0.875,
    pinned=False,
    authority="accepted_story",
)
GUESS = UsedMemory(
    id=42,
    text="Maren seemed to know more than she said.",
    semantic_score=0.5,
    lexical_score=0.0,
    final_score=0.5,
    pinned=False,
    authority="heuristic",
)


class RecordingMemory(NullMemory):
    def __init__(self, runtime: Any) -> None:
        self.runtime = runtime
        self.events: list[tuple[str, Any]] = []

    async def retrieve(self, query: RetrievalQuery, models: ModelSet) -> Retrieval:
        self.events.append(("retrieve", query))
        return Retrieval(used=[PLANTED, GUESS], considered=9, query={"input": query.input_text})

    def record_use(self, session: Session, retrieval: Retrieval, reply_id: int) -> None:
        # Inside the turn's transaction: the reply is already flushed in this session.
        reply = session.get(Action, reply_id)
        self.events.append(("record_use", (reply_id, reply is not None, session.in_transaction())))

    def schedule(self, session: Session, adventure_id: int, user_id: int) -> None:
        self.events.append(("schedule", adventure_id))

    def story_changed(self, session: Session, change: StoryChange) -> None:
        self.events.append(("changed", change.kind))

    def kick(self, adventure_id: int) -> None:
        # After the commit: a new session sees the reply.
        with session_scope(self.runtime.sessions) as session:
            newest = session.scalar(select(Action).order_by(Action.id.desc()).limit(1))
        self.events.append(("kick", newest.type if newest else None))

    def names(self) -> list[str]:
        return [name for name, _ in self.events]


def install(client: TestClient) -> RecordingMemory:
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    memory = RecordingMemory(runtime)
    runtime.memory = memory
    return memory


def test_a_turn_calls_the_memory_seam_in_order_and_uses_what_it_returns(
    client: TestClient, double: ModelDouble
) -> None:
    adventure = client.post("/api/adventures", json={"scenario": "lantern-coast"}).json()["id"]
    memory = install(client)
    body = client.post(f"/api/adventures/{adventure}/actions", json={"text": "ask Maren"}).json()
    reply_id = body["reply"]["id"]
    assert memory.names() == ["changed", "retrieve", "changed", "record_use", "schedule", "kick"]
    query = memory.events[1][1]
    assert query.input_text == "ask Maren" and query.top_k == 5
    assert query.context_text.endswith("What do you do?")  # the end of the newest narration
    assert query.exclude_action_ids == ()
    assert memory.events[3][1] == (reply_id, True, True)
    assert memory.events[5][1] == "narration"
    # The ``cache`` layout: the Memories head the short history (the opening).
    head = double.requests[-1].body["messages"][1]["content"]
    assert "[Memories]\n- (established) Tamsin hid the brass key under the third step." in head
    assert "- (inference) Maren seemed to know more than she said." in head
    used = client.get(f"/api/actions/{reply_id}/insights").json()["memories"]
    assert [m["id"] for m in used["used"]] == [41, 42] and used["considered"] == 9
    assert used["used"][0]["final_score"] == 0.875


def test_a_retry_leaves_the_retried_reply_out_of_the_query(
    client: TestClient, double: ModelDouble
) -> None:
    adventure = client.post("/api/adventures", json={"scenario": "lantern-coast"}).json()["id"]
    first = client.post(f"/api/adventures/{adventure}/actions", json={"text": "wait"}).json()
    memory = install(client)
    client.post(f"/api/adventures/{adventure}/retry")
    query = next(q for name, q in memory.events if name == "retrieve")
    assert query.exclude_action_ids == (first["reply"]["id"],)
    assert query.input_text == "wait"
    assert memory.names() == ["retrieve", "changed", "record_use", "schedule", "kick"]
    assert memory.events[1] == ("changed", "retry")


def test_a_dry_run_retrieves_but_records_and_schedules_nothing(
    client: TestClient, double: ModelDouble
) -> None:
    adventure = client.post("/api/adventures", json={"scenario": "lantern-coast"}).json()["id"]
    memory = install(client)
    response = client.post(
        f"/api/adventures/{adventure}/insights/dry-run", json={"type": "do", "text": "look"}
    )
    assert response.status_code == 200
    assert memory.names() == ["retrieve"]
    assert [m["id"] for m in response.json()["memories"]["used"]] == [41, 42]


def test_a_failed_reply_records_nothing_and_schedules_nothing(
    client: TestClient, double: ModelDouble
) -> None:
    adventure = client.post("/api/adventures", json={"scenario": "lantern-coast"}).json()["id"]
    memory = install(client)
    double.fail_next("500", model="double-narrator")
    assert (
        client.post(f"/api/adventures/{adventure}/actions", json={"text": "x"}).status_code == 502
    )
    assert memory.names() == ["changed", "retrieve"]
