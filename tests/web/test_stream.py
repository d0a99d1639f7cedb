"""Streaming against a real HTTP server: a client that leaves, and a story that moves on."""

from __future__ import annotations

import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from tests.double.server import ModelDouble
from tests.web.sse import parse_events

from talekeeper.settings import Settings
from talekeeper.web.app import create_app

STREAM = {"Accept": "text/event-stream"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def server(endpoint_settings: Settings) -> Iterator[str]:
    port = _free_port()
    config = uvicorn.Config(
        create_app(endpoint_settings), host="127.0.0.1", port=port, log_level="warning"
    )
    uv = uvicorn.Server(config)
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not uv.started:
        assert time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    uv.should_exit = True
    thread.join(timeout=10)


def _wait_for(check: Any, timeout: float = 5.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_a_client_that_leaves_mid_stream_leaves_the_action_saved_and_retryable(
    server: str, double: ModelDouble
) -> None:
    api = httpx.Client(base_url=server, timeout=10)
    adventure = api.post("/api/adventures", json={"scenario": "lantern-coast"}).json()["id"]
    double.chunk_delay = 0.2
    double.script("one two three four five six seven eight nine ten eleven twelve")
    with api.stream(
        "POST", f"/api/adventures/{adventure}/actions", json={"text": "run"}, headers=STREAM
    ) as response:
        lines = response.iter_lines()
        seen = [next(lines) for _ in range(6)]  # the action event and a chunk or two
    assert any("chunk" in line for line in seen)
    double.chunk_delay = 0.0
    calls = _wait_for(
        lambda: [
            c
            for c in api.get("/api/ai-calls", params={"kind": "narration"}).json()
            if c["status"] == "cancelled"
        ]
    )
    assert len(calls) == 1
    state = api.get(f"/api/adventures/{adventure}").json()
    assert state["awaiting_reply"] is True and state["head"]["text"] == "run"
    double.script("You run.")
    retried = api.post(f"/api/adventures/{adventure}/retry").json()
    assert retried["reply"]["text"] == "You run."
    texts = [a["text"] for a in api.get(f"/api/adventures/{adventure}/actions").json()["actions"]]
    assert texts[-2:] == ["run", "You run."]


def test_a_reply_is_not_saved_over_a_story_that_changed_while_it_streamed(
    server: str, double: ModelDouble
) -> None:
    api = httpx.Client(base_url=server, timeout=10)
    adventure = api.post("/api/adventures", json={"scenario": "lantern-coast"}).json()["id"]
    double.chunk_delay = 0.1
    double.script("slow words arrive one at a time here")
    with api.stream(
        "POST", f"/api/adventures/{adventure}/actions", json={"text": "wait"}, headers=STREAM
    ) as response:
        lines = response.iter_lines()
        first = [next(lines) for _ in range(3)]
        assert "action" in first[0]
        undone = api.post(f"/api/adventures/{adventure}/undo")  # a write while nothing is held
        assert undone.status_code == 200 and undone.json()["undone"]["text"] == "wait"
        events = parse_events([*first, *lines])
    assert events[-1][0] == "error"
    assert "story changed" in events[-1][1]["error"]["message"]
    texts = [a["text"] for a in api.get(f"/api/adventures/{adventure}/actions").json()["actions"]]
    assert "slow words arrive one at a time here" not in texts and "wait" not in texts


def test_an_unexpected_failure_ends_the_stream_with_an_error_event_carrying_the_reply(
    server: str, double: ModelDouble, endpoint_settings: Settings
) -> None:
    """The database refuses the reply with an error of its own (a trigger standing in for
    a disk or schema fault): not one of ours, still the stream's last event is ``error``."""
    api = httpx.Client(base_url=server, timeout=10)
    adventure = api.post("/api/adventures", json={"scenario": "lantern-coast"}).json()["id"]
    database = Path(endpoint_settings.data_dir) / "talekeeper.db"
    with closing(sqlite3.connect(database)) as outside:
        outside.execute(
            "CREATE TRIGGER refuse_replies BEFORE INSERT ON actions "
            "WHEN NEW.type = 'narration' BEGIN SELECT RAISE(ABORT, 'replies refused'); END"
        )
        outside.commit()
    double.script("The bell rings twice, then stops.")
    with api.stream(
        "POST", f"/api/adventures/{adventure}/actions", json={"text": "ring"}, headers=STREAM
    ) as response:
        events = parse_events(response.iter_lines())
    assert events[0][0] == "action" and events[-1][0] == "error"
    failure = events[-1][1]
    assert failure["error"]["code"] == "internal_error"
    assert "the log has the details" in failure["error"]["message"]
    assert failure["reply_text"] == "The bell rings twice, then stops."
    assert failure["action_saved"] is True
    with closing(sqlite3.connect(database)) as outside:
        outside.execute("DROP TRIGGER refuse_replies")
        outside.commit()
    double.script("The bell rings once.")
    assert api.post(f"/api/adventures/{adventure}/retry").json()["reply"]["text"] == (
        "The bell rings once."
    )
