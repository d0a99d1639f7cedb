"""Playing through the JSON API against the loopback model double."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.conftest import MODES, each_mode
from tests.web.sse import parse_events

from talekeeper_testkit.double import ModelDouble


@pytest.fixture(params=MODES)
def client(
    request: pytest.FixtureRequest, tmp_path: Path, double: ModelDouble
) -> Iterator[TestClient]:
    """Every test here runs in local mode and, signed in, in accounts mode."""
    yield from each_mode(request.param, tmp_path, double)


STREAM = {"Accept": "text/event-stream"}
# An adventure's answer, key for key and in order: what it is, then where the player stands.
ADVENTURE_KEYS = [
    "id",
    "title",
    "scenario",
    "created_at",
    "updated_at",
    "persona",
    "ai_instructions",
    "plot_essentials",
    "authors_note",
    "story_summary",
    "auto_summarize",
    "memory_bank",
    "witness_mode",
    "turn_order",
    "auto_accept_cards",
    "section_budgets",
    "scene",
    "current_branch_id",
    "head",
    "awaiting_reply",
    "can_redo",
    "branch_id",
    "length",
    "turns",
]


def create(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/api/adventures", json={"scenario": "lantern-coast", **body})
    assert response.status_code == 201, response.text
    return response.json()


def turn(client: TestClient, adventure: int, text: str, type_: str = "do") -> dict[str, Any]:
    response = client.post(
        f"/api/adventures/{adventure}/actions", json={"type": type_, "text": text}
    )
    assert response.status_code == 200, response.text
    return response.json()


def story(client: TestClient, adventure: int) -> list[str]:
    return [a["text"] for a in client.get(f"/api/adventures/{adventure}/actions").json()["actions"]]


def test_a_scenario_starts_with_its_opening_cards_and_persona(client: TestClient) -> None:
    scenarios = client.get("/api/scenarios").json()
    assert {s["id"] for s in scenarios} >= {"lantern-coast", "ashford-manor", "drift-station"}
    listed = next(s for s in scenarios if s["id"] == "lantern-coast")
    assert list(listed) == ["id", "title", "genre", "description", "persona", "cards"]
    shown = client.get("/api/scenarios/lantern-coast").json()
    assert listed["cards"] == len(shown["story_cards"]) and listed["persona"] == shown["persona"]
    adventure = create(client)
    assert list(adventure) == ADVENTURE_KEYS
    assert client.get(f"/api/adventures/{adventure['id']}").json() == adventure
    assert adventure["title"] == "The Lantern Coast"
    assert adventure["scenario"] == "lantern-coast" and adventure["length"] == 1
    assert (adventure["awaiting_reply"], adventure["can_redo"]) == (False, False)
    assert adventure["branch_id"] == adventure["current_branch_id"]
    scene = adventure["scene"]  # as the story cards of the opening describe it
    assert list(scene) == ["location", "present", "summary", "source"]
    assert (scene["present"], scene["source"]) == (["Old Maren"], "story cards")
    # The head carries its takes; whether it has Insights is told only on a page of the story.
    assert adventure["head"]["takes"] == 1 and "has_insights" not in adventure["head"]
    for moment in (adventure["created_at"], adventure["head"]["created_at"]):
        assert datetime.fromisoformat(moment).isoformat() == moment  # Python's form, never "Z"
    assert adventure["persona"]["name"] == "Tamsin Reed"
    assert adventure["head"]["type"] == "narration" and adventure["head"]["depth"] == 0
    assert adventure["head"]["text"].startswith("You reach Gullreach")
    cards = client.get(f"/api/adventures/{adventure['id']}/cards").json()
    names = [c["name"].casefold() for c in cards]
    assert len(names) == len(set(names)) and "old maren" in " ".join(names)
    assert client.get("/api/adventures").json()[0]["id"] == adventure["id"]


def test_a_turn_saves_the_action_and_the_reply_and_sends_a_budgeted_context(
    client: TestClient, double: ModelDouble
) -> None:
    adventure = create(client)["id"]
    double.script("Maren hands you the brine-oil and points at the tower.")
    body = turn(client, adventure, "ask Maren about the keepers")
    assert body["action"]["text"] == "ask Maren about the keepers"
    assert body["action"]["rendered"] == "> You ask Maren about the keepers."
    assert body["reply"]["text"] == "Maren hands you the brine-oil and points at the tower."
    assert body["reply"]["depth"] == body["action"]["depth"] + 1 == 2
    request = [r for r in double.requests if r.path == "/v1/chat/completions"][-1].body
    messages = request["messages"]
    assert messages[0]["role"] == "system"
    assert "Write in second person" in messages[0]["content"]  # AI Instructions
    assert "The player's character: Tamsin Reed (she/her)." in messages[0]["content"]
    # The ``cache`` layout: the cards float in the history; this one is short (the opening),
    # so they head it, in the first user message.
    assert "[World]" not in messages[0]["content"]
    head = messages[1]
    assert head["role"] == "user" and "[World]" in head["content"]
    assert "Old Maren" in head["content"]
    assert messages[-1] == {"role": "user", "content": "> You ask Maren about the keepers."}
    assert request["max_tokens"] == 200 and request["stream"] is True
    insights = client.get(f"/api/actions/{body['reply']['id']}/insights").json()
    sections = {s["name"]: s for s in insights["sections"]}
    assert sections["ai_instructions"]["tokens"] > 0 and sections["history"]["tokens"] > 0
    assert (
        sections["story_summary"]["tokens"] == 0
        and "no Story Summary" in sections["story_summary"]["reason"]
    )
    maren = next(c for c in insights["cards"] if c["name"] == "Old Maren")
    assert maren["where"] == "input" and maren["keyword"].casefold() == "maren"
    assert insights["model"] == "double-narrator" and insights["tokenizer"] == "cl100k_base"
    assert insights["budget"]["used"] <= insights["budget"]["available"]
    assert insights["action_id"] == body["reply"]["id"]


def test_a_reply_streams_as_server_sent_events(client: TestClient, double: ModelDouble) -> None:
    adventure = create(client)["id"]
    double.script("The singing stops. Somewhere a door slams.")
    with client.stream(
        "POST",
        f"/api/adventures/{adventure}/actions",
        json={"type": "say", "text": "hello?"},
        headers=STREAM,
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        events = parse_events(response.iter_lines())
    names = [name for name, _ in events]
    assert names[0] == "action" and names[-1] == "reply" and names.count("chunk") >= 3
    assert events[0][1]["action"]["rendered"] == '> You say "Hello?"'
    text = "".join(data["text"] for name, data in events if name == "chunk")
    assert text == "The singing stops. Somewhere a door slams."
    assert events[-1][1]["reply"]["text"] == text
    assert story(client, adventure)[-2:] == ["hello?", text]


def test_a_failing_model_leaves_the_action_saved_and_retry_writes_the_reply(
    client: TestClient, double: ModelDouble
) -> None:
    adventure = create(client)["id"]
    double.fail_next("500", model="double-narrator")
    failed = client.post(
        f"/api/adventures/{adventure}/actions", json={"type": "do", "text": "climb"}
    )
    assert failed.status_code == 502
    error = failed.json()["error"]
    assert error["action_saved"] is True and "Your action is saved" in error["message"]
    state = client.get(f"/api/adventures/{adventure}").json()
    assert state["awaiting_reply"] is True and state["head"]["text"] == "climb"
    double.script("You climb the steps.")
    retried = client.post(f"/api/adventures/{adventure}/retry")
    assert retried.status_code == 200
    assert retried.json()["reply"]["depth"] == state["head"]["depth"] + 1
    assert story(client, adventure)[-2:] == ["climb", "You climb the steps."]
    calls = client.get("/api/ai-calls", params={"kind": "narration"}).json()
    assert [c["status"] for c in calls] == ["ok", "error"]


def test_a_failure_mid_stream_says_the_action_is_saved(
    client: TestClient, double: ModelDouble
) -> None:
    adventure = create(client)["id"]
    double.script("One two three four five six seven eight.")
    double.fail_next("cut", model="double-narrator")
    with client.stream(
        "POST", f"/api/adventures/{adventure}/actions", json={"text": "wait"}, headers=STREAM
    ) as response:
        events = parse_events(response.iter_lines())
    assert events[-1][0] == "error"
    assert events[-1][1]["action_saved"] is True and events[-1][1]["retryable"] is True
    assert client.get(f"/api/adventures/{adventure}").json()["awaiting_reply"] is True


def test_retry_makes_takes_and_the_player_can_switch_between_them(
    client: TestClient, double: ModelDouble
) -> None:
    adventure = create(client)["id"]
    double.script("First take.", "Second take.", "Third take.")
    turn(client, adventure, "look")
    assert client.post(f"/api/adventures/{adventure}/retry").json()["reply"]["take"] == 2
    third = client.post(f"/api/adventures/{adventure}/retry").json()["reply"]
    assert (third["take"], third["takes"]) == (3, 3)
    takes = client.get(f"/api/adventures/{adventure}/takes").json()["takes"]
    assert [t["text"] for t in takes] == ["First take.", "Second take.", "Third take."]
    switched = client.post(f"/api/adventures/{adventure}/switch-take", json={"take": 1}).json()
    assert switched["head"]["text"] == "First take." and switched["head"]["takes"] == 3
    # The retry's context leaves out the reply being retried.
    retry_request = [r for r in double.requests if r.path == "/v1/chat/completions"][1].body
    assert "First take." not in str(retry_request["messages"])
    turn(client, adventure, "go on")  # now the takes above are history: only the newest switches
    refused = client.post(f"/api/adventures/{adventure}/switch-take", json={"take": 2})
    assert refused.status_code == 400 and "take must be one of 1" in refused.text
    client.post(f"/api/adventures/{adventure}/undo")  # the newest is the player's action now
    refused = client.post(f"/api/adventures/{adventure}/switch-take", json={"take": 1})
    assert refused.status_code == 409 and "newest narration" in refused.text


def test_continue_undo_redo_edit_delete(client: TestClient, double: ModelDouble) -> None:
    adventure = create(client)["id"]
    double.script("Waves.", "More waves.")
    body = turn(client, adventure, "", "continue")
    assert body["action"] is None and body["reply"]["text"] == "Waves."
    assert (
        client.post(
            f"/api/adventures/{adventure}/actions", json={"type": "continue", "text": "x"}
        ).status_code
        == 400
    )
    turn(client, adventure, "listen")
    undone = client.post(f"/api/adventures/{adventure}/undo").json()
    assert undone["undone"]["text"] == "More waves." and undone["can_redo"] is True
    assert client.post(f"/api/adventures/{adventure}/redo").json()["head"]["text"] == "More waves."
    edited = client.patch(f"/api/actions/{undone['undone']['id']}", json={"text": "Calm sea."})
    assert edited.json()["text"] == "Calm sea." and edited.json()["edited_at"]
    assert story(client, adventure)[-1] == "Calm sea."
    deleted = client.delete(f"/api/actions/{body['reply']['id']}").json()
    assert deleted["deleted"] == [body["reply"]["id"]]
    assert "Waves." not in story(client, adventure)


def test_fork_switch_branch_and_the_tree(client: TestClient, double: ModelDouble) -> None:
    adventure = create(client)["id"]
    first = turn(client, adventure, "go left")
    turn(client, adventure, "keep going")
    fork = client.post(f"/api/actions/{first['reply']['id']}/fork", json={"name": "Right"})
    assert fork.status_code == 201
    branch = fork.json()["branch"]
    assert fork.json()["head"]["id"] == first["reply"]["id"]
    turn(client, adventure, "go right instead")
    tree = client.get(f"/api/adventures/{adventure}/tree").json()
    assert tree["current_branch_id"] == branch["id"]
    assert [b["name"] for b in tree["branches"]] == ["Main", "Right"]
    assert tree["branches"][1]["forked_from_action_id"] == first["reply"]["id"]
    assert story(client, adventure)[-4:-1] == ["go left", "The story goes on.", "go right instead"]
    main = tree["branches"][0]["id"]
    client.post(f"/api/adventures/{adventure}/switch-branch", json={"branch_id": main})
    assert story(client, adventure)[-2:] == ["keep going", "The story goes on."]


def test_a_dry_run_shows_the_next_context_and_writes_nothing(
    client: TestClient, double: ModelDouble
) -> None:
    adventure = create(client)["id"]
    before_calls = len(double.requests)
    dry = client.post(
        f"/api/adventures/{adventure}/insights/dry-run",
        json={"type": "do", "text": "wave at Maren"},
    )
    assert dry.status_code == 200
    data = dry.json()
    assert data["dry_run"] is True
    assert (
        next(s for s in data["sections"] if s["name"] == "player_action")["text"]
        == "> You wave at Maren."
    )
    assert any(c["name"] == "Old Maren" for c in data["cards"])
    assert len(double.requests) == before_calls  # nothing generated
    assert len(story(client, adventure)) == 1  # nothing saved


def test_cards_crud_and_search(client: TestClient) -> None:
    adventure = create(client, title="Mine")["id"]
    made = client.post(
        f"/api/adventures/{adventure}/cards",
        json={
            "name": "Brass Key",
            "type": "item",
            "keywords": ["brass key", "key"],
            "entry": "Opens the lamp room.",
        },
    )
    assert made.status_code == 201
    card = made.json()
    assert client.get(f"/api/adventures/{adventure}/cards", params={"q": "lamp room"}).json() == [
        card
    ]
    patched = client.patch(f"/api/cards/{card['id']}", json={"keywords": ["brass key"]}).json()
    assert patched["keywords"] == ["brass key"] and patched["entry"] == "Opens the lamp room."
    deleted = client.delete(f"/api/cards/{card['id']}")
    assert (deleted.status_code, deleted.json()) == (200, {"deleted": card["id"]})
    assert client.get(f"/api/adventures/{adventure}/cards", params={"q": "brass"}).json() == []


def test_update_and_delete_an_adventure(client: TestClient) -> None:
    adventure = create(client)["id"]
    updated = client.patch(
        f"/api/adventures/{adventure}",
        json={"authors_note": "Keep it short.", "memory_bank": False, "persona": {"name": "Wren"}},
    ).json()
    assert updated["authors_note"] == "Keep it short." and updated["memory_bank"] is False
    assert updated["persona"] == {
        "name": "Wren",
        "pronouns": "she/her",
        "description": updated["persona"]["description"],
    }
    assert list(updated) == ADVENTURE_KEYS
    deleted = client.delete(f"/api/adventures/{adventure}")
    assert (deleted.status_code, deleted.json()) == (200, {"deleted": adventure})
    assert client.get(f"/api/adventures/{adventure}").status_code == 404


def test_every_section_in_insights_says_why_it_is_there(
    client: TestClient, double: ModelDouble
) -> None:
    adventure = create(client)["id"]
    reply = turn(client, adventure, "ask Maren about the lantern")["reply"]
    sections = client.get(f"/api/actions/{reply['id']}/insights").json()["sections"]
    assert [s["name"] for s in sections] == [
        "ai_instructions",
        "plot_essentials",
        "story_summary",
        "current_state",
        "memories",
        "story_cards",
        "knowledge",
        "story_cards_new",  # the ``cache`` layout's
        "history",
        "authors_note",
        "player_action",
    ]
    assert all(s["reason"] for s in sections), [s["name"] for s in sections if not s["reason"]]
    note = next(s for s in sections if s["name"] == "authors_note")
    # The ``cache`` layout: heading the short history (the opening), one action back.
    assert note["tokens"] > 0
    assert (
        note["reason"]
        == "the adventure's Author's Note; 1 action before the end, heading the history"
    )
