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
from tests.web.sse import parse_events

from talekeeper.settings import Settings
from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble
from talekeeper_testkit.live import serving

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


def test_a_client_that_leaves_mid_stream_does_not_stop_the_turn(
    server: str, double: ModelDouble
) -> None:
    """A closed tab or a dropped connection: the reply is still generated and saved, and the
    next read of the story (a reload) shows it."""
    api = httpx.Client(base_url=server, timeout=10)
    adventure = api.post("/api/adventures", json={"scenario": "lantern-coast"}).json()["id"]
    double.chunk_delay = 0.1
    reply = "one two three four five six seven eight nine ten eleven twelve"
    double.script(reply)
    with api.stream(
        "POST", f"/api/adventures/{adventure}/actions", json={"text": "run"}, headers=STREAM
    ) as response:
        lines = response.iter_lines()
        seen = [next(lines) for _ in range(6)]  # the action event and a chunk or two
    assert any("chunk" in line for line in seen)
    state = _wait_for(
        lambda: (
            (s := api.get(f"/api/adventures/{adventure}").json())["awaiting_reply"] is False and s
        )
    )
    assert state["head"]["text"] == reply
    texts = [a["text"] for a in api.get(f"/api/adventures/{adventure}/actions").json()["actions"]]
    assert texts[-2:] == ["run", reply]
    calls = api.get("/api/ai-calls", params={"kind": "narration"}).json()
    assert [c["status"] for c in calls] == ["ok"]


def test_a_silent_turn_sends_heartbeats_that_are_not_events(
    endpoint_settings: Settings, double: ModelDouble
) -> None:
    """While the model says nothing, comment lines keep a proxy from closing the stream;
    the events read the same with them."""
    app = create_app(endpoint_settings)
    app.state.streams.heartbeat = 0.05
    with serving(app) as (base, _):
        api = httpx.Client(base_url=base, timeout=10)
        adventure = api.post("/api/adventures", json={"scenario": "lantern-coast"}).json()["id"]
        double.chunk_delay = 0.4
        double.script("slow and steady")
        with api.stream(
            "POST", f"/api/adventures/{adventure}/actions", json={"text": "wait"}, headers=STREAM
        ) as response:
            lines = list(response.iter_lines())
    assert lines.count(": heartbeat") >= 3
    events = parse_events(lines)
    assert [name for name, _ in events if name != "chunk"] == ["action", "reply"]
    assert "".join(d["text"] for n, d in events if n == "chunk").strip() == "slow and steady"


def test_shutting_down_waits_for_a_turn_whose_client_left(
    endpoint_settings: Settings, double: ModelDouble
) -> None:
    """The server is stopped right after the client left mid-reply: the reply is saved
    before the database closes, and a restarted app shows it."""
    double.chunk_delay = 0.1
    reply = "the lamp gutters and the sea keeps talking in the dark below"
    double.script(reply)
    with serving(create_app(endpoint_settings)) as (base, _):
        api = httpx.Client(base_url=base, timeout=10)
        adventure = api.post("/api/adventures", json={"scenario": "lantern-coast"}).json()["id"]
        with api.stream(
            "POST", f"/api/adventures/{adventure}/actions", json={"text": "listen"}, headers=STREAM
        ) as response:
            next(response.iter_lines())
    with serving(create_app(endpoint_settings)) as (base, _):
        state = httpx.get(f"{base}/api/adventures/{adventure}", timeout=10).json()
    assert state["awaiting_reply"] is False and state["head"]["text"] == reply


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


@pytest.mark.sqlite_only("its fault is a trigger written in SQLite's dialect, from outside")
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
