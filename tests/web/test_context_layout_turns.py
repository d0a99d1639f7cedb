"""The ``cache`` layout through the real engine: each turn reads where the previous reply's
prompt put things from that reply's Insights, so a long game's prompts change at their end
and the narrator evaluates little of each; the per-user ``context_layout`` setting brings
back the ``classic`` order, which makes it evaluate nearly all of every prompt."""

from __future__ import annotations

import statistics
from typing import Any

from fastapi.testclient import TestClient

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
