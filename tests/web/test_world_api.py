"""The world's JSON API (docs/world.md): the player's events, the state they project at the
head and at an earlier action, and why that state stays true through undo, retry, fork
and switching branches; every refusal is a 4xx that says what to fix; another player's
adventure and events are not found.

Real parts: the app on a migrated database (SQLite, or PostgreSQL with
``--db=postgresql``), turns against the loopback model double.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.conftest import MODES, each_mode
from tests.kit.accounts import As
from tests.kit.memory import refused
from tests.kit.world_api import event, turn

from talekeeper_testkit.double import ModelDouble

WORLD_KEYS = [
    "at_action",
    "location",
    "present",
    "inventory",
    "time",
    "quests",
    "entities",
    "lead",
    "players",
]
EVENT_KEYS = [
    "id",
    "action_id",
    "kind",
    "subject",
    "object",
    "value",
    "origin",
    "evidence",
    "known_by",
]


@pytest.fixture(params=MODES)
def client(
    request: pytest.FixtureRequest, tmp_path: Path, double: ModelDouble
) -> Iterator[TestClient]:
    """Every test here runs in local mode and, signed in, in accounts mode."""
    yield from each_mode(request.param, tmp_path, double)


def adventure(client: TestClient) -> int:
    response = client.post("/api/adventures", json={"scenario": "lantern-coast"})
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def world(client: TestClient, aid: int, at: int | None = None) -> dict[str, Any]:
    suffix = f"?at={at}" if at is not None else ""
    response = client.get(f"/api/adventures/{aid}/world{suffix}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def names(refs: list[dict[str, Any]]) -> list[str]:
    return [r["name"] for r in refs]


def test_player_events_make_the_state_and_list_as_the_paths_events(client: TestClient) -> None:
    aid = adventure(client)
    opening = world(client, aid)  # "You reach Gullreach at dusk ...": the rules read it
    assert list(opening) == WORLD_KEYS
    assert (opening["lead"], opening["players"]) == (None, [])  # one player
    assert (opening["location"]["name"], opening["time"], opening["inventory"]) == (
        "Gullreach",
        {"text": "at dusk"},
        [],
    )
    derived = client.get(f"/api/adventures/{aid}/world/events").json()
    assert [(e["kind"], e["origin"]) for e in derived] == [("moved", "rules"), ("time", "rules")]
    assert derived[0]["evidence"].startswith("You reach Gullreach at dusk")
    moved = event(client, aid, kind="moved", object="gullreach")
    assert list(moved) == EVENT_KEYS
    assert (moved["kind"], moved["subject"], moved["object"], moved["origin"]) == (
        "moved",
        None,  # the player's own character
        "Gullreach",  # the place the opening named, matched by its key
        "player",
    )
    event(client, aid, kind="arrived", subject="Maren")
    event(client, aid, kind="took", object="The Brass Key")
    event(client, aid, kind="took", object="a lantern")
    gave = event(client, aid, kind="gave", object="A Lantern", value="Maren")
    assert (gave["object"], gave["value"]) == ("a lantern", "Maren")  # one item, one name
    event(client, aid, kind="time", value="dusk")
    event(client, aid, kind="quest", object="The Drowned Bell", value="opened")
    state = world(client, aid)
    assert state["location"] == opening["location"]  # "gullreach" is the same place
    assert names(state["present"]) == ["Maren"]
    assert names(state["inventory"]) == ["The Brass Key"]
    assert state["time"] == {"text": "dusk"}
    assert state["quests"] == [{"name": "The Drowned Bell", "state": "opened"}]
    kinds = {e["name"]: e["kind"] for e in state["entities"]}
    assert kinds == {
        "Gullreach": "place",
        "Maren": "person",
        "The Brass Key": "item",
        "a lantern": "item",
    }
    place = next(e for e in state["entities"] if e["name"] == "Gullreach")
    assert place["card_id"] is not None  # the scenario's card "Gullreach"
    maren = next(e for e in state["entities"] if e["name"] == "Maren")
    assert maren["card_id"] is None  # the card is "Old Maren": another name
    assert maren["status"] is None and maren["aliases"] == []
    card = client.post(f"/api/adventures/{aid}/cards", json={"name": "Maren", "type": "character"})
    assert card.status_code == 201, card.text
    linked = next(e for e in world(client, aid)["entities"] if e["name"] == "Maren")
    assert linked["card_id"] == card.json()["id"]  # a card made later is found by its name
    listed = client.get(f"/api/adventures/{aid}/world/events").json()
    assert [e["kind"] for e in listed] == [
        "moved",
        "time",
        "moved",
        "arrived",
        "took",
        "took",
        "gave",
        "time",
        "quest",
    ]
    dead = event(client, aid, kind="status", subject="maren", value="dead")
    assert dead["subject"] == "Maren"
    gone = world(client, aid)
    assert gone["present"] == []
    assert next(e for e in gone["entities"] if e["name"] == "Maren")["status"] == "dead"


def test_undo_takes_an_actions_events_with_it_and_a_fork_keeps_its_own(
    client: TestClient, double: ModelDouble
) -> None:
    aid = adventure(client)
    first = turn(client, aid, "walk to the harbour")["reply"]["id"]
    event(client, aid, kind="took", object="the brass key")  # on the first reply
    turn(client, aid, "walk on")
    event(client, aid, kind="took", object="a rope")  # on the second reply
    assert names(world(client, aid)["inventory"]) == ["the brass key", "a rope"]
    assert names(world(client, aid, at=first)["inventory"]) == ["the brass key"]

    assert client.post(f"/api/adventures/{aid}/undo").status_code == 200
    assert names(world(client, aid)["inventory"]) == ["the brass key"]  # the rope's reply went
    assert client.post(f"/api/adventures/{aid}/redo").status_code == 200
    assert names(world(client, aid)["inventory"]) == ["the brass key", "a rope"]

    fork = client.post(f"/api/actions/{first}/fork", json={"name": "Other"})
    assert fork.status_code == 201, fork.text
    assert names(world(client, aid)["inventory"]) == ["the brass key"]
    event(client, aid, kind="dropped", object="The Brass Key")
    assert world(client, aid)["inventory"] == []
    main = next(b["id"] for b in client.get(f"/api/adventures/{aid}/tree").json()["branches"])
    client.post(f"/api/adventures/{aid}/switch-branch", json={"branch_id": main})
    assert names(world(client, aid)["inventory"]) == ["the brass key", "a rope"]


def test_a_retry_makes_a_new_take_without_the_old_takes_events(
    client: TestClient, double: ModelDouble
) -> None:
    aid = adventure(client)
    turn(client, aid, "search the wreck")
    event(client, aid, kind="took", object="a silver coin")
    retried = client.post(f"/api/adventures/{aid}/retry")
    assert retried.status_code == 200, retried.text
    assert world(client, aid)["inventory"] == []
    kinds = [e["kind"] for e in client.get(f"/api/adventures/{aid}/world/events").json()]
    assert kinds == ["moved", "time"]  # the opening's alone


def test_removing_a_player_event_takes_it_out(client: TestClient) -> None:
    aid = adventure(client)
    kept = event(client, aid, kind="took", object="a map")
    dropped = event(client, aid, kind="took", object="a knife")
    assert client.delete(f"/api/world/events/{dropped['id']}").status_code == 204
    assert names(world(client, aid)["inventory"]) == ["a map"]
    listed = client.get(f"/api/adventures/{aid}/world/events").json()
    assert [e["id"] for e in listed if e["origin"] == "player"] == [kept["id"]]
    refused(client.delete(f"/api/world/events/{dropped['id']}"), 404, "no world event")


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"kind": "flew"}, 400, ("kind", "moved", "learned")),
        ({"kind": "moved"}, 400, ("needs its object",)),
        ({"kind": "arrived", "object": "the Harbour"}, 400, ("needs its subject",)),
        ({"kind": "time"}, 400, ("needs a value",)),
        ({"kind": "time", "subject": "Maren", "value": "dusk"}, 400, ("no subject",)),
        ({"kind": "gave", "object": "a lamp"}, 400, ("who receives",)),
        ({"kind": "quest", "object": "Bell", "value": "won"}, 400, ("opened", "won")),
        ({"kind": "took", "object": "\x00\x1b "}, 400, ("letter or digit",)),
        ({"kind": "took", "object": "k" * 121}, 400, ("at most 120",)),
        ({"kind": "status", "subject": "Maren", "value": "v" * 301}, 400, ("at most 300",)),
        ({"kind": "took", "object": "a map", "extra": 1}, 400, ("extra",)),
    ],
)
def test_a_bad_event_is_refused_and_writes_nothing(
    client: TestClient, body: dict[str, Any], status: int, words: tuple[str, ...]
) -> None:
    aid = adventure(client)
    response = client.post(f"/api/adventures/{aid}/world/events", json=body)
    assert response.status_code == status, response.text
    refused(response, status, *words)
    listed = client.get(f"/api/adventures/{aid}/world/events").json()
    assert [e for e in listed if e["origin"] == "player"] == []


def test_the_state_is_asked_for_at_an_action_of_the_current_path_only(
    client: TestClient, double: ModelDouble
) -> None:
    aid = adventure(client)
    first = turn(client, aid, "go left")["reply"]["id"]
    turn(client, aid, "keep going")
    other = turn(client, aid, "and on")["reply"]["id"]
    client.post(f"/api/actions/{first}/fork", json={"name": "Right"})
    refused(client.get(f"/api/adventures/{aid}/world?at={other}"), 400, "not on the current path")
    refused(client.get(f"/api/adventures/{aid}/world?at=999999"), 404)
    refused(client.get(f"/api/adventures/{aid}/world?at=0"), 400, "at")
    assert world(client, aid, at=first)["at_action"] == first


def test_another_players_world_is_not_found(accounts: TestClient) -> None:
    mara, tal = As(accounts, "mara"), As(accounts, "tal")
    made = mara.post("/api/adventures", json={"scenario": "lantern-coast"})
    aid = made.json()["id"]
    taken = mara.post(
        f"/api/adventures/{aid}/world/events", json={"kind": "took", "object": "a map"}
    )
    assert taken.status_code == 201, taken.text
    assert tal.get(f"/api/adventures/{aid}/world").status_code == 404
    assert tal.get(f"/api/adventures/{aid}/world/events").status_code == 404
    answer = tal.post(f"/api/adventures/{aid}/world/events", json={"kind": "took", "object": "x"})
    assert answer.status_code == 404
    assert tal.request("DELETE", f"/api/world/events/{taken.json()['id']}").status_code == 404
    listed = mara.get(f"/api/adventures/{aid}/world/events").json()
    assert [e["origin"] for e in listed] == ["rules", "rules", "player"]


def test_a_turn_states_the_world_and_undo_or_an_edit_takes_it_back(
    client: TestClient, double: ModelDouble
) -> None:
    aid = adventure(client)
    double.script("You turn the key over in your hands. Captain Rhys arrives, dripping.")
    picked = turn(client, aid, "pick up the brass key")
    state = world(client, aid)
    assert names(state["inventory"]) == ["the brass key"]
    assert names(state["present"]) == ["Captain Rhys"]
    by_action = {
        e["kind"]: e["action_id"]
        for e in client.get(f"/api/adventures/{aid}/world/events").json()
        if e["origin"] == "rules"
    }
    assert by_action["took"] == picked["action"]["id"]  # on the action that says it
    assert by_action["arrived"] == picked["reply"]["id"]

    edited = client.patch(
        f"/api/actions/{picked['action']['id']}", json={"text": "pick up the iron key"}
    )
    assert edited.status_code == 200, edited.text
    assert names(world(client, aid)["inventory"]) == ["the iron key"]

    assert client.post(f"/api/adventures/{aid}/undo").status_code == 200  # the reply
    assert names(world(client, aid)["present"]) == []
    assert client.post(f"/api/adventures/{aid}/undo").status_code == 200  # the action
    assert world(client, aid)["inventory"] == []


def test_a_players_correction_survives_later_turns_that_do_not_contradict_it(
    client: TestClient, double: ModelDouble
) -> None:
    aid = adventure(client)
    turn(client, aid, "pick up the brass key")
    event(client, aid, kind="dropped", object="the brass key")  # "I never took it"
    for n in range(50):
        double.script(f"The tide turns for the {n + 1}th time. Gulls cry over the harbour.")
        turn(client, aid, f"watch the sea ({n + 1})")
    assert world(client, aid)["inventory"] == []
    double.script("You pick up the brass key again.")
    turn(client, aid, "look down")
    assert names(world(client, aid)["inventory"]) == ["the brass key"]  # said outright


def state_lines(prompt: str) -> list[str]:
    """The Current state section's lines in a prompt."""
    lines = prompt[prompt.index("[Current state]") :].splitlines()[1:]
    keys = ("Location: ", "Present: ", "Carrying: ", "Time: ", "Open quests: ")
    taken = []
    for line in lines:
        if not line.startswith(keys):
            break
        taken.append(line)
    return taken


def narrator_prompt(double: ModelDouble) -> str:
    """The text of the last prompt the narrator was sent."""
    body = [r for r in double.requests if r.path == "/v1/chat/completions"][-1].body
    assert isinstance(body, dict)
    return "\n".join(str(m["content"]) for m in body["messages"])


def test_the_narrator_is_told_the_current_state_and_a_retry_not_its_old_takes(
    client: TestClient, double: ModelDouble
) -> None:
    aid = adventure(client)
    double.script("You pick up the brass key. Old Maren arrives.", "The wind drops.")
    turn(client, aid, "search the quay")
    turn(client, aid, "wait")
    assert state_lines(narrator_prompt(double)) == [
        "Location: Gullreach",
        "Present: Old Maren",
        "Carrying: the brass key",
        "Time: at dusk",
    ]
    # Retry the first reply's slot: that take's key and Maren are not the retry's to see.
    assert client.post(f"/api/adventures/{aid}/undo").status_code == 200
    assert client.post(f"/api/adventures/{aid}/undo").status_code == 200
    double.script("The quay is empty.")
    assert client.post(f"/api/adventures/{aid}/retry").status_code == 200
    assert state_lines(narrator_prompt(double)) == ["Location: Gullreach", "Time: at dusk"]
    assert world(client, aid)["inventory"] == []  # the new take says nothing of a key


def test_the_scene_follows_the_world_unless_the_player_set_it(
    client: TestClient, double: ModelDouble
) -> None:
    aid = adventure(client)
    double.script("You walk into the Salt Market. Captain Rhys arrives.")
    turn(client, aid, "go on")
    scene = client.get(f"/api/adventures/{aid}/scene").json()
    assert (scene["location"], scene["present"]) == ("the Salt Market", ["Captain Rhys"])
    assert client.get(f"/api/adventures/{aid}").json()["scene"]["location"] == "the Salt Market"
    mine = client.put(f"/api/adventures/{aid}/scene", json={"location": "the lighthouse"})
    assert mine.status_code == 200 and mine.json()["location"] == "the lighthouse"
    cleared = client.put(f"/api/adventures/{aid}/scene", json={"clear": True}).json()
    assert cleared["location"] == "the Salt Market"


def test_insights_show_the_state_the_turn_read_and_what_changed_since_the_last_reply(
    client: TestClient, double: ModelDouble
) -> None:
    aid = adventure(client)
    double.script("The gulls cry.", "The wind drops.")
    turn(client, aid, "look around")
    event(client, aid, kind="took", object="a lantern")  # on the first reply
    second = turn(client, aid, "pick up the brass key")
    insights = client.get(f"/api/actions/{second['reply']['id']}/insights").json()
    state = insights["state"]
    assert (state["location"], state["inventory"], state["time"]) == (
        "Gullreach",
        ["a lantern", "the brass key"],
        "at dusk",
    )
    # Since the previous turn read the world: the player's event on its reply, and the
    # action's own event.
    assert [(c["kind"], c["object"], c["origin"]) for c in state["changed"]] == [
        ("took", "a lantern", "player"),
        ("took", "the brass key", "rules"),
    ]
    assert state["changed"][1]["action_id"] == second["action"]["id"]
    section = next(s for s in insights["sections"] if s["name"] == "current_state")
    assert "Carrying: a lantern, the brass key" in section["text"]


def test_a_time_that_would_run_backward_is_kept_and_shown_but_not_applied(
    client: TestClient, double: ModelDouble
) -> None:
    aid = adventure(client)
    event(client, aid, kind="time", value="day 5, morning")
    backward = event(client, aid, kind="time", value="day 2")
    assert world(client, aid)["time"] == {"text": "day 5, morning"}
    reply = turn(client, aid, "wait")["reply"]["id"]
    state = client.get(f"/api/actions/{reply}/insights").json()["state"]
    assert state["time"] == "day 5, morning" and state["ignored"] == [backward["id"]]
    listed = client.get(f"/api/adventures/{aid}/world/events").json()
    assert backward["id"] in [e["id"] for e in listed]  # kept as evidence


def test_a_derived_event_that_changes_what_the_player_set_is_named_in_insights(
    client: TestClient, double: ModelDouble
) -> None:
    aid = adventure(client)
    double.script("The fog lifts.", "You walk into the Salt Market.", "Gulls cry.")
    turn(client, aid, "wait")
    mine = event(client, aid, kind="moved", object="the cellar")  # "I am in the cellar"
    turn(client, aid, "go on")
    assert world(client, aid)["location"]["name"] == "the Salt Market"  # said outright
    # The next turn's Insights: what changed since the previous reply names the event.
    reply = turn(client, aid, "look")["reply"]["id"]
    changed = client.get(f"/api/actions/{reply}/insights").json()["state"]["changed"]
    moved = [c for c in changed if c["kind"] == "moved"]
    assert [(c["object"], c["overrides"], c["kept"]) for c in moved] == [
        ("the Salt Market", mine["id"], None)
    ]


def test_an_edit_never_makes_its_own_action_undo_the_players_event_on_it(
    client: TestClient, double: ModelDouble
) -> None:
    aid = adventure(client)
    double.script("The gulls cry.", "The wind drops.")
    reply = turn(client, aid, "look around")["reply"]
    event(client, aid, kind="took", object="the brass key")  # on that reply
    edited = client.patch(
        f"/api/actions/{reply['id']}", json={"text": "The gulls cry. You drop the brass key."}
    )
    assert edited.status_code == 200, edited.text
    assert names(world(client, aid)["inventory"]) == ["the brass key"]
    dropped = [e for e in client.get(f"/api/adventures/{aid}/world/events").json()
               if e["kind"] == "dropped"]  # fmt: skip
    assert [e["origin"] for e in dropped] == ["rules"]  # kept as evidence, listed
    second = turn(client, aid, "wait")["reply"]["id"]
    state = client.get(f"/api/actions/{second}/insights").json()["state"]
    assert dropped[0]["id"] in state["ignored"]


def test_a_name_told_shorter_is_the_same_thing_and_an_unclear_one_is_refused(
    client: TestClient, double: ModelDouble
) -> None:
    aid = adventure(client)
    double.script("You pick up the brass key.", "You drop the key.", "You take the iron key.")
    turn(client, aid, "look around")
    assert names(world(client, aid)["inventory"]) == ["the brass key"]
    turn(client, aid, "wait")  # "the key": the brass key, the one key there is
    state = world(client, aid)
    assert state["inventory"] == []
    key = next(e for e in state["entities"] if e["name"] == "the brass key")
    assert key["aliases"] == ["the key"]
    turn(client, aid, "wait")
    assert names(world(client, aid)["inventory"]) == ["the iron key"]
    # Two keys now: "the key" could be either, and the player is asked to say which.
    before = client.get(f"/api/adventures/{aid}/world/events").json()
    refused = client.post(
        f"/api/adventures/{aid}/world/events", json={"kind": "dropped", "object": "the key"}
    )
    assert refused.status_code == 400
    message = refused.json()["error"]["message"]
    assert "the brass key" in message and "the iron key" in message, message
    assert client.get(f"/api/adventures/{aid}/world/events").json() == before


def test_the_players_my_and_the_narrators_your_name_one_item(
    client: TestClient, double: ModelDouble
) -> None:
    """The player's "my rope" reads "your rope" in the story, and a thing is named without
    whose it is: picked up as the player's, dropped as the narrator's, it is one rope."""
    aid = adventure(client)
    double.script("You coil the rope over your shoulder.", "Tobin hands you his knife.")
    picked = turn(client, aid, "grab my rope")
    assert picked["action"]["rendered"] == "> You grab your rope."
    assert names(world(client, aid)["inventory"]) == ["the rope"]
    turn(client, aid, "look at Tobin")
    assert names(world(client, aid)["inventory"]) == ["the rope", "the knife"]
    double.script("The rope slaps onto the deck.")
    turn(client, aid, "drop my rope")
    state = world(client, aid)
    assert names(state["inventory"]) == ["the knife"]
    assert [e["name"] for e in state["entities"] if e["kind"] == "item"] == [
        "the rope",
        "the knife",
    ]


def test_a_reply_that_refuses_the_players_attempt_keeps_the_world_as_it_was(
    client: TestClient, double: ModelDouble
) -> None:
    aid = adventure(client)
    double.script("The rope is nailed to the deck; it will not come free.", "Gulls cry.")
    first = turn(client, aid, "take the rope")
    assert world(client, aid)["inventory"] == []
    refused = [e for e in client.get(f"/api/adventures/{aid}/world/events").json()
               if e["value"] == "refused"]  # fmt: skip
    assert [(e["kind"], e["object"], e["action_id"]) for e in refused] == [
        ("took", "the rope", first["reply"]["id"])
    ]
    # A retry whose take does not refuse it: the rope is taken after all.
    double.script("You take the rope.")
    assert client.post(f"/api/adventures/{aid}/retry").status_code == 200
    assert names(world(client, aid)["inventory"]) == ["the rope"]
