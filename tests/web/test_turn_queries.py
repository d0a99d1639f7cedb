"""Nothing a turn runs reads the whole story: every statement on ``actions`` uses an index
range, never a table scan or a sort along a branch (checked with SQLite's own plans)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event

pytestmark = pytest.mark.sqlite_only("reads SQLite's own query plans (EXPLAIN QUERY PLAN)")


def test_every_statement_of_a_turn_uses_an_index_on_actions(client: TestClient) -> None:
    engine = client.app.state.runtime.engine  # type: ignore[attr-defined]
    adventure = client.post("/api/adventures", json={"scenario": "drift-station"}).json()["id"]
    for text in ("look", "wait", "listen"):
        client.post(f"/api/adventures/{adventure}/actions", json={"text": text})
    client.post(f"/api/adventures/{adventure}/undo")  # a redo stack, so discarding runs too
    seen: list[tuple[str, Any]] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, *args: Any) -> None:
        seen.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", record)
    try:
        client.post(f"/api/adventures/{adventure}/actions", json={"text": "run"})
        client.post(f"/api/adventures/{adventure}/retry")
        client.post(f"/api/adventures/{adventure}/actions", json={"type": "continue"})
    finally:
        event.remove(engine, "before_cursor_execute", record)
    on_actions = [(s, p) for s, p in seen if " actions" in s and not s.startswith("INSERT")]
    assert len(on_actions) >= 8
    with engine.connect() as connection:
        for statement, parameters in on_actions:
            plan = connection.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)
            steps = " | ".join(row[3] for row in plan)
            assert "SCAN actions" not in steps, (statement, steps)
            # Sorting is fine only within one slot (its few takes), never along the branch.
            assert "TEMP B-TREE" not in steps or "depth=?" in steps, (statement, steps)
