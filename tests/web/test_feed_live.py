"""The feed of a shared adventure, followed live over a real server (docs/sharing.md): an
open stream receives a change another member makes while it waits, and a member removed
while following gets ``event: removed`` and the end of the stream; a stream resumed after
an event sends only what came after it; who is here and who is writing reach every
open page."""

from __future__ import annotations

import json
import queue
import threading
import time
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


UNNUMBERED = ("presence", "reply_text")  # the stream's events that are not the feed's


def _follow(
    client: httpx.Client,
    aid: int,
    events: queue.Queue[tuple[str, Any]],
    keep: tuple[str, ...] = (),
    after: int | None = None,
) -> None:
    """Read the stream in a thread, putting each (event, data) on ``events``; ("end", None)
    at the end. The events without an id (``presence``, ``reply_text``) only when named in
    ``keep``; ``after``: resume after it."""
    headers = {} if after is None else {"Last-Event-ID": str(after)}
    url = f"/api/adventures/{aid}/events"
    try:
        with client.stream("GET", url, timeout=30, headers=headers) as answer:
            assert answer.status_code == 200
            name = ""
            for line in answer.iter_lines():
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: ") and (name in keep or name not in UNNUMBERED):
                    events.put((name, json.loads(line[6:])))
    except httpx.HTTPError:  # the test closed its client: the reader is done
        pass
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


def _shared(server: str) -> tuple[httpx.Client, httpx.Client, int]:
    mara, tal = _client(server, "mara"), _client(server, "tal")
    aid = mara.post("/api/adventures", json={"title": "The Quay", "persona": {"name": "Mara"}})
    aid = aid.json()["id"]
    code = mara.post(f"/api/adventures/{aid}/invites", json={}).json()["code"]
    joined = tal.post(f"/api/invites/{code}/join", json={"persona": {"name": "Tal"}})
    assert joined.status_code == 200
    return mara, tal, aid


def test_a_resumed_stream_sends_only_what_came_after_its_last_event(
    server: str, double: ModelDouble
) -> None:
    mara, tal, aid = _shared(server)
    with closing(mara), closing(tal):
        seen = tal.get(f"/api/adventures/{aid}/events", params={"follow": "false"})
        last = int([line for line in seen.text.splitlines() if line.startswith("id: ")][-1][4:])
        events: queue.Queue[tuple[str, Any]] = queue.Queue()
        threading.Thread(target=_follow, args=(tal, aid, events, (), last), daemon=True).start()
        time.sleep(1.5)  # polls that find nothing new must not start again from the beginning
        assert events.empty()
        double.script("Gulls cry.")
        assert mara.post(f"/api/adventures/{aid}/actions", json={"text": "wave"}).is_success
        assert events.get(timeout=10)[0] == "append"
        assert events.get(timeout=10)[0] == "reply"
        assert events.empty()


def _presence(events: queue.Queue[tuple[str, Any]], check: Any) -> dict[str, Any]:
    """The first presence event that passes ``check`` (names only), within 10 s."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        name, data = events.get(timeout=max(0.1, deadline - time.monotonic()))
        if name == "presence":
            shown = {k: [p["persona_name"] for p in v] for k, v in data.items()}
            if check(shown):
                return shown
    raise AssertionError("no such presence event")


def test_who_is_here_and_who_is_writing_reach_every_open_page(server: str) -> None:
    mara, tal, aid = _shared(server)
    with closing(mara), closing(tal):
        at_tal: queue.Queue[tuple[str, Any]] = queue.Queue()
        at_mara: queue.Queue[tuple[str, Any]] = queue.Queue()
        threading.Thread(
            target=_follow, args=(tal, aid, at_tal, ("presence",)), daemon=True
        ).start()
        assert _presence(at_tal, lambda p: p["here"] == ["Tal"])
        threading.Thread(
            target=_follow, args=(mara, aid, at_mara, ("presence",)), daemon=True
        ).start()
        assert _presence(at_tal, lambda p: p["here"] == ["Tal", "Mara"])
        typing = tal.post(f"/api/adventures/{aid}/presence", json={"writing": True})
        assert typing.status_code == 200, typing.text
        assert [p["persona_name"] for p in typing.json()["writing"]] == ["Tal"]
        assert _presence(at_mara, lambda p: p["writing"] == ["Tal"])
        assert tal.post(f"/api/adventures/{aid}/presence", json={"writing": False}).is_success
        assert _presence(at_mara, lambda p: p["here"] == ["Tal", "Mara"] and p["writing"] == [])


def test_only_players_say_they_are_writing(server: str) -> None:
    mara, tal, aid = _shared(server)
    with closing(mara), closing(tal):
        members = mara.get(f"/api/adventures/{aid}/members").json()
        url = f"/api/adventures/{aid}/members/{members[1]['user_id']}"
        assert mara.patch(url, json={"role": "viewer"}).status_code == 200
        said = tal.post(f"/api/adventures/{aid}/presence", json={"writing": True})
        assert said.status_code == 403, said.text
        assert mara.delete(url).status_code == 200
        said = tal.post(f"/api/adventures/{aid}/presence", json={"writing": True})
        assert said.status_code == 404, said.text
        for bad in ({}, {"writing": "soon"}, {"writing": True, "loud": 1}):
            answer = mara.post(f"/api/adventures/{aid}/presence", json=bad)
            assert answer.status_code == 400, (bad, answer.text)


def test_a_reply_reaches_the_other_pages_as_it_is_written(server: str, double: ModelDouble) -> None:
    mara, tal, aid = _shared(server)
    reply = "The lamp gutters and the sea keeps talking in the dark below the quay wall"
    double.chunk_delay = 0.15  # about two seconds of writing
    double.script(reply)
    with closing(mara), closing(tal):
        events: queue.Queue[tuple[str, Any]] = queue.Queue()
        threading.Thread(
            target=_follow, args=(tal, aid, events, ("reply_text",)), daemon=True
        ).start()
        assert events.get(timeout=10)[0] == "members"  # Tal's own joining: the stream is up
        assert mara.post(f"/api/adventures/{aid}/actions", json={"text": "wait"}).is_success
        seen = []
        while (item := events.get(timeout=10))[0] != "reply":
            seen.append(item)
        assert seen[0][0] == "append"  # the action, then its reply as it grows
        texts = [data["text"] for name, data in seen if name == "reply_text"]
        assert len(texts) >= 2, seen
        assert all(reply.startswith(t) for t in texts)
        assert [len(t) for t in texts] == sorted({len(t) for t in texts})
