"""Who knows what beyond the Memories, through the app (docs/world.md, "Who knows what"):
secret story cards and secret world events, and the Current state of a turn whose input
addresses someone. Tobin is away while the player takes the brass key and opens a quest,
and back when the player takes the lantern; Maren is there throughout.
"""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from tests.kit.memory import refused
from tests.kit.world_api import dry_run as ask
from tests.kit.world_api import event

from talekeeper_testkit.double import ModelDouble

QUESTION = ("say", "Tobin, what do you make of the cache?")


def turn(client: TestClient, double: ModelDouble, aid: int, reply: str) -> None:
    double.script(reply)
    response = client.post(f"/api/adventures/{aid}/actions", json={"type": "do", "text": "wait"})
    assert response.status_code == 200, response.text


def started(client: TestClient, double: ModelDouble) -> tuple[int, dict[str, int]]:
    """The adventure, and the ids of the events behind the key, the quest and the lantern."""
    created = client.post("/api/adventures", json={"scenario": "lantern-coast"})
    assert created.status_code == 201, created.text
    aid: int = created.json()["id"]
    event(client, aid, kind="moved", object="the Salt Market")
    event(client, aid, kind="arrived", subject="Maren")
    event(client, aid, kind="arrived", subject="Tobin")
    turn(client, double, aid, "Tobin leaves.")
    ids = {
        "key": event(client, aid, kind="took", object="brass key")["id"],
        "quest": event(client, aid, kind="quest", object="Find the heir", value="opened")["id"],
    }
    turn(client, double, aid, "Tobin arrives.")
    ids["lantern"] = event(client, aid, kind="took", object="lantern")["id"]
    return aid, ids


def section(insights: dict[str, Any], name: str) -> str:
    return str(next(s["text"] for s in insights["sections"] if s["name"] == name))


def cards_text(insights: dict[str, Any]) -> str:
    """The Story Cards sections (the ``cache`` layout puts a newly fired card in a second)."""
    return "\n".join(
        s["text"] for s in insights["sections"] if s["name"] in ("story_cards", "story_cards_new")
    )


def mode(client: TestClient, aid: int, value: str) -> None:
    response = client.patch(f"/api/adventures/{aid}", json={"witness_mode": value})
    assert response.status_code == 200, response.text


def test_what_the_player_got_while_tobin_was_away_is_marked_for_him_alone(
    client: TestClient, double: ModelDouble
) -> None:
    aid, ids = started(client, double)
    tobin = ask(client, aid, *QUESTION)
    state = section(tobin, "current_state")
    assert "Carrying: brass key (Tobin was not there), lantern" in state
    assert "Open quests: Find the heir (Tobin was not there)" in state
    marks = tobin["witness"]["state"]
    assert [(m["id"], m["name"], m["handling"]) for m in marks] == [
        (ids["key"], "brass key", "labelled"),
        (ids["quest"], "Find the heir", "labelled"),
    ]
    assert all(m["why"].startswith("absent at action ") for m in marks)

    maren = ask(client, aid, "say", "Maren, what do you make of the cache?")
    assert maren["witness"]["state"] == []
    plain = "Carrying: brass key, lantern"
    assert plain in section(maren, "current_state")
    # Narration that addresses no one: the narrator's state as it is.
    story = ask(client, aid, "story", "Tobin wonders about the cache.")
    assert story["witness"]["addressed"] is None and story["witness"]["state"] == []
    assert section(story, "current_state") == section(maren, "current_state")

    mode(client, aid, "strict")
    strict = ask(client, aid, *QUESTION)
    state = section(strict, "current_state")
    assert "Carrying: lantern" in state and "brass key" not in state and "heir" not in state
    assert [m["handling"] for m in strict["witness"]["state"]] == ["withheld", "withheld"]
    mode(client, aid, "off")
    off = ask(client, aid, *QUESTION)
    assert off["witness"]["state"] == [] and plain in section(off, "current_state")


def test_once_tobin_is_told_of_the_key_it_is_his_and_a_secret_event_is_not(
    client: TestClient, double: ModelDouble
) -> None:
    aid, ids = started(client, double)
    event(client, aid, kind="learned", subject="Tobin", value="the brass key")
    marks = {m["id"]: m for m in ask(client, aid, *QUESTION)["witness"]["state"]}
    assert list(marks) == [ids["quest"]]  # told of the key; the quest is still not his

    # A secret outweighs presence both ways: Tobin saw the lantern taken, is not in on it;
    # he missed the quest, is in on it.
    for name, who in (("lantern", ["Maren"]), ("quest", ["Tobin"])):
        marked = client.patch(f"/api/world/events/{ids[name]}", json={"known_by": who})
        assert marked.status_code == 200, marked.text
        assert marked.json()["known_by"] == who and marked.json()["id"] == ids[name]
    listed = {
        e["id"]: e["known_by"] for e in client.get(f"/api/adventures/{aid}/world/events").json()
    }
    assert (listed[ids["lantern"]], listed[ids["quest"]], listed[ids["key"]]) == (
        ["Maren"],
        ["Tobin"],
        None,
    )
    tobin = ask(client, aid, *QUESTION)
    assert [(m["id"], m["why"]) for m in tobin["witness"]["state"]] == [
        (ids["lantern"], "a secret: known only to Maren and you")
    ]
    assert "lantern (a secret Tobin was not told)" in section(tobin, "current_state")
    maren = ask(client, aid, "say", "Maren, what now?")["witness"]["state"]
    assert [(m["id"], m["why"]) for m in maren] == [
        (ids["quest"], "a secret: known only to Tobin and you")  # she saw it, is not in on it
    ]

    for name in ("lantern", "quest"):
        cleared = client.patch(f"/api/world/events/{ids[name]}", json={"known_by": None})
        assert cleared.status_code == 200 and cleared.json()["known_by"] is None
    assert [m["id"] for m in ask(client, aid, *QUESTION)["witness"]["state"]] == [ids["quest"]]
    event(client, aid, kind="learned", subject="Tobin", value="the heir")
    assert ask(client, aid, *QUESTION)["witness"]["state"] == []
    # The state itself never changes for a secret.
    assert [r["name"] for r in client.get(f"/api/adventures/{aid}/world").json()["inventory"]] == [
        "brass key",
        "lantern",
    ]


def test_a_secret_card_is_named_for_whoever_is_not_in_on_it_and_strict_leaves_it_out(
    client: TestClient, double: ModelDouble
) -> None:
    aid, _ = started(client, double)
    card = {"name": "The Smuggler's Cache", "keywords": ["cache"], "entry": "Under the well."}
    created = client.post(f"/api/adventures/{aid}/cards", json={**card, "known_by": ["Maren"]})
    assert created.status_code == 201, created.text
    cid = created.json()["id"]
    assert created.json()["known_by"] == ["Maren"]
    line = "The Smuggler's Cache (other): Under the well."

    tobin = ask(client, aid, *QUESTION)
    assert tobin["witness"]["cards"] == [
        {
            "id": cid,
            "name": "The Smuggler's Cache",
            "handling": "labelled",
            "why": "a secret: known only to Maren and you",
        }
    ]
    note = "(Tobin was not told what these Story Cards say: The Smuggler's Cache.)"
    assert note in section(tobin, "memories")
    assert line in cards_text(tobin)  # the section itself stays as it was
    maren = ask(client, aid, "say", "Maren, what do you make of the cache?")
    assert maren["witness"]["cards"] == [] and "Story Cards say" not in section(maren, "memories")
    story = ask(client, aid, "story", "Tobin wonders about the cache.")
    assert story["witness"]["cards"] == [] and line in cards_text(story)

    mode(client, aid, "strict")
    strict = ask(client, aid, *QUESTION)
    assert [c["handling"] for c in strict["witness"]["cards"]] == ["withheld"]
    assert line not in cards_text(strict)
    assert cid not in [c["id"] for c in strict["cards"]]

    cleared = client.patch(f"/api/cards/{cid}", json={"known_by": None})
    assert cleared.status_code == 200 and cleared.json()["known_by"] is None
    again = ask(client, aid, *QUESTION)
    assert again["witness"]["cards"] == [] and line in cards_text(again)
    # A change that does not name the secret leaves it as it was.
    client.patch(f"/api/cards/{cid}", json={"known_by": []})
    kept = client.patch(f"/api/cards/{cid}", json={"entry": "Under the old well."})
    assert kept.status_code == 200 and kept.json()["known_by"] == []


def test_a_bad_known_by_on_a_card_or_an_event_is_refused_and_changes_nothing(
    client: TestClient, double: ModelDouble
) -> None:
    aid, ids = started(client, double)
    card = client.post(f"/api/adventures/{aid}/cards", json={"name": "Cache"}).json()
    for bad in ("Maren", [1], ["  "], ["x" * 300], [f"N{i}" for i in range(21)], {"a": 1}):
        for response in (
            client.patch(f"/api/cards/{card['id']}", json={"known_by": bad, "entry": "changed"}),
            client.post(f"/api/adventures/{aid}/cards", json={"name": "Other", "known_by": bad}),
            client.patch(f"/api/world/events/{ids['key']}", json={"known_by": bad}),
            client.post(
                f"/api/adventures/{aid}/world/events",
                json={"kind": "took", "object": "rope", "known_by": bad},
            ),
        ):
            assert response.status_code == 400, response.text
            message = response.json()["error"]["message"]
            assert "known_by" in message or "name" in message, message
    cards = client.get(f"/api/adventures/{aid}/cards").json()
    assert [(c["name"], c["entry"], c["known_by"]) for c in cards if c["id"] == card["id"]] == [
        ("Cache", "", None)
    ]
    assert "Other" not in [c["name"] for c in cards]
    listed = client.get(f"/api/adventures/{aid}/world/events").json()
    assert all(e["known_by"] is None for e in listed)
    assert "rope" not in [e["object"] for e in listed]
    refused(client.patch("/api/world/events/999999", json={"known_by": ["Maren"]}), 404, "event")
    missing = client.patch(f"/api/world/events/{ids['key']}", json={})  # the key is required
    assert missing.status_code == 400, missing.text


def test_secret_cards_and_events_travel_in_an_export(
    client: TestClient, double: ModelDouble
) -> None:
    aid, ids = started(client, double)
    client.post(f"/api/adventures/{aid}/cards", json={"name": "Cache", "known_by": ["Maren"]})
    assert client.patch(f"/api/world/events/{ids['key']}", json={"known_by": []}).status_code == 200
    exported = client.get(f"/api/adventures/{aid}/export").json()
    # Written only for a secret: a file without one reads as before there were any.
    assert [c["known_by"] for c in exported["cards"] if "known_by" in c] == [["Maren"]]
    assert [e["known_by"] for e in exported["world_events"] if "known_by" in e] == [[]]
    imported = client.post("/api/adventures/import", json=exported)
    assert imported.status_code == 201, imported.text
    copy = imported.json()["id"]
    cards = client.get(f"/api/adventures/{copy}/cards").json()
    assert [c["known_by"] for c in cards if c["name"] == "Cache"] == [["Maren"]]
    events = client.get(f"/api/adventures/{copy}/world/events").json()
    assert [(e["object"], e["known_by"]) for e in events if e["known_by"] is not None] == [
        ("brass key", [])
    ]
    for entry in (*exported["cards"], *exported["world_events"]):
        entry["known_by"] = ["   "]
        bad = client.post("/api/adventures/import", json=exported)
        assert bad.status_code == 400, bad.text
        del entry["known_by"]
