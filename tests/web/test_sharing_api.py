"""Shared adventures over JSON (docs/sharing.md): the host invites with a code shown once,
with an expiry and a use limit, revocable; joining makes an account a player or a viewer
with its own persona; at most eight people; the host changes roles, removes members and
ends sharing; a removed member, like a stranger, finds no adventure at once; a member
asking for the host's part is told who may. Local mode has no sharing and says why."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import select, update
from tests.conftest import LOCAL, double_settings
from tests.kit.accounts import As, add

from talekeeper.core.clock import utcnow
from talekeeper.storage.db import session_scope
from talekeeper.storage.models import AdventureInvite, AdventureMember
from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble

PERSONA = {"name": "Tal Oakes", "pronouns": "he/him", "description": "A ferryman's son."}


def _adventure(host: As) -> int:
    made = host.post("/api/adventures", json={"title": "The Lantern Coast"})
    assert made.status_code == 201, made.text
    return int(made.json()["id"])


def _invite(host: As, aid: int, **body: Any) -> dict[str, Any]:
    made = host.post(f"/api/adventures/{aid}/invites", json=body)
    assert made.status_code == 201, made.text
    return dict(made.json())


def _join(who: As, code: str, persona: dict[str, str] = PERSONA) -> Any:
    return who.post(f"/api/invites/{code}/join", json={"persona": persona})


def _rows(accounts: TestClient, model: Any) -> list[Any]:
    with session_scope(accounts.app.state.runtime.sessions) as session:  # type: ignore[attr-defined]
        rows = list(session.scalars(select(model)))
        session.expunge_all()
        return rows


def test_a_player_joins_by_code_with_a_persona_and_follows_the_story(
    accounts: TestClient,
) -> None:
    mara, tal = As(accounts, "mara"), As(accounts, "tal")
    aid = _adventure(mara)
    invite = _invite(mara, aid, role="player", expires_in_hours=2, uses=1)
    assert invite["url"] == f"{LOCAL}/join#{invite['code']}"
    expires = invite["expires_at"]
    assert utcnow() + timedelta(minutes=119) < _aware(expires) <= utcnow() + timedelta(hours=2)

    joined = _join(tal, invite["code"])
    assert joined.status_code == 200, joined.text
    assert joined.json()["id"] == aid
    members = tal.get(f"/api/adventures/{aid}/members")
    assert members.status_code == 200, members.text
    assert [(m["name"], m["role"]) for m in members.json()] == [
        ("mara", "host"),
        ("tal", "player"),
    ]
    assert members.json()[1]["persona"] == PERSONA
    # A member reads the adventure and its story; the host's part is not theirs.
    assert tal.get(f"/api/adventures/{aid}").status_code == 200
    assert tal.get(f"/api/adventures/{aid}/actions").status_code == 200
    refused = tal.patch(f"/api/adventures/{aid}", json={"title": "Mine now"})
    assert refused.status_code == 403, refused.text
    assert "only its host" in refused.json()["error"]["message"]
    assert tal.post(f"/api/adventures/{aid}/invites", json={}).status_code == 403
    assert mara.get(f"/api/adventures/{aid}").json()["title"] == "The Lantern Coast"


def test_a_player_acts_on_the_hosts_models_and_the_action_names_its_author(
    accounts: TestClient, double: ModelDouble
) -> None:
    add(accounts.app, "wren")
    mara, tal, wren = As(accounts, "mara"), As(accounts, "tal"), As(accounts, "wren")
    aid = _adventure(mara)
    assert mara.patch("/api/settings", json={"reply_tokens": 111}).status_code == 200
    assert tal.patch("/api/settings", json={"reply_tokens": 222}).status_code == 200
    assert _join(tal, _invite(mara, aid)["code"]).status_code == 200
    assert _join(wren, _invite(mara, aid, role="viewer")["code"]).status_code == 200
    tal_id = tal.get(f"/api/adventures/{aid}/members").json()[1]["user_id"]

    double.script("The ferry knocks against the quay.")
    turn = tal.post(f"/api/adventures/{aid}/actions", json={"type": "do", "text": "moor it"})
    assert turn.status_code == 200, turn.text
    assert turn.json()["action"]["author"] == {"user_id": tal_id, "persona_name": "Tal Oakes"}
    assert "author" not in turn.json()["reply"]  # a narration has no author
    request = [r for r in double.requests if r.path == "/v1/chat/completions"][-1].body
    assert request["max_tokens"] == 111  # the host's settings, not the player's
    # The call counts in the host's usage.
    assert mara.get("/api/ai-calls", params={"adventure_id": aid}).json()
    assert tal.get("/api/ai-calls", params={"adventure_id": aid}).json() == []
    story = mara.get(f"/api/adventures/{aid}/actions").json()["actions"]
    assert [a.get("author", {}).get("persona_name") for a in story][-2:] == ["Tal Oakes", None]

    refused = wren.post(f"/api/adventures/{aid}/actions", json={"type": "do", "text": "wave"})
    assert refused.status_code == 403 and "co-hosts and players" in refused.text
    add(accounts.app, "stranger")
    stranger = As(accounts, "stranger")
    answer = stranger.post(f"/api/adventures/{aid}/actions", json={"type": "do", "text": "x"})
    assert answer.status_code == 404
    assert len(mara.get(f"/api/adventures/{aid}/actions").json()["actions"]) == len(story)


def test_with_several_players_the_story_is_told_in_the_third_person(
    accounts: TestClient, double: ModelDouble
) -> None:
    mara, tal = As(accounts, "mara"), As(accounts, "tal")
    made = mara.post(
        "/api/adventures",
        json={"title": "The Quay", "persona": {"name": "Mara Quill", "pronouns": "she/her"}},
    )
    aid = made.json()["id"]
    double.script("Gulls wheel overhead.")
    waved = mara.post(f"/api/adventures/{aid}/actions", json={"type": "do", "text": "wave"})
    assert waved.status_code == 200 and "author" not in waved.json()["action"]  # single play
    alone = [r for r in double.requests if r.path == "/v1/chat/completions"][-1].body
    assert alone["messages"][-1]["content"] == "> You wave."  # one player: the second person
    # A viewer plays no one: still the second person.
    assert _join(tal, _invite(mara, aid, role="viewer")["code"]).status_code == 200
    assert "You wave." in _rendered(mara, aid)[-2]
    tal_id = tal.get(f"/api/adventures/{aid}/members").json()[1]["user_id"]
    assert mara.patch(f"/api/adventures/{aid}/members/{tal_id}", json={"role": "player"}).is_success

    double.script("The rope pulls taut.")
    body = {"type": "do", "text": "I grab my rope"}
    assert tal.post(f"/api/adventures/{aid}/actions", json=body).status_code == 200
    request = [r for r in double.requests if r.path == "/v1/chat/completions"][-1].body
    system = request["messages"][0]["content"]
    assert "Several players share this story" in system
    assert "Mara Quill (she/her)" in system and "Tal Oakes (he/him)" in system
    assert "never act, speak or decide for any of them" in system
    assert "The player's character" not in system
    assert "several players share" in system and "> You" not in system
    told = [m["content"] for m in request["messages"]]
    assert told[-1].endswith("> Tal Oakes grabs their rope.")
    assert "> Mara Quill waves." in "\n".join(told) and "> You" not in "\n".join(told)
    assert _rendered(tal, aid)[-4:] == [
        "> Mara Quill waves.",
        "Gulls wheel overhead.",
        "> Tal Oakes grabs their rope.",
        "The rope pulls taut.",
    ]


def _rendered(who: As, aid: int) -> list[str]:
    return [a["rendered"] for a in who.get(f"/api/adventures/{aid}/actions").json()["actions"]]


def test_a_player_retries_and_edits_only_their_own_newest_action(
    accounts: TestClient, double: ModelDouble
) -> None:
    add(accounts.app, "wren")
    mara, tal, wren = As(accounts, "mara"), As(accounts, "tal"), As(accounts, "wren")
    aid = _adventure(mara)
    assert _join(tal, _invite(mara, aid)["code"]).status_code == 200
    assert _join(wren, _invite(mara, aid, role="viewer")["code"]).status_code == 200

    def act(who: As, text: str) -> dict[str, Any]:
        double.script(f"The sea answers {text}.")
        turn = who.post(f"/api/adventures/{aid}/actions", json={"type": "do", "text": text})
        assert turn.status_code == 200, turn.text
        return dict(turn.json())

    hosts = act(mara, "wave")["action"]["id"]
    assert tal.post(f"/api/adventures/{aid}/retry").status_code == 403  # the host's turn
    assert tal.patch(f"/api/actions/{hosts}", json={"text": "bow"}).status_code == 403
    first = act(tal, "row")["action"]["id"]
    double.script("The oars dip again.")
    retried = tal.post(f"/api/adventures/{aid}/retry")
    assert retried.status_code == 200, retried.text
    assert retried.json()["reply"]["text"] == "The oars dip again."
    edited = tal.patch(f"/api/actions/{first}", json={"text": "row harder"})
    assert edited.status_code == 200 and edited.json()["text"] == "row harder"
    for who in (wren, tal):
        refused = who.post(f"/api/adventures/{aid}/retry")
        assert refused.status_code == 403, refused.text
        assert who.patch(f"/api/actions/{first}", json={"text": "x"}).status_code == 403
        act(mara, "nod")  # a newer action than tal's: theirs is no longer the newest
    add(accounts.app, "stranger")
    stranger = As(accounts, "stranger")
    assert stranger.patch(f"/api/actions/{first}", json={"text": "x"}).status_code == 404
    assert stranger.post(f"/api/adventures/{aid}/retry").status_code == 404
    # The host changes anyone's.
    assert mara.patch(f"/api/actions/{first}", json={"text": "row on"}).status_code == 200


def _feed(who: As, aid: int, after: int | None = None, **headers: str) -> Any:
    params: dict[str, Any] = {"follow": "false"}
    if after is not None:
        params["after"] = after
    return who.get(f"/api/adventures/{aid}/events", params=params, headers=headers)


def _events(answer: Any) -> list[tuple[int, str, dict[str, Any]]]:
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/event-stream")
    out, ident, name = [], 0, ""
    for line in answer.text.splitlines():
        if line.startswith("id: "):
            ident = int(line[4:])
        elif line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            out.append((ident, name, json.loads(line[6:])))
    return out


def test_the_feed_tells_members_every_change_in_order_and_resumes_after_the_last_seen(
    accounts: TestClient, double: ModelDouble
) -> None:
    mara, tal = As(accounts, "mara"), As(accounts, "tal")
    aid = _adventure(mara)
    double.script("Gulls cry.")
    assert mara.post(
        f"/api/adventures/{aid}/actions", json={"type": "do", "text": "wave"}
    ).is_success
    assert _events(_feed(mara, aid)) == []  # single play writes no feed
    assert _join(tal, _invite(mara, aid)["code"]).status_code == 200
    double.script("The rope holds.")
    turn = tal.post(f"/api/adventures/{aid}/actions", json={"type": "do", "text": "tie it"})
    assert turn.status_code == 200
    assert mara.post(f"/api/adventures/{aid}/undo").status_code == 200
    seen = _events(_feed(tal, aid))
    assert [name for _, name, _ in seen] == ["members", "append", "reply", "undo"]
    ids = [ident for ident, _, _ in seen]
    assert ids == sorted(ids) and len(set(ids)) == 4
    assert seen[0][2]["change"] == "joined"
    assert seen[1][2]["action_ids"] == [turn.json()["action"]["id"]]
    assert seen[2][2]["action_ids"][0] == turn.json()["reply"]["id"]
    # Resuming after an event sends only what came later, by header or by parameter.
    assert [e[1] for e in _events(_feed(tal, aid, **{"Last-Event-ID": str(ids[1])}))] == [
        "reply",
        "undo",
    ]
    assert [e[1] for e in _events(_feed(tal, aid, after=ids[2]))] == ["undo"]
    assert _events(_feed(tal, aid, after=ids[3])) == []
    for bad in ("abc", "-1", "9" * 30):
        refused = _feed(tal, aid, **{"Last-Event-ID": bad})
        assert refused.status_code == 400 and "Last-Event-ID" in refused.text
    add(accounts.app, "stranger")
    assert _feed(As(accounts, "stranger"), aid).status_code == 404
    assert mara.delete(f"/api/adventures/{aid}/members/{seen[0][2]['user_id']}").is_success
    assert _feed(tal, aid).status_code == 404
    assert [e[2]["change"] for e in _events(_feed(mara, aid, after=ids[3]))] == ["removed"]


def test_the_code_is_shown_once_and_never_stored(accounts: TestClient) -> None:
    mara = As(accounts, "mara")
    aid = _adventure(mara)
    invite = _invite(mara, aid)
    listed = mara.get(f"/api/adventures/{aid}/invites").json()
    assert [i["id"] for i in listed] == [invite["id"]]
    assert "code" not in listed[0] and listed[0]["uses_left"] == 1
    assert listed[0]["role"] == "player" and not listed[0]["revoked"]
    [row] = _rows(accounts, AdventureInvite)
    assert invite["code"] not in repr(vars(row)) and len(row.code_hash) == 64


def test_an_expired_a_used_up_a_revoked_and_an_unknown_code_let_no_one_in(
    accounts: TestClient,
) -> None:
    add(accounts.app, "wren")
    mara, tal, wren = As(accounts, "mara"), As(accounts, "tal"), As(accounts, "wren")
    aid = _adventure(mara)

    once = _invite(mara, aid, uses=1)
    assert _join(tal, once["code"]).status_code == 200
    used = _join(wren, once["code"])
    assert used.status_code == 409 and "used up" in used.json()["error"]["message"]

    late = _invite(mara, aid)
    with session_scope(accounts.app.state.runtime.sessions) as session:  # type: ignore[attr-defined]
        session.execute(
            update(AdventureInvite)
            .where(AdventureInvite.id == late["id"])
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
    expired = _join(wren, late["code"])
    assert expired.status_code == 409 and "expired" in expired.json()["error"]["message"]

    revoked = _invite(mara, aid)
    answer = mara.delete(f"/api/adventures/{aid}/invites/{revoked['id']}")
    assert answer.status_code == 200 and answer.json()["revoked"]
    refused = _join(wren, revoked["code"])
    assert refused.status_code == 409 and "revoked" in refused.json()["error"]["message"]

    for code in ("not-a-code", "x" * 100):
        unknown = _join(wren, code)
        assert unknown.status_code == 404 and "no such invite" in unknown.text
    assert _join(wren, "x" * 3_000).status_code == 404  # no code is that long
    assert wren.get(f"/api/adventures/{aid}").status_code == 404  # never let in
    assert len(_rows(accounts, AdventureMember)) == 1  # tal only


def test_joining_again_or_as_the_host_spends_nothing(accounts: TestClient) -> None:
    mara, tal = As(accounts, "mara"), As(accounts, "tal")
    aid = _adventure(mara)
    invite = _invite(mara, aid, uses=2)
    assert _join(mara, invite["code"]).status_code == 200  # the host: nothing to do
    assert _join(tal, invite["code"]).status_code == 200
    again = _join(tal, invite["code"], {"name": "Someone Else"})
    assert again.status_code == 200
    [listed] = mara.get(f"/api/adventures/{aid}/invites").json()
    assert listed["uses_left"] == 1
    members = mara.get(f"/api/adventures/{aid}/members").json()
    assert [m["persona"]["name"] for m in members] == ["", "Tal Oakes"]


def test_at_most_eight_play_one_adventure(accounts: TestClient) -> None:
    mara = As(accounts, "mara")
    aid = _adventure(mara)
    invite = _invite(mara, aid, uses=7)
    extra = _invite(mara, aid, uses=1)
    for n in range(7):
        add(accounts.app, f"friend{n}")
        assert _join(As(accounts, f"friend{n}"), invite["code"]).status_code == 200
    full = _join(As(accounts, "tal"), extra["code"])
    assert full.status_code == 409 and "at most 8" in full.json()["error"]["message"]
    assert len(mara.get(f"/api/adventures/{aid}/members").json()) == 8


def test_a_viewer_follows_and_the_host_changes_roles(accounts: TestClient) -> None:
    mara, tal = As(accounts, "mara"), As(accounts, "tal")
    aid = _adventure(mara)
    assert _join(tal, _invite(mara, aid, role="viewer")["code"]).status_code == 200
    tal_id = tal.get(f"/api/adventures/{aid}/members").json()[1]["user_id"]
    assert tal.get(f"/api/adventures/{aid}/actions").status_code == 200
    refused = tal.patch(f"/api/adventures/{aid}/members/{tal_id}", json={"role": "player"})
    assert refused.status_code == 403
    changed = mara.patch(f"/api/adventures/{aid}/members/{tal_id}", json={"role": "player"})
    assert changed.status_code == 200, changed.text
    assert changed.json()[1]["role"] == "player"
    for body in ({"role": "host"}, {"role": "owner"}, {}):
        bad = mara.patch(f"/api/adventures/{aid}/members/{tal_id}", json=body)
        assert 400 <= bad.status_code < 500 and bad.json()["error"]["message"], body


def test_a_removed_member_finds_no_adventure_at_once(accounts: TestClient) -> None:
    add(accounts.app, "wren")
    mara, tal, wren = As(accounts, "mara"), As(accounts, "tal"), As(accounts, "wren")
    aid = _adventure(mara)
    invite = _invite(mara, aid, uses=2)
    assert _join(tal, invite["code"]).status_code == 200
    assert _join(wren, invite["code"]).status_code == 200
    ids = {m["name"]: m["user_id"] for m in mara.get(f"/api/adventures/{aid}/members").json()}
    listed = [(a["id"], a["role"]) for a in tal.get("/api/adventures").json()]
    assert listed == [(aid, "player")]
    assert [a["role"] for a in mara.get("/api/adventures").json()] == ["host"]

    left = mara.delete(f"/api/adventures/{aid}/members/{ids['tal']}")
    assert left.status_code == 200 and [m["name"] for m in left.json()] == ["mara", "wren"]
    for url in (f"/api/adventures/{aid}", f"/api/adventures/{aid}/members"):
        assert tal.get(url).status_code == 404, url
    assert tal.get("/api/adventures").json() == []
    # A member may leave; only the host removes others.
    assert wren.delete(f"/api/adventures/{aid}/members/{ids['mara']}").status_code == 403
    assert wren.delete(f"/api/adventures/{aid}/members/{ids['wren']}").status_code == 200
    assert wren.get(f"/api/adventures/{aid}").status_code == 404


def test_a_removal_holds_at_once_in_another_app_process(
    accounts: TestClient, tmp_path: Path, double: ModelDouble
) -> None:
    """A second app on the same database, as a second process would be: no cache of who
    belongs keeps a removed member in."""
    mara, tal = As(accounts, "mara"), As(accounts, "tal")
    aid = _adventure(mara)
    assert _join(tal, _invite(mara, aid)["code"]).status_code == 200
    other = create_app(double_settings(tmp_path, double, auth="accounts"))
    with TestClient(other, base_url=LOCAL) as second:
        tal_there = As(second, "tal")
        assert tal_there.get(f"/api/adventures/{aid}").status_code == 200
        tal_id = tal.get(f"/api/adventures/{aid}/members").json()[1]["user_id"]
        assert mara.delete(f"/api/adventures/{aid}/members/{tal_id}").status_code == 200
        assert tal_there.get(f"/api/adventures/{aid}").status_code == 404
        assert tal_there.get(f"/api/adventures/{aid}/actions").status_code == 404


def test_ending_sharing_removes_every_member_and_invite(accounts: TestClient) -> None:
    mara, tal = As(accounts, "mara"), As(accounts, "tal")
    aid = _adventure(mara)
    invite = _invite(mara, aid, uses=3)
    assert _join(tal, invite["code"]).status_code == 200
    assert tal.delete(f"/api/adventures/{aid}/members").status_code == 403
    ended = mara.delete(f"/api/adventures/{aid}/members")
    assert ended.status_code == 200 and [m["role"] for m in ended.json()] == ["host"]
    assert tal.get(f"/api/adventures/{aid}").status_code == 404
    assert _join(tal, invite["code"]).status_code == 404
    assert mara.get(f"/api/adventures/{aid}/invites").json() == []


def test_an_invite_is_checked_before_it_is_made(accounts: TestClient) -> None:
    mara = As(accounts, "mara")
    aid = _adventure(mara)
    for body in (
        {"role": "host"},
        {"role": "admin"},
        {"expires_in_hours": 0},
        {"expires_in_hours": 24 * 31},
        {"uses": 8},
        {"uses": -1},
        {"colour": "red"},
    ):
        answer = mara.post(f"/api/adventures/{aid}/invites", json=body)
        assert 400 <= answer.status_code < 500, (body, answer.text)
        assert answer.json()["error"]["message"], body
    code = _invite(mara, aid, uses=7)["code"]
    tal = As(accounts, "tal")
    for persona in ({}, {"name": "  "}, {"name": "x" * 121}, {"name": "Tal", "age": 3}):
        answer = _join(tal, code, persona)
        assert 400 <= answer.status_code < 500, (persona, answer.text)
    assert tal.get(f"/api/adventures/{aid}").status_code == 404


def test_local_mode_has_no_sharing_and_says_why(client: TestClient) -> None:
    aid = client.post("/api/adventures", json={"title": "Alone"}).json()["id"]
    for method, url, body in (
        ("POST", f"/api/adventures/{aid}/invites", None),
        ("GET", f"/api/adventures/{aid}/members", None),
        ("GET", f"/api/adventures/{aid}/invites", None),
        ("DELETE", f"/api/adventures/{aid}/members", None),
        ("GET", f"/api/adventures/{aid}/events", None),
        ("POST", f"/api/adventures/{aid}/presence", {"writing": True}),
    ):
        answer = client.request(method, url, json=body)
        assert answer.status_code == 400, (url, answer.text)
        error = answer.json()["error"]
        assert error["code"] == "sharing_needs_accounts"
        assert "TALEKEEPER_AUTH=accounts" in error["message"]
    # No invite, member or code is found here, and the answer says why.
    for method, url, body in (
        ("DELETE", f"/api/adventures/{aid}/invites/1", None),
        ("PATCH", f"/api/adventures/{aid}/members/2", {"role": "viewer"}),
        ("DELETE", f"/api/adventures/{aid}/members/2", None),
    ):
        answer = client.request(method, url, json=body)
        assert answer.status_code == 404, (url, answer.text)
        assert "TALEKEEPER_AUTH=accounts" in answer.json()["error"]["message"], url
    joined = client.post("/api/invites/abc/join", json={"persona": {"name": "Mara"}})
    assert joined.status_code == 404 and "TALEKEEPER_AUTH=accounts" in joined.text


def _aware(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
