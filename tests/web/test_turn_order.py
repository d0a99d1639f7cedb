"""Turns one at a time, in arrival order (docs/sharing.md, "Turns"), over a real server: an
action sent while a reply is being written waits for it, is answered in its turn, and is
never written between another action and its reply; a turn's failure, or a process that
died holding a ticket, does not hold the adventure."""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.conftest import double_settings
from tests.kit.accounts import CHEAP, PASSWORD

from talekeeper.core.clock import utcnow
from talekeeper.services.accounts import create_user
from talekeeper.services.story import queue as turn_queue
from talekeeper.settings import Settings
from talekeeper.storage.db import read_scope, session_scope
from talekeeper.storage.models import Adventure, TurnTicket
from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble
from talekeeper_testkit.live import serving

STREAM = {"Accept": "text/event-stream"}


@pytest.fixture
def served(endpoint_settings: Settings) -> Iterator[tuple[httpx.Client, Any]]:
    app = create_app(endpoint_settings)
    with serving(app) as (url, _), httpx.Client(base_url=url, timeout=30) as api:
        yield api, app.state.runtime.sessions


def _turn(api: httpx.Client, aid: int, body: dict[str, str], out: queue.Queue[Any]) -> None:
    """One streamed turn in a thread: each (event, data) on ``out`` as it comes, then None."""
    with api.stream("POST", f"/api/adventures/{aid}/actions", json=body, headers=STREAM) as r:
        assert r.status_code == 200, r.read()
        name = ""
        for line in r.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                out.put((name, json.loads(line[6:])))
    out.put(None)


def _events(out: queue.Queue[Any]) -> list[tuple[str, Any]]:
    seen = []
    while (item := out.get(timeout=30)) is not None:
        seen.append(item)
    return seen


def _texts(api: httpx.Client, aid: int) -> list[str]:
    return [a["text"] for a in api.get(f"/api/adventures/{aid}/actions").json()["actions"]]


def _signed_in(url: str, name: str) -> httpx.Client:
    client = httpx.Client(base_url=url, timeout=30)
    answer = client.post("/api/auth/login", json={"username": name, "password": PASSWORD})
    assert answer.status_code == 200, answer.text
    return client


def _tickets(sessions: Any) -> int:
    with read_scope(sessions) as session:
        return session.query(TurnTicket).count()


def test_an_action_sent_during_a_reply_waits_and_is_answered_in_its_turn(
    served: tuple[httpx.Client, Any], double: ModelDouble
) -> None:
    api, sessions = served
    aid = api.post("/api/adventures", json={"scenario": "lantern-coast"}).json()["id"]
    first_reply = "the tide comes in slow and grey over the stones below the lamp"
    double.chunk_delay = 0.05
    double.script(first_reply, "the keeper answers from the stair")
    first: queue.Queue[Any] = queue.Queue()
    second: queue.Queue[Any] = queue.Queue()
    threading.Thread(target=_turn, args=(api, aid, {"text": "watch the sea"}, first)).start()
    assert first.get(timeout=10)[0] == "action"
    assert first.get(timeout=10)[0] == "chunk"  # the first reply is being written
    threading.Thread(
        target=_turn, args=(api, aid, {"type": "say", "text": "Who goes there?"}, second)
    ).start()
    waited = second.get(timeout=10)
    assert waited == ("queued", {"ahead": 1})
    # While it waits, the waiting action is written nowhere, and the adventure says whose
    # turns are live: the one being answered, then the one waiting (both the host's here).
    assert "Who goes there?" not in _texts(api, aid)
    state = api.get(f"/api/adventures/{aid}").json()
    persona = state["persona"]["name"]
    assert [t["persona_name"] for t in state["turns"]] == [persona, persona]
    one, two = _events(first), [waited, *_events(second)]
    assert one[-1][0] == "reply" and one[-1][1]["reply"]["text"] == first_reply
    names = [name for name, _ in two if name != "chunk"]
    assert names == ["queued", "action", "reply"]
    assert two[-1][1]["reply"]["text"] == "the keeper answers from the stair"
    assert _texts(api, aid)[-4:] == [
        "watch the sea",
        first_reply,
        "Who goes there?",
        "the keeper answers from the stair",
    ]
    assert _tickets(sessions) == 0 and api.get(f"/api/adventures/{aid}").json()["turns"] == []
    # The second turn's prompt already held the first reply: it was asked after it.
    asked = [str(r.body) for r in double.requests if "Who goes there?" in str(r.body)]
    assert asked and first_reply in asked[0]


def test_a_continue_and_a_retry_wait_their_turn_too(
    served: tuple[httpx.Client, Any], double: ModelDouble
) -> None:
    api, _ = served
    aid = api.post("/api/adventures", json={"scenario": "lantern-coast"}).json()["id"]
    double.chunk_delay = 0.05
    double.script("gulls wheel over the harbour wall in a long slow circle", "a bell", "a gong")
    first: queue.Queue[Any] = queue.Queue()
    threading.Thread(target=_turn, args=(api, aid, {"text": "look up"}, first)).start()
    assert first.get(timeout=10)[0] == "action"
    assert first.get(timeout=10)[0] == "chunk"
    later: queue.Queue[Any] = queue.Queue()
    threading.Thread(target=_turn, args=(api, aid, {"type": "continue"}, later)).start()
    assert later.get(timeout=10) == ("queued", {"ahead": 1})
    retried = api.post(f"/api/adventures/{aid}/retry")  # JSON: waits behind both
    assert retried.status_code == 200, retried.text
    assert _events(first)[-1][0] == "reply"
    assert [n for n, _ in _events(later) if n != "chunk"] == ["reply"]
    # The retry came last: it wrote a second take of the continue's reply.
    assert retried.json()["reply"]["text"] == "a gong"
    texts = _texts(api, aid)
    assert texts[-3:] == ["look up", "gulls wheel over the harbour wall in a long slow circle",
                          "a gong"]  # fmt: skip


def test_a_failed_turn_gives_its_ticket_back_at_once(
    served: tuple[httpx.Client, Any], double: ModelDouble
) -> None:
    api, sessions = served
    aid = api.post("/api/adventures", json={"scenario": "lantern-coast"}).json()["id"]
    double.fail_next("500")
    failed = api.post(f"/api/adventures/{aid}/actions", json={"text": "knock"})
    assert failed.status_code == 502, failed.text
    assert "Your action is saved" in failed.json()["error"]["message"]
    assert _tickets(sessions) == 0
    double.script("the door opens")
    started = time.monotonic()
    assert api.post(f"/api/adventures/{aid}/retry").json()["reply"]["text"] == "the door opens"
    assert time.monotonic() - started < turn_queue.DEAD_S / 2


def test_a_ticket_of_a_process_that_died_is_skipped(
    served: tuple[httpx.Client, Any], double: ModelDouble
) -> None:
    """A ticket untouched for DEAD_S (its process died mid-turn) neither holds the
    adventure nor is left behind."""
    api, sessions = served
    aid = api.post("/api/adventures", json={"scenario": "lantern-coast"}).json()["id"]
    with session_scope(sessions) as session:
        host = session.get(Adventure, aid).user_id  # type: ignore[union-attr]
        stale = utcnow() - timedelta(seconds=turn_queue.DEAD_S + 5)
        session.add(TurnTicket(adventure_id=aid, user_id=host, seen_at=stale))
    double.script("the wind drops")
    answer = api.post(f"/api/adventures/{aid}/actions", json={"text": "wait"})
    assert answer.status_code == 200 and answer.json()["reply"]["text"] == "the wind drops"
    assert _tickets(sessions) == 0


def test_a_live_ticket_holds_the_turn_until_it_goes(
    served: tuple[httpx.Client, Any], double: ModelDouble
) -> None:
    """Another process's turn (a live ticket) goes first: the action waits unwritten, and is
    written and answered once that ticket is gone."""
    api, sessions = served
    aid = api.post("/api/adventures", json={"scenario": "lantern-coast"}).json()["id"]
    with session_scope(sessions) as session:
        host = session.get(Adventure, aid).user_id  # type: ignore[union-attr]
        other = TurnTicket(adventure_id=aid, user_id=host)
        session.add(other)
        session.flush()
        other_id = other.id
    double.script("the fog lifts")
    out: queue.Queue[Any] = queue.Queue()
    threading.Thread(target=_turn, args=(api, aid, {"text": "wait for it"}, out)).start()
    assert out.get(timeout=10) == ("queued", {"ahead": 1})
    time.sleep(1.0)
    assert "wait for it" not in _texts(api, aid) and out.empty()
    with session_scope(sessions) as session:
        turn_queue.done(session, other_id)
    events = _events(out)
    assert [n for n, _ in events if n != "chunk"] == ["action", "reply"]
    assert _texts(api, aid)[-2:] == ["wait for it", "the fog lifts"]


def test_a_players_retry_that_waited_is_checked_again_when_its_turn_comes(
    tmp_path: Path, double: ModelDouble
) -> None:
    """Tal may retry his own newest reply when he asks; behind Mara's continue, the newest
    reply is hers by the time his turn comes, so the retry is refused and changes nothing."""
    app = create_app(double_settings(tmp_path, double, auth="accounts"))
    with serving(app) as (url, _):
        with session_scope(app.state.runtime.sessions) as session:
            for name in ("mara", "tal"):
                create_user(session, name, PASSWORD, hasher=CHEAP)
        mara, tal = _signed_in(url, "mara"), _signed_in(url, "tal")
        aid = mara.post("/api/adventures", json={"title": "Quay"}).json()["id"]
        code = mara.post(f"/api/adventures/{aid}/invites", json={}).json()["code"]
        assert tal.post(f"/api/invites/{code}/join", json={"persona": {"name": "Tal"}}).is_success
        double.script("Gulls cry.")
        assert tal.post(f"/api/adventures/{aid}/actions", json={"text": "wave"}).is_success
        double.chunk_delay = 0.1
        double.script("the fog rolls in over the harbour wall and the lamps go dim one by one")
        out: queue.Queue[Any] = queue.Queue()
        threading.Thread(target=_turn, args=(mara, aid, {"type": "continue"}, out)).start()
        assert out.get(timeout=10)[0] == "chunk"  # Mara's continue is being written
        retried = tal.post(f"/api/adventures/{aid}/retry")
        assert retried.status_code == 403, retried.text
        assert "only their own newest action" in retried.json()["error"]["message"]
        assert _events(out)[-1][0] == "reply"
        texts = _texts(mara, aid)
        assert texts[-1].startswith("the fog rolls in") and "Gulls cry." in texts
