"""Insights shows how much of the prompt the narrator had to evaluate, beside its size, and
the context layout in use with where its floating sections went."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect
from tests.browser.conftest import Live
from tests.kit.browser import open_insights


def test_a_reply_shows_what_its_prompt_kept_and_what_was_evaluated(live: Live, page: Any) -> None:
    aid = live.adventure()["id"]
    live.api.patch(f"/api/adventures/{aid}", json={"authors_note": "Keep it short."})
    replies = []
    for text in ("I light the lamp", "I trim the wick"):
        live.double.script(f"You {text[2:]}; the flame steadies.")
        answer = live.api.post(f"/api/adventures/{aid}/actions", json={"type": "do", "text": text})
        assert answer.status_code == 200, answer.text
        replies.append(answer.json())
    tokens = replies[1]["insights"]["tokens"]
    assert tokens["prompt_cached"] > 0
    page.goto(f"{live.url}/adventures/{aid}")
    dialog = open_insights(page, {"actionId": replies[1]["reply"]["id"]})
    row = dialog.locator("tr", has_text="Prompt evaluated")
    expect(row.locator("td")).to_have_text(
        f"{tokens['prompt_evaluated']:,} ({tokens['prompt_cached']:,} kept from the previous "
        "prompt; evaluated, counted here)"
    )
    layout = dialog.locator("tr", has_text="Context layout").locator("td")
    # The Author's Note and the scenario's cards head the short history (the opening and
    # the first turn), and stayed there.
    floating = replies[1]["insights"]["layout"]["floating"]
    assert {spot["actions_before_end"] for spot in floating.values()} == {3}
    assert {"authors_note", "story_cards"} <= set(floating)
    expect(layout).to_have_text(
        "cache (changes at its end, so the model's cache keeps the rest): Author's Note 3 back, "
        "Story Cards 3 back"
    )
