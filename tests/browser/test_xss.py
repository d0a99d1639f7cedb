"""Model output and player text are shown as text on the play page: markup in a streamed
reply, in a player's action or in an edit shows its characters and runs nothing."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect
from tests.browser.conftest import Live

PAYLOAD = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
REPLY = f"The letter reads: {PAYLOAD}"


def assert_inert(page: Any) -> None:
    assert page.evaluate("window.__pwned") is None
    assert page.locator("#story img, #story script").count() == 0


def test_a_reply_and_an_action_holding_markup_are_shown_as_text(live: Live, page: Any) -> None:
    adventure = live.adventure()
    aid = adventure["id"]
    live.double.script(REPLY)
    live.double.chunk_delay = 0.05  # the markup arrives in pieces, as a real stream would
    page.goto(f"{live.url}/adventures/{aid}")
    expect(page.locator("#story .entry")).to_have_count(1)
    page.get_by_role("button", name="Story", exact=True).click()
    box = page.get_by_label("Your action")
    box.fill(PAYLOAD)
    box.press("Enter")
    expect(page.locator("#story .entry.streaming")).to_have_count(1)
    expect(page.locator("#story .entry.streaming")).to_have_count(0)
    expect(page.locator("#story .entry-story .entry-text")).to_have_text(PAYLOAD)
    expect(page.locator("#story .entry-narration .entry-text").last).to_have_text(REPLY)
    assert_inert(page)
    page.reload()  # and once more from the stored story
    expect(page.locator("#story .entry-narration .entry-text").last).to_have_text(REPLY)
    expect(page.locator("#story .entry-story .entry-text")).to_have_text(PAYLOAD)
    assert_inert(page)
    stored = live.api.get(f"/api/adventures/{aid}/actions").json()["actions"]
    assert [a["text"] for a in stored[1:]] == [PAYLOAD, REPLY]


def test_an_edit_to_markup_is_shown_as_text(live: Live, page: Any) -> None:
    adventure = live.adventure()
    aid = adventure["id"]
    live.double.script("A quiet reply.")
    turn = live.turn(aid, "I read the letter")
    page.goto(f"{live.url}/adventures/{aid}")
    entry = page.locator(f'#story .entry[data-id="{turn["reply"]["id"]}"]')
    entry.get_by_role("button", name="Edit").click()
    entry.get_by_label("Text of this action").fill(PAYLOAD)
    entry.get_by_role("button", name="Save").click()
    expect(entry.locator(".entry-text")).to_have_text(PAYLOAD)
    assert_inert(page)
    stored = live.api.get(f"/api/adventures/{aid}").json()["head"]
    assert stored["text"] == PAYLOAD
    # a say renders the markup inside the engine's quotes, still as text
    page.get_by_role("button", name="Say", exact=True).click()
    box = page.get_by_label("Your action")
    box.fill(PAYLOAD)
    box.press("Enter")
    expect(page.locator("#story .entry-say .entry-text")).to_have_text(f'> You say "{PAYLOAD}."')
    assert_inert(page)
