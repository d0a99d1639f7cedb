"""The lore clerk's card proposals in the Cards panel (docs/world.md, "The lore clerk"): the
tab counts the open proposals; each shows its draft and the story's sentences it rests on,
each linked to its action; one is edited and accepted into a card, another dismissed; the
count follows. What the page shows is compared with what the JSON API stores.
"""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect
from tests.browser.conftest import Live, shoot
from tests.kit.browser import open_tab

REPLIES = (
    "Captain Rhys steps off the ferry. The old quay of Saltmarsh Abbey creaks.",
    "Rhys wears a coat of oiled blue wool. A bell rings in Saltmarsh Abbey.",
    "Rhys owes the harbourmaster forty crowns. Saltmarsh Abbey stands dark on the hill.",
)


def test_proposals_are_counted_edited_accepted_and_dismissed_in_the_cards_panel(
    live: Live, page: Any
) -> None:
    aid: int = live.adventure(title="Harbour", opening="Fog lies on the harbour.")["id"]
    for reply in REPLIES:
        live.double.script(reply)
        live.turn(aid, "look around")
    live.idle()
    listed = live.api.get(f"/api/adventures/{aid}/card-proposals").json()
    assert sorted(p["name"] for p in listed) == ["Captain Rhys", "Saltmarsh Abbey"]

    panel = open_tab(live, page, aid, "Cards")
    tab = page.get_by_role("tab", name="Cards")
    expect(tab.locator(".tab-count")).to_have_text("2")
    proposals = panel.get_by_role("list", name="Card proposals")
    expect(proposals.locator("li.proposal-item")).to_have_count(2)
    rhys = next(p for p in listed if p["name"] == "Captain Rhys")
    item = proposals.locator(f"li.proposal-item[data-proposal-id='{rhys['id']}']")
    expect(item.locator(".card-entry")).to_have_text(rhys["entry"])
    item.locator("summary").click()
    evidence = item.locator(".proposal-evidence li")
    expect(evidence).to_have_count(len(rhys["evidence"]))
    expect(evidence.first).to_contain_text(rhys["evidence"][0]["text"])
    expect(evidence.first.get_by_role("button")).to_have_text(
        f"action #{rhys['evidence'][0]['action_id']}"
    )
    shoot(page, "card-proposals")

    item.get_by_role("button", name="Edit the card proposal Captain Rhys").click()
    form = panel.get_by_role("form", name="Edit the card proposal Captain Rhys")
    form.get_by_label("Entry (what the narrator reads)").fill("A ferry captain deep in debt.")
    form.get_by_role("button", name="Accept as a card").click()
    expect(page.locator("#status")).to_have_text("Created the card “Captain Rhys”.")
    cards = panel.get_by_role("list", name="Story cards")
    expect(cards.locator(".card-name")).to_have_text(["Captain Rhys"])
    expect(tab.locator(".tab-count")).to_have_text("1")
    stored = live.api.get(f"/api/adventures/{aid}/cards").json()
    assert [(c["name"], c["entry"]) for c in stored] == [
        ("Captain Rhys", "A ferry captain deep in debt.")
    ]

    proposals.get_by_role("button", name="Dismiss the card proposal Saltmarsh Abbey").click()
    expect(proposals.locator("li.proposal-item")).to_have_count(0)
    expect(tab.locator(".tab-count")).to_have_count(0)
    assert live.api.get(f"/api/adventures/{aid}/card-proposals").json() == []
    assert len(live.api.get(f"/api/adventures/{aid}/cards").json()) == 1  # nothing else made


def test_lines_the_story_adds_about_a_card_are_offered_as_an_addition(
    live: Live, page: Any
) -> None:
    aid: int = live.adventure(title="Harbour", opening="Fog lies on the harbour.")["id"]
    made = live.api.post(
        f"/api/adventures/{aid}/cards",
        json={"name": "Rhys", "type": "character", "keywords": ["Rhys"], "entry": "A ferryman."},
    )
    assert made.status_code == 201, made.text
    for reply in ("Rhys ties the ferry to the old post.", "Rhys counts his coins twice over."):
        live.double.script(reply)
        live.turn(aid, "look around")
    live.idle()
    [update] = live.api.get(f"/api/adventures/{aid}/card-proposals").json()
    assert (update["kind"], update["card_id"]) == ("update", made.json()["id"])

    panel = open_tab(live, page, aid, "Cards")
    item = panel.locator(f"li.proposal-item[data-proposal-id='{update['id']}']")
    expect(item).to_contain_text("Add to")
    expect(item.locator(".diff-add")).to_have_text(f"+ {update['entry']}")
    item.get_by_role("button", name="Edit the card proposal Rhys").click()
    form = panel.get_by_role("form", name="Edit the card proposal Rhys")
    expect(form.get_by_label("Name")).to_have_count(0)  # an update adds lines, nothing else
    form.get_by_label("Lines to add after the entry").fill("Rhys runs the ferry.")
    form.get_by_role("button", name="Add to the card").click()
    expect(page.locator("#status")).to_have_text("Added to the card “Rhys”.")
    [card] = live.api.get(f"/api/adventures/{aid}/cards").json()
    assert card["entry"] == "A ferryman.\nRhys runs the ferry."
    expect(page.get_by_role("tab", name="Cards").locator(".tab-count")).to_have_count(0)


def test_the_cards_tab_turns_accepting_without_asking_on_and_off(live: Live, page: Any) -> None:
    aid: int = live.adventure(title="Harbour", opening="Fog lies on the harbour.")["id"]
    panel = open_tab(live, page, aid, "Cards")
    box = panel.get_by_label("Make them cards without asking (updates add their lines)")
    expect(box).not_to_be_checked()
    box.check()
    expect(page.locator("#status")).to_have_text("Proposals now become cards without asking.")
    assert live.api.get(f"/api/adventures/{aid}").json()["auto_accept_cards"] is True
    box.uncheck()
    expect(page.locator("#status")).to_have_text("Proposals now wait for you.")
    assert live.api.get(f"/api/adventures/{aid}").json()["auto_accept_cards"] is False
