"""Accounts never reach each other: two accounts, every route the app has (found from the
app, so a new route is covered or this fails), the second account sending the first one's
ids. Every such request is a 404 (never a 403: no oracle of what exists), nothing of the
first account's is changed, and the lists the second account reads (adventures, AI calls,
background work, settings, tokens) hold nothing of the first's."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.kit.accounts import As
from tests.kit.web import endpoints
from tests.kit.world import PATH_VALUES, QUERY_VALUES, VALID_BODIES, World, make_world, state

from talekeeper_testkit.double import ModelDouble

# Path parameters that name no row of an account (a shipped scenario is everyone's).
SHARED_PARAMS = {"scenario_id"}


@pytest.fixture
def base(accounts: TestClient) -> TestClient:
    """The two players' app (``tests/web/conftest.py``)."""
    return accounts


def owned(base: TestClient, double: ModelDouble, name: str) -> tuple[Any, World, int]:
    client = As(base, name)
    world = make_world(client, double)  # type: ignore[arg-type]
    token = client.post("/api/tokens", json={"name": "script", "scopes": ["read"]}).json()
    assert client.patch("/api/settings", json={"reply_tokens": 111}).status_code == 200
    return client, world, int(token["id"])


def everything(client: Any, world: World) -> dict[str, Any]:
    out = state(client, world)
    out["tokens"] = client.get("/api/tokens").json()
    out["derived"] = client.get("/api/derived").json()
    return out


def _url(endpoint: Any, world: World, token: int, invite: int) -> str:
    """The endpoint's path with the first account's ids (its token and invite too)."""
    values = {name: PATH_VALUES[name](world) for name, _ in endpoint.path_params()}
    values |= {k: str(v) for k, v in (("token_id", token), ("invite_id", invite)) if k in values}
    return str(endpoint.path.format(**values))


def test_no_route_lets_one_account_read_or_change_anothers(
    base: TestClient, double: ModelDouble
) -> None:
    mara, mara_world, mara_token = owned(base, double, "mara")
    tal, tal_world, _ = owned(base, double, "tal")
    invite = mara.post(f"/api/adventures/{mara_world.adventure}/invites", json={}).json()
    before = everything(mara, mara_world)
    swept = 0
    for endpoint in endpoints(base.app):
        params = [name for name, _ in endpoint.path_params()]
        if not params or set(params) <= SHARED_PARAMS:
            continue
        if endpoint.path.startswith("/api/admin/"):
            continue  # a player lacks the admin scope (403) whatever the ids: test_admin_api
        url = _url(endpoint, mara_world, mara_token, int(invite["id"]))
        body = VALID_BODIES[endpoint.key](tal_world) if endpoint.key in VALID_BODIES else None
        query = {n: v for n, v in QUERY_VALUES.items() if n in dict(endpoint.query_params())}
        answer = tal.request(endpoint.method, url, json=body, params=query)
        swept += 1
        label = f"{endpoint.method} {url}: {answer.status_code} {answer.text[:200]}"
        assert answer.status_code == 404, label
        kind = "application/json" if url.startswith("/api/") else "text/html"  # a page: its 404
        assert answer.headers["content-type"].startswith(kind), label
        if kind == "application/json":  # it names only the ids asked for: no other row shows
            named = set(re.findall(r"\d+", answer.json()["error"]["message"]))
            assert named <= set(re.findall(r"\d+", url)), label
    assert swept >= 30  # every route that names a row of an account's
    assert everything(mara, mara_world) == before

    # What the second account lists holds nothing of the first's.
    adventures = tal.get("/api/adventures").json()
    assert [a["id"] for a in adventures] == [tal_world.adventure]
    mara_calls = {c["id"] for c in mara.get("/api/ai-calls", params={"limit": 500}).json()}
    tal_calls = {c["id"] for c in tal.get("/api/ai-calls", params={"limit": 500}).json()}
    assert mara_calls and tal_calls and not mara_calls & tal_calls
    derived = tal.get("/api/derived").json()
    assert [d["id"] for d in derived["adventures"]] == [tal_world.adventure], derived
    assert mara_token not in [t["id"] for t in tal.get("/api/tokens").json()["tokens"]]
    # settings are each account's own
    assert tal.patch("/api/settings", json={"reply_tokens": 222}).status_code == 200
    assert mara.get("/api/settings").json()["values"]["reply_tokens"] == 111


# What a member of a shared adventure may do by role (docs/sharing.md): everything else of
# the adventure is the host's, refused with 403 and changing nothing.
FOLLOWING = {
    ("GET", "/api/adventures/{adventure_id}"),
    ("GET", "/api/adventures/{adventure_id}/actions"),
    ("GET", "/api/adventures/{adventure_id}/members"),
    ("GET", "/api/adventures/{adventure_id}/events"),
    ("GET", "/adventures/{adventure_id}"),  # the play page: the story, without the panels
}
PLAYING = {
    ("POST", "/api/adventures/{adventure_id}/actions"),
    ("POST", "/api/adventures/{adventure_id}/retry"),  # their own newest action only
    ("PATCH", "/api/actions/{action_id}"),
    ("POST", "/api/adventures/{adventure_id}/presence"),  # they are typing an action
}


def _as_member(
    base: TestClient, member: Any, world: World, token: int, invite: dict[str, Any], role: str
) -> Iterator[tuple[Any, Any, str]]:
    """Every route of one adventure or action, asked by ``member`` with the host's ids: the
    endpoint, the answer, and a label for a failed assertion."""
    for endpoint in endpoints(base.app):
        params = [name for name, _ in endpoint.path_params()]
        if "adventure_id" not in params and "action_id" not in params:
            continue
        url = _url(endpoint, world, token, int(invite["id"]))
        body = VALID_BODIES[endpoint.key](world) if endpoint.key in VALID_BODIES else None
        query = {n: v for n, v in QUERY_VALUES.items() if n in dict(endpoint.query_params())}
        answer = member.request(endpoint.method, url, json=body, params=query)
        yield (
            endpoint,
            answer,
            f"{role}: {endpoint.method} {url}: {answer.status_code} {answer.text[:200]}",
        )


@pytest.mark.parametrize("role", ["viewer", "player", "removed"])
def test_a_member_reaches_only_what_their_role_allows_and_a_removed_one_nothing(
    base: TestClient, double: ModelDouble, role: str
) -> None:
    mara, mara_world, mara_token = owned(base, double, "mara")
    tal, _, _ = owned(base, double, "tal")
    invite = mara.post(
        f"/api/adventures/{mara_world.adventure}/invites",
        json={"role": "viewer" if role == "viewer" else "player"},
    ).json()
    joined = tal.post(f"/api/invites/{invite['code']}/join", json={"persona": {"name": "Tal"}})
    assert joined.status_code == 200, joined.text
    if role == "removed":
        members = mara.get(f"/api/adventures/{mara_world.adventure}/members").json()
        url = f"/api/adventures/{mara_world.adventure}/members/{members[1]['user_id']}"
        assert mara.delete(url).status_code == 200
    before = everything(mara, mara_world)
    allowed = set() if role == "removed" else FOLLOWING | (PLAYING if role == "player" else set())
    swept = 0
    for endpoint, answer, label in _as_member(base, tal, mara_world, mara_token, invite, role):
        swept += 1
        if endpoint.key in allowed and endpoint.key not in PLAYING:
            assert answer.status_code == 200, label
        elif endpoint.key not in allowed:
            expected = 404 if role == "removed" else 403
            assert answer.status_code == expected, label
    assert swept >= 30
    after = everything(mara, mara_world)
    if role != "player":  # a player's sweep acted in the story: what it may do
        assert after == before


# What only the host does, a co-host included (docs/sharing.md): sharing it, attaching its
# library, deleting it. Everything else of the adventure is a co-host's to read and change.
HOSTING = {
    ("POST", "/api/adventures/{adventure_id}/invites"),
    ("GET", "/api/adventures/{adventure_id}/invites"),
    ("DELETE", "/api/adventures/{adventure_id}/invites/{invite_id}"),
    ("PATCH", "/api/adventures/{adventure_id}/members/{user_id}"),
    ("DELETE", "/api/adventures/{adventure_id}/members/{user_id}"),
    ("DELETE", "/api/adventures/{adventure_id}/members"),
    ("PUT", "/api/adventures/{adventure_id}/knowledge"),
    ("DELETE", "/api/adventures/{adventure_id}"),
}


def test_a_cohost_changes_everything_of_the_story_but_its_sharing(
    base: TestClient, double: ModelDouble
) -> None:
    mara, mara_world, mara_token = owned(base, double, "mara")
    tal, _, _ = owned(base, double, "tal")
    aid = mara_world.adventure
    invite = mara.post(f"/api/adventures/{aid}/invites", json={"role": "player"}).json()
    assert tal.post(
        f"/api/invites/{invite['code']}/join", json={"persona": {"name": "Tal"}}
    ).is_success
    tal_id = mara.get(f"/api/adventures/{aid}/members").json()[1]["user_id"]
    made = mara.patch(f"/api/adventures/{aid}/members/{tal_id}", json={"role": "cohost"})
    assert made.status_code == 200 and made.json()[1]["role"] == "cohost"
    swept = 0
    for endpoint, answer, label in _as_member(base, tal, mara_world, mara_token, invite, "cohost"):
        swept += 1
        assert answer.status_code < 500, label
        if endpoint.key in HOSTING:
            assert answer.status_code == 403, label
        else:  # theirs to do: never refused (a row an earlier request deleted may be gone)
            assert answer.status_code != 403, label
            assert answer.status_code != 404 or "no adventure" not in answer.text, label
    assert swept >= 30
    assert mara.get(f"/api/adventures/{aid}").status_code == 200  # still there, still hers
    # A co-host retries and edits any action, as the host does.
    double.script("The lamp steadies.")
    assert mara.post(f"/api/adventures/{aid}/actions", json={"text": "trim the wick"}).is_success
    double.script("The lamp flares.")
    assert tal.post(f"/api/adventures/{aid}/retry").status_code == 200
