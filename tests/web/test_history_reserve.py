"""The history's reserve through the app (docs/context.md, "The history's reserve"): in a
small context whose sections alone would fill it, the narrator still reads the newest
actions, and Insights says what was kept for them and which sections were cut."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from talekeeper_testkit.double import ModelDouble

LONG = "The harbour town keeps its old quarrels and its older debts, " * 40


@pytest.mark.parametrize("layout", ["cache", "classic"])
def test_a_small_context_keeps_the_newest_actions_ahead_of_the_sections(
    client: TestClient, double: ModelDouble, layout: str
) -> None:
    settings = {"context_tokens": 900, "reply_tokens": 100, "context_layout": layout}
    assert client.patch("/api/settings", json=settings).status_code == 200
    aid = client.post(
        "/api/adventures",
        json={
            "title": "Harbour",
            "opening": "Fog lies on the harbour.",
            "plot_essentials": LONG * 2,  # alone more than the context holds
        },
    ).json()["id"]
    card = {"type": "location", "name": "Harbour", "keywords": ["harbour"], "entry": LONG}
    assert client.post(f"/api/adventures/{aid}/cards", json=card).status_code == 201
    insights: dict[str, Any] = {}
    for n in range(3):
        double.script(f"The bell rings {n + 1} times over the harbour.")
        answer = client.post(
            f"/api/adventures/{aid}/actions", json={"type": "do", "text": f"listen {n}"}
        )
        assert answer.status_code == 200, answer.text
        insights = answer.json()["insights"]
    history = insights["history"]
    assert history["kept"] >= 2 and history["reserve"] > 0
    sections = {s["name"]: s for s in insights["sections"]}
    assert sections["history"]["tokens"] >= 1
    assert sections["plot_essentials"]["cut"]
    # The card alone is more than its budget (a fifth of the prompt): left out whole.
    assert not sections["story_cards"]["text"]
    assert sections["story_cards"]["reason"].startswith("1 left out for its budget of ")
    assert sections["story_cards"]["reason"].endswith(" tokens: Harbour")
    assert "tokens were kept for them ahead of the sections cut" in sections["history"]["reason"]
    chats = [
        r for r in double.requests if r.path == "/v1/chat/completions" and r.body.get("stream")
    ]
    prompt = "\n".join(m["content"] for m in chats[-1].body["messages"])
    assert "The bell rings 2 times over the harbour." in prompt  # the previous reply
