"""Secrets beyond the Memory Bank in the browser (docs/world.md, "Who knows what"): a story
card and a world event are made secrets of the characters named in the panel, shown with
the memory's badge and cleared again, and the Insights dialog's "Who knows what" lists the
secret card and the Current state entry a character the input addresses did not know.

What the page shows is compared with what the JSON API stores and answers.
"""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect
from tests.browser.conftest import Live
from tests.kit.browser import open_insights, open_tab

NAMES = "Known only by (names, separated by commas)"
# Markup in a name: shown as text, never run or drawn (test_xss.py's rule).
CACHE = "The Smuggler's <b>Cache</b>"
CARD = {"name": CACHE, "type": "location", "keywords": ["key"], "entry": "Under the piling."}


def harbour(live: Live) -> int:
    """An adventure of its own (no scenario: no cards or events but the test's)."""
    adventure_id: int = live.adventure(title="Harbour", opening="Fog lies on the harbour.")["id"]
    return adventure_id


def add_card(live: Live, adventure_id: int) -> dict[str, Any]:
    made = live.api.post(f"/api/adventures/{adventure_id}/cards", json=CARD)
    assert made.status_code == 201, made.text
    card: dict[str, Any] = made.json()
    assert card["known_by"] is None
    return card


def stored_card(live: Live, adventure_id: int, card_id: int) -> dict[str, Any]:
    cards = live.api.get(f"/api/adventures/{adventure_id}/cards").json()
    found: dict[str, Any] = next(c for c in cards if c["id"] == card_id)
    return found


def stored_event(live: Live, adventure_id: int, event_id: int) -> dict[str, Any]:
    events = live.api.get(f"/api/adventures/{adventure_id}/world/events").json()
    found: dict[str, Any] = next(e for e in events if e["id"] == event_id)
    return found


def test_a_card_is_marked_a_secret_and_back_in_the_cards_panel(live: Live, page: Any) -> None:
    aid = harbour(live)
    card = add_card(live, aid)
    panel = open_tab(live, page, aid, "Cards")
    item = panel.locator(f"li.card-item[data-card-id='{card['id']}']")
    expect(item.locator(".card-name")).to_have_text(CACHE)
    expect(item.locator(".card-secret")).to_have_count(0)

    secret = item.get_by_role("button", name=f"Say who knows card {CACHE}")
    secret.click()
    item.get_by_label(NAMES).fill(" Mara, , Tobin ")
    item.get_by_role("button", name="Keep secret").click()
    expect(item.locator(".card-secret")).to_have_text("secret: known only to Mara, Tobin and you")
    expect(item.get_by_label(NAMES)).to_have_count(0)
    assert stored_card(live, aid, card["id"])["known_by"] == ["Mara", "Tobin"]

    # The editor's Save leaves the secret as it is.
    item.get_by_role("button", name=f"Edit card {CACHE}").click()
    edit = panel.get_by_role("form", name=f"Edit card {CACHE}")
    edit.get_by_label("Entry").fill("Under the third piling.")
    edit.get_by_role("button", name="Save card").click()
    expect(item.locator(".card-entry")).to_have_text("Under the third piling.")
    expect(item.locator(".card-secret")).to_have_text("secret: known only to Mara, Tobin and you")
    assert stored_card(live, aid, card["id"])["known_by"] == ["Mara", "Tobin"]

    # A name the server refuses: the form stays with what was typed, nothing changes.
    secret.click()
    expect(item.get_by_label(NAMES)).to_have_value("Mara, Tobin")
    item.get_by_label(NAMES).fill("Mara, " + "x" * 300)
    item.get_by_role("button", name="Keep secret").click()
    expect(page.locator("#errors")).to_contain_text("characters long")
    expect(item.get_by_label(NAMES)).to_have_value("Mara, " + "x" * 300)
    assert stored_card(live, aid, card["id"])["known_by"] == ["Mara", "Tobin"]

    # No names: a secret the player's character keeps alone; then no secret at all.
    item.get_by_label(NAMES).fill("")
    item.get_by_role("button", name="Keep secret").click()
    expect(item.locator(".card-secret")).to_have_text("secret: known only to you")
    assert stored_card(live, aid, card["id"])["known_by"] == []
    secret.click()
    item.get_by_role("button", name="No longer a secret").click()
    expect(item.locator(".card-secret")).to_have_count(0)
    assert stored_card(live, aid, card["id"])["known_by"] is None

    # Cancel changes nothing, and a card that is no secret offers nothing to clear.
    secret.click()
    expect(item.get_by_role("button", name="No longer a secret")).to_have_count(0)
    item.get_by_role("button", name="Cancel").click()
    expect(item.get_by_label(NAMES)).to_have_count(0)
    assert page.locator("b").count() == 0


def test_a_world_event_is_marked_a_secret_and_back_in_the_world_tab(live: Live, page: Any) -> None:
    aid = harbour(live)
    live.double.script("You pick up the brass key. Old Maren arrives.")
    live.turn(aid, "search the quay")
    panel = open_tab(live, page, aid, "World")
    took = panel.locator(".world-event", has_text="the brass key")
    expect(took.locator(".world-secret")).to_have_count(0)
    event_id = int(took.get_attribute("data-id") or 0)

    panel.get_by_role("button", name=f"Say who knows event {event_id}").click()
    took.get_by_label(NAMES).fill("Old Maren")
    took.get_by_role("button", name="Keep secret").click()
    expect(took.locator(".world-secret")).to_have_text("secret: known only to Old Maren and you")
    expect(took.get_by_label(NAMES)).to_have_count(0)
    assert stored_event(live, aid, event_id)["known_by"] == ["Old Maren"]
    # A secret changes what someone knows, not what is true.
    expect(panel.locator(".world-inventory")).to_have_text("the brass key")

    panel.get_by_role("button", name=f"Say who knows event {event_id}").click()
    expect(took.get_by_label(NAMES)).to_have_value("Old Maren")
    took.get_by_role("button", name="No longer a secret").click()
    expect(took.locator(".world-secret")).to_have_count(0)
    assert stored_event(live, aid, event_id)["known_by"] is None
    expect(panel.locator(".world-inventory")).to_have_text("the brass key")


def test_who_knows_what_lists_the_secret_card_and_the_state_entry_tobin_missed(
    live: Live, page: Any
) -> None:
    aid = harbour(live)
    for body in (
        {"kind": "moved", "object": "the Salt Market"},
        {"kind": "arrived", "subject": "Maren"},
        {"kind": "arrived", "subject": "Tobin"},
    ):
        made = live.api.post(f"/api/adventures/{aid}/world/events", json=body)
        assert made.status_code == 201, made.text
    # Tobin is away while the key is taken, and back before he is asked about it.
    replies = ["The tide turns.", "Tobin leaves.", "You pick up the brass key.", "Tobin arrives."]
    live.double.script(*replies)
    for i in range(len(replies)):
        live.turn(aid, f"wait {i}")
    card = add_card(live, aid)
    panel = open_tab(live, page, aid, "Cards")
    item = panel.locator(f"li.card-item[data-card-id='{card['id']}']")
    item.get_by_role("button", name=f"Say who knows card {CACHE}").click()
    item.get_by_label(NAMES).fill("Maren")
    item.get_by_role("button", name="Keep secret").click()
    expect(item.locator(".card-secret")).to_have_text("secret: known only to Maren and you")

    asked = {"type": "say", "text": "Tobin, where is the key?"}
    witness = live.api.post(f"/api/adventures/{aid}/insights/dry-run", json=asked).json()["witness"]
    (card_mark,) = witness["cards"]
    (entry,) = witness["state"]
    assert (card_mark["id"], card_mark["handling"]) == (card["id"], "labelled")
    assert card_mark["why"] == "a secret: known only to Maren and you"
    assert entry["name"] == "the brass key" and entry["why"].startswith("absent at action ")

    dialog = open_insights(page, {"dryRun": asked})
    part = dialog.locator('.ins-part[data-part="witness"]')
    expect(part.locator(".ins-witness-who")).to_contain_text("Tobin — spoken to by name")
    marked = part.locator(f'.ins-witness-mark[data-kind="card"][data-id="{card["id"]}"]')
    expect(marked).to_have_attribute("data-what", "labelled")
    expect(marked).to_have_text(f"labelled Card “{CACHE}” — a secret: known only to Maren and you")
    row = part.locator(f'.ins-witness-mark[data-kind="state"][data-id="{entry["id"]}"]')
    expect(row).to_have_attribute("data-what", "labelled")
    expect(row).to_have_text(f"labelled Current state: the brass key — {entry['why']}")
    expect(dialog.locator("b")).to_have_count(0)

    # Maren is in on the card and was there for the key: nothing is marked for her.
    page.keyboard.press("Escape")
    dialog = open_insights(page, {"dryRun": {"type": "say", "text": "Maren, where is the key?"}})
    part = dialog.locator('.ins-part[data-part="witness"]')
    expect(part.locator(".ins-witness-who")).to_contain_text("Maren — spoken to by name")
    expect(part.locator(".ins-witness-mark")).to_have_count(0)


FOCUSED_AFTER_CLICK = """async (label) => {
  document.querySelector(`button[aria-label="${label}"]`).click();
  await Promise.resolve();  // no timer runs before the player's (or a test's) next keystroke
  return document.activeElement ? document.activeElement.getAttribute("aria-label")
    || document.activeElement.id : null;
}"""


def test_a_form_opened_in_the_cards_panel_has_focus_before_the_next_keystroke(
    live: Live, page: Any
) -> None:
    """Focus moved by a timer could land after typing into another field had begun, and
    the text would go into the wrong one (an entry typed into the name)."""
    aid = harbour(live)
    card = add_card(live, aid)
    panel = open_tab(live, page, aid, "Cards")
    expect(panel.locator(".card-name")).to_have_text(CACHE)
    assert page.evaluate(FOCUSED_AFTER_CLICK, f"Say who knows card {CACHE}") == NAMES
    panel.get_by_role("button", name="Cancel").click()
    assert page.evaluate(FOCUSED_AFTER_CLICK, f"Edit card {CACHE}") == f"card-{card['id']}-name"
