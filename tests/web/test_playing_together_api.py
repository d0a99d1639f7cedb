"""Playing together (docs/sharing.md). Round-robin turns: once the host sets it, each
player acts once per round; acting again before every other player has is refused,
naming whom to wait for; a viewer plays no one and holds no one up; a continue is never
refused; the host turns it off again, and only the host may set it. Authors in an
export: each action carries the persona it was written as, and an import keeps it."""

from __future__ import annotations

from fastapi.testclient import TestClient
from tests.kit.accounts import As, add, played_by_two

from talekeeper_testkit.double import ModelDouble


def _shared(accounts: TestClient) -> tuple[As, As, int]:
    return played_by_two(accounts, "Rounds")


def _act(who: As, aid: int, text: str) -> object:
    return who.post(f"/api/adventures/{aid}/actions", json={"text": text})


def test_each_player_acts_once_a_round(accounts: TestClient, double: ModelDouble) -> None:
    mara, tal, aid = _shared(accounts)
    double.default_reply = "The tide turns."
    # Free order (the default): Mara may act twice in a row.
    assert mara.get(f"/api/adventures/{aid}").json()["turn_order"] == "free"
    assert _act(mara, aid, "look").status_code == 200
    assert _act(mara, aid, "look again").status_code == 200
    refused = tal.patch(f"/api/adventures/{aid}", json={"turn_order": "round_robin"})
    assert refused.status_code == 403  # the host's to set
    set_ = mara.patch(f"/api/adventures/{aid}", json={"turn_order": "round_robin"})
    assert set_.status_code == 200 and set_.json()["turn_order"] == "round_robin"
    # Mara acted last: Tal's turn now.
    again = _act(mara, aid, "a third look")
    assert again.status_code == 409, again.text
    assert "wait for Tal to act" in again.json()["error"]["message"]
    assert _act(tal, aid, "wave").status_code == 200
    assert _act(tal, aid, "wave again").status_code == 409
    assert _act(mara, aid, "nod").status_code == 200
    # A continue is no one's action: never refused.
    assert mara.post(f"/api/adventures/{aid}/actions", json={"type": "continue"}).status_code == 200
    texts = [a["text"] for a in mara.get(f"/api/adventures/{aid}/actions").json()["actions"]]
    assert "a third look" not in texts and "wave again" not in texts
    # Off again: anyone, any time.
    mara.patch(f"/api/adventures/{aid}", json={"turn_order": "free"})
    assert _act(mara, aid, "a last look").status_code == 200


def test_a_viewer_holds_no_one_up_and_a_new_player_gets_a_turn(
    accounts: TestClient, double: ModelDouble
) -> None:
    mara, tal, aid = _shared(accounts)
    double.default_reply = "Gulls."
    mara.patch(f"/api/adventures/{aid}", json={"turn_order": "round_robin"})
    add(accounts.app, "ines")
    ines = As(accounts, "ines")
    viewer = mara.post(f"/api/adventures/{aid}/invites", json={"role": "viewer"}).json()["code"]
    assert ines.post(f"/api/invites/{viewer}/join", json={"persona": {"name": "Ines"}}).is_success
    assert _act(mara, aid, "one").status_code == 200
    assert _act(tal, aid, "two").status_code == 200
    assert _act(mara, aid, "three").status_code == 200  # Ines only watches
    # Ines becomes a player: she has not acted, so Tal waits for her as well as for Mara.
    ines_id = mara.get(f"/api/adventures/{aid}/members").json()[2]["user_id"]
    mara.patch(f"/api/adventures/{aid}/members/{ines_id}", json={"role": "player"})
    blocked = _act(tal, aid, "four")  # Mara acted since Tal's last action; Ines never has
    assert blocked.status_code == 409
    assert "wait for Ines to act" in blocked.json()["error"]["message"]
    assert _act(ines, aid, "four").status_code == 200
    assert _act(tal, aid, "five").status_code == 200
    assert _act(mara, aid, "six").status_code == 200


def test_a_bad_turn_order_is_refused_with_the_choices(accounts: TestClient) -> None:
    mara, _, aid = _shared(accounts)
    answer = mara.patch(f"/api/adventures/{aid}", json={"turn_order": "chaos"})
    assert answer.status_code == 400
    assert "free, round_robin" in answer.json()["error"]["message"]


def test_an_export_carries_who_wrote_each_action_and_an_import_keeps_it(
    accounts: TestClient, double: ModelDouble
) -> None:
    """Authors travel as the persona each action was written as; the accounts do not.
    A file of single play carries no author at all."""
    mara, tal, aid = _shared(accounts)
    double.default_reply = "The quay is quiet."
    assert _act(tal, aid, "wave").status_code == 200
    assert _act(mara, aid, "nod").status_code == 200
    exported = mara.get(f"/api/adventures/{aid}/export").json()
    authors = [(a["text"], a.get("author")) for a in exported["actions"] if a["type"] == "do"]
    assert authors == [("wave", "Tal"), ("nod", "Mara")]
    assert all("author" not in a for a in exported["actions"] if a["type"] == "narration")
    imported = mara.post("/api/adventures/import", json=exported)
    assert imported.status_code == 201, imported.text
    again = mara.get(f"/api/adventures/{imported.json()['id']}/export").json()
    assert [a.get("author") for a in again["actions"]] == [
        a.get("author") for a in exported["actions"]
    ]
    # The imported copy is the importer's alone: no account is named as an author.
    story = mara.get(f"/api/adventures/{imported.json()['id']}/actions").json()["actions"]
    assert all("author" not in a for a in story)
    alone = mara.post("/api/adventures", json={"title": "Alone"}).json()["id"]
    assert _act(mara, alone, "sit").status_code == 200
    single = mara.get(f"/api/adventures/{alone}/export").json()
    assert all("author" not in a for a in single["actions"])


def test_each_player_character_has_a_place_and_belongings_of_their_own(
    accounts: TestClient, double: ModelDouble
) -> None:
    """A member's "walk into the Salt Market" moves their character, not the host's; what
    they pick up is theirs; the host's own actions move the host's character as before."""
    mara, tal, aid = _shared(accounts)
    double.default_reply = "Gulls wheel overhead."
    assert _act(mara, aid, "walk into the Lamp House").status_code == 200
    assert _act(tal, aid, "walk into the Salt Market").status_code == 200
    assert _act(tal, aid, "pick up the brass key").status_code == 200
    world = mara.get(f"/api/adventures/{aid}/world").json()
    assert world["location"]["name"] == "the Lamp House"  # the host's character stayed
    assert world["inventory"] == [] and world["present"] == []
    said = mara.get(f"/api/adventures/{aid}/world/events").json()
    theirs = [(e["kind"], e["subject"], e["object"]) for e in said]
    assert ("moved", "Tal", "the Salt Market") in theirs
    assert ("took", "Tal", "the brass key") in theirs
    # The host's character walks in where Tal's stands: the world lists Tal present.
    assert _act(mara, aid, "walk into the Salt Market").status_code == 200
    world = mara.get(f"/api/adventures/{aid}/world").json()
    assert world["location"]["name"] == "the Salt Market"
    assert [p["name"] for p in world["present"]] == ["Tal"]


def test_insights_name_whose_action_a_reply_answers(
    accounts: TestClient, double: ModelDouble
) -> None:
    mara, tal, aid = _shared(accounts)
    double.default_reply = "The bell answers."
    turn = tal.post(f"/api/adventures/{aid}/actions", json={"text": "ring the bell"}).json()
    reply_id = turn["reply"]["id"]
    seen = mara.get(f"/api/actions/{reply_id}/insights").json()
    assert seen["author"] == {"user_id": turn["action"]["author"]["user_id"], "persona_name": "Tal"}
    alone = mara.post("/api/adventures", json={"title": "Alone"}).json()["id"]
    single = mara.post(f"/api/adventures/{alone}/actions", json={"text": "sit"}).json()
    assert "author" not in mara.get(f"/api/actions/{single['reply']['id']}/insights").json()
