"""The feed of a shared adventure, followed live over a real server (docs/sharing.md): an
open stream receives a change another member makes while it waits, and a member removed
while following gets ``event: removed`` and the end of the stream."""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import double_settings
from tests.kit.accounts import CHEAP, PASSWORD

from talekeeper.services.accounts import create_user
from talekeeper.storage.db import session_scope
from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble
from talekeeper_testkit.live import serving


@pytest.fixture
def server(tmp_path: Path, double: ModelDouble) -> Iterator[str]:
    app = create_app(double_settings(tmp_path, double, auth="accounts"))
    with serving(app) as (url, _):
        with session_scope(app.state.runtime.sessions) as session:
            for name in ("mara", "tal"):
                create_user(session, name, PASSWORD, hasher=CHEAP)
        yield url


def _client(url: str, name: str) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=30)
    answer = client.post("/api/auth/login", json={"username": name, "password": PASSWORD})
    assert answer.status_code == 200, answer.text
    return client


def _follow(client: httpx.Client, aid: int, events: queue.Queue[tuple[str, Any]]) -> None:
    """Read the stream in a thread, putting each (event, data) on ``events``; None at the end."""
    with client.stream("GET", f"/api/adventures/{aid}/events", timeout=30) as answer:
        assert answer.status_code == 200
        name = ""
        for line in answer.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                events.put((name, json.loads(line[6:])))
    events.put(("end", None))


def test_a_follower_sees_a_change_live_and_a_removal_ends_its_stream(
    server: str, double: ModelDouble
) -> None:
    with closing(_client(server, "mara")) as mara, closing(_client(server, "tal")) as tal:
        aid = mara.post("/api/adventures", json={"title": "The Quay"}).json()["id"]
        code = mara.post(f"/api/adventures/{aid}/invites", json={}).json()["code"]
        joined = tal.post(f"/api/invites/{code}/join", json={"persona": {"name": "Tal"}})
        assert joined.status_code == 200
        tal_id = tal.get(f"/api/adventures/{aid}/members").json()[1]["user_id"]
        events: queue.Queue[tuple[str, Any]] = queue.Queue()
        reader = threading.Thread(target=_follow, args=(tal, aid, events), daemon=True)
        reader.start()
        assert events.get(timeout=10) == ("members", {"change": "joined", "user_id": tal_id})
        double.script("Gulls cry.")
        turn = mara.post(f"/api/adventures/{aid}/actions", json={"type": "do", "text": "wave"})
        assert turn.status_code == 200
        name, data = events.get(timeout=10)  # sent while the stream was open
        assert name == "append" and data["action_ids"] == [turn.json()["action"]["id"]]
        assert events.get(timeout=10)[0] == "reply"
        assert mara.delete(f"/api/adventures/{aid}/members/{tal_id}").status_code == 200
        assert events.get(timeout=10) == ("removed", {})
        assert events.get(timeout=10) == ("end", None)
        reader.join(10)
        assert not reader.is_alive()
