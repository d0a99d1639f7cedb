"""The ``cache`` layout through the real engine: each turn reads where the previous reply's
prompt put things from that reply's placement record (never from its Insights), so a long
game's prompts change at their end and the narrator evaluates little of each; the per-user
``context_layout`` setting brings back the ``classic`` order, which makes it evaluate
nearly all of every prompt."""

from __future__ import annotations

import statistics
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import text

from talekeeper.storage.db import session_scope
from talekeeper_testkit.double import ModelDouble

SCENE = (
    "Rain drums on the harbour wall while the fishing boats knock together at their "
    "moorings. A lantern gutters above the customs house door, and somewhere past the "
    "breakwater a bell rings three times and stops. The harbourmaster's dog growls at "
    "the dark water, and a cart rattles past the net sheds with its lamps unlit. Step {n}."
)


def play(client: TestClient, double: ModelDouble, aid: int, turns: int) -> list[dict[str, Any]]:
    out = []
    for n in range(turns):
        double.script(SCENE.format(n=n))
        answer = client.post(
            f"/api/adventures/{aid}/actions",
            json={"type": "do", "text": f"wait by the harbour {n}"},
        )
        assert answer.status_code == 200, answer.text
        out.append(answer.json()["insights"])
        # The background passes (memories, the Story Summary) done before the next turn, as
        # on a quiet machine: each run of the test sees the same story.
        client.portal.call(client.app.state.runtime.memory.idle)  # type: ignore[union-attr]
    return out


def share(insights: list[dict[str, Any]]) -> float:
    """The median share of the prompt the narrator evaluated, once the history is full."""
    first = next(n for n, i in enumerate(insights) if i["history"]["dropped"])
    full = insights[first:]
    assert len(full) >= 6, "the game must reach a full history"
    # Both counted by the app with the narrator's tokenizer (the double's own usage figure
    # for ``tokens.prompt`` counts differently).
    return statistics.median(
        i["tokens"]["prompt_evaluated"]
        / (i["tokens"]["prompt_evaluated"] + i["tokens"]["prompt_cached"])
        for i in full
    )


def test_a_long_game_evaluates_little_of_each_prompt_and_classic_evaluates_nearly_all(
    client: TestClient, double: ModelDouble
) -> None:
    settings = {"context_tokens": 1200, "reply_tokens": 100}
    assert client.patch("/api/settings", json=settings).status_code == 200
    aid = client.post(
        "/api/adventures",
        json={"title": "Harbour", "opening": "Fog lies on the harbour.", "authors_note": "Eerie."},
    ).json()["id"]
    note = {"authors_note": "Keep it eerie."}
    assert client.patch(f"/api/adventures/{aid}", json=note).status_code == 200
    card = {"type": "location", "name": "Harbour", "keywords": ["harbour"], "entry": "Wet stone."}
    assert client.post(f"/api/adventures/{aid}/cards", json=card).status_code == 201

    cached = play(client, double, aid, 16)
    for one in cached:
        assert one["layout"]["name"] == "cache"
        floating = one["layout"]["floating"]
        assert {"authors_note", "story_cards"} <= set(floating)
        # The cards head the history; the rest stay within 8 actions of its end.
        assert floating["story_cards"]["actions_before_end"] == one["history"]["kept"]
        assert all(
            0 <= spot["actions_before_end"] <= 8
            for name, spot in floating.items()
            if name != "story_cards"
        )
    # A turn whose history start and floating sections stayed put only appended.
    for before, after in zip(cached, cached[1:], strict=False):
        same_start = (
            before["layout"]["history_start_depth"] == after["layout"]["history_start_depth"]
        )
        kept = all(
            after["layout"]["floating"][name]["at_depth"] == spot["at_depth"]
            for name, spot in before["layout"]["floating"].items()
        )
        if same_start and kept:
            whole = before["tokens"]["prompt_cached"] + before["tokens"]["prompt_evaluated"]
            assert after["tokens"]["prompt_cached"] >= whole - 8
    cache_share = share(cached)
    assert cache_share <= 0.25

    assert client.patch("/api/settings", json={"context_layout": "classic"}).status_code == 200
    classic = play(client, double, aid, 8)
    assert {one["layout"]["name"] for one in classic} == {"classic"}
    assert all("floating" not in one["layout"] for one in classic)
    assert share(classic) >= 0.6 > cache_share
    # The classic order: the cards in the system message, above the history.
    chats = [  # the narrator's (streamed); the memory writer's are not
        r for r in double.requests if r.path == "/v1/chat/completions" and r.body.get("stream")
    ]
    system = chats[-1].body["messages"][0]["content"]
    assert "[World]\nHarbour (location): Wet stone." in system


def test_the_layout_setting_takes_only_its_values(client: TestClient) -> None:
    refused = client.patch("/api/settings", json={"context_layout": "sideways"})
    assert refused.status_code == 400
    message = refused.json()["error"]["message"]
    assert "TALEKEEPER_CONTEXT_LAYOUT" in message and "cache" in message and "classic" in message
    described = {s["key"]: s for s in client.get("/api/settings").json()["settings"]}
    assert described["context_layout"]["choices"] == ["cache", "classic"]


def test_cards_held_by_the_history_head_stay_until_it_moves_and_new_ones_go_last(
    client: TestClient, double: ModelDouble
) -> None:
    aid = client.post("/api/adventures", json={"title": "Lamps"}).json()["id"]
    for name, keyword in (("Lantern", "lantern"), ("Harbour", "harbour")):
        card = {"type": "lore", "name": name, "keywords": [keyword], "entry": f"The {keyword}."}
        assert client.post(f"/api/adventures/{aid}/cards", json=card).status_code == 201

    def turn(text: str) -> dict[str, Any]:
        double.script("The wind moves the reeds.")
        answer = client.post(f"/api/adventures/{aid}/actions", json={"type": "do", "text": text})
        assert answer.status_code == 200, answer.text
        insights: dict[str, Any] = answer.json()["insights"]
        return insights

    def cards(insights: dict[str, Any]) -> dict[str, str]:
        return {c["name"]: c["where"] for c in insights["cards"]}

    assert cards(turn("light the lantern")) == {"Lantern": "input"}
    for n in range(4):  # the keyword leaves the six actions that fire a card
        later = turn(f"walk on {n}")
    # Still held at the history's head (nothing was dropped), as fired earlier.
    assert cards(later) == {"Lantern": "earlier"}
    reason = next(s for s in later["sections"] if s["name"] == "story_cards")["reason"]
    assert reason == (
        "Lantern: fired earlier in the scene, kept while the history holds; "
        "8 actions before the end, heading the history"
    )
    newer = turn("look at the harbour")
    assert cards(newer) == {"Lantern": "earlier", "Harbour": "input"}
    new_section = next(s for s in newer["sections"] if s["name"] == "story_cards_new")
    assert new_section["text"] == "[World]\nHarbour (lore): The harbour."
    chats = [
        r for r in double.requests if r.path == "/v1/chat/completions" and r.body.get("stream")
    ]
    sent = chats[-1].body["messages"]
    assert sent[-1]["content"].endswith(
        "[World]\nHarbour (lore): The harbour.\n\n> You look at the harbour."
    )
    assert "Lantern (lore)" in sent[1]["content"]  # heading the history
    # The classic layout holds only what fires now.
    assert client.patch("/api/settings", json={"context_layout": "classic"}).status_code == 200
    assert cards(turn("walk on")) == {"Harbour": "story"}


def _lamps(client: TestClient, double: ModelDouble) -> tuple[int, Any]:
    """An adventure with a Lantern card, and a turn that sends ``text`` and answers its
    Insights."""
    aid = client.post("/api/adventures", json={"title": "Lamps"}).json()["id"]
    card = {"type": "lore", "name": "Lantern", "keywords": ["lantern"], "entry": "The lantern."}
    assert client.post(f"/api/adventures/{aid}/cards", json=card).status_code == 201

    def turn(text: str) -> dict[str, Any]:
        double.script("The wind moves the reeds.")
        answer = client.post(f"/api/adventures/{aid}/actions", json={"type": "do", "text": text})
        assert answer.status_code == 200, answer.text
        insights: dict[str, Any] = answer.json()["insights"]
        return insights

    return aid, turn


def _sql(client: TestClient, statement: str, action_id: int) -> int:
    sessions = client.app.state.runtime.sessions  # type: ignore[attr-defined]
    with session_scope(sessions) as session:
        return int(session.execute(text(statement), {"a": action_id}).rowcount)


def test_the_next_turn_keeps_its_placement_from_the_record_whatever_the_insights_say(
    client: TestClient, double: ModelDouble
) -> None:
    _, turn = _lamps(client, double)
    assert turn("light the lantern")["cards"][0]["where"] == "input"
    for n in range(4):  # the keyword leaves the six actions that fire a card
        later = turn(f"walk on {n}")
    assert [(c["name"], c["where"]) for c in later["cards"]] == [("Lantern", "earlier")]
    # The reply's Insights are gone (or were never readable): its record still says where
    # its prompt put things and which cards it held.
    assert _sql(client, "DELETE FROM insights WHERE action_id = :a", later["action_id"]) == 1
    kept = turn("walk on 4")
    assert [(c["name"], c["where"]) for c in kept["cards"]] == [("Lantern", "earlier")]
    assert kept["layout"]["history_start_depth"] == later["layout"]["history_start_depth"]
    spot = later["layout"]["floating"]["story_cards"]["at_depth"]
    assert kept["layout"]["floating"]["story_cards"]["at_depth"] == spot
    # Without the record nothing is known, though the Insights still show the placement:
    # the section holds only what fires now, and nothing is kept in place.
    removed = "DELETE FROM context_placements WHERE action_id = :a"
    assert _sql(client, removed, kept["action_id"]) == 1
    anew = turn("walk on 5")
    assert anew["cards"] == []
    assert "story_cards" not in anew["layout"]["floating"]


def test_only_a_reply_whose_prompt_had_a_placement_leaves_a_record(
    client: TestClient, double: ModelDouble
) -> None:
    _, turn = _lamps(client, double)
    cached = turn("light the lantern")
    count = "SELECT count(*) FROM context_placements WHERE action_id = :a"
    sessions = client.app.state.runtime.sessions  # type: ignore[attr-defined]

    def records(action_id: int) -> int:
        with session_scope(sessions) as session:
            return int(session.execute(text(count), {"a": action_id}).scalar_one())

    assert records(cached["action_id"]) == 1
    assert client.patch("/api/settings", json={"context_layout": "classic"}).status_code == 200
    classic = turn("walk on")
    assert classic["layout"] == {"name": "classic"}
    assert records(classic["action_id"]) == 0


def test_a_new_automatic_summary_waits_for_the_history_to_move_and_the_players_goes_in_at_once(
    client: TestClient, double: ModelDouble
) -> None:
    assert client.patch("/api/settings", json={"context_tokens": 1200}).status_code == 200
    aid = client.post("/api/adventures", json={"title": "Harbour"}).json()["id"]

    def summary(insights: dict[str, Any]) -> tuple[str, str]:
        section = next((s for s in insights["sections"] if s["name"] == "story_summary"), None)
        return (section["text"], section["reason"]) if section else ("", "")

    played, in_force = [], []
    for _ in range(4):  # a new automatic version every 15 actions
        played += play(client, double, aid, 8)
        in_force.append(client.get(f"/api/adventures/{aid}/summary").json()["text"])
    held = 0
    for before, after in zip(played, played[1:], strict=False):
        moved = before["layout"]["history_start_depth"] != after["layout"]["history_start_depth"]
        if summary(after)[0] != summary(before)[0]:
            assert moved, "the summary changed on a turn that only appended"
        if "the previous prompt had" in summary(after)[1]:
            held += 1
            assert not moved
    assert held, "a new version must have waited at least once"
    shown = {summary(i)[0].removeprefix("[Story Summary]\n") for i in played}
    assert set(in_force[:-1]) <= shown, "every version but the newest reached a prompt"

    mine = "Tamsin carries the Guild's last lamp-key."
    assert client.put(f"/api/adventures/{aid}/summary", json={"text": mine}).status_code == 200
    (now,) = play(client, double, aid, 1)
    assert summary(now) == (f"[Story Summary]\n{mine}", "the Story Summary in force on this path")
