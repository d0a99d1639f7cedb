"""The card rules in the browser: the Cards panel's editor sets "Always on", secondary
keywords and their rule, the list marks an always-on card and shows its secondary keywords,
and the Insights dialog says "always on" for such a card and names the secondary keywords
that held for a fired one."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect
from tests.browser.conftest import Live
from tests.kit.browser import open_insights, open_tab


def test_the_editor_sets_the_rules_and_insights_says_always_on(live: Live, page: Any) -> None:
    aid = live.adventure(title="Harbour", opening="Fog lies on the harbour.")["id"]
    panel = open_tab(live, page, aid, "Cards")
    cards = panel.locator("li.card-item")

    panel.get_by_role("button", name="New card").click()
    form = panel.get_by_role("form", name="New story card")
    form.get_by_label("Name").fill("House Rules")
    form.get_by_label("Type").select_option("lore")
    form.get_by_label("Entry").fill("Nobody swims at night.")
    expect(form.get_by_label("Always on")).not_to_be_checked()
    form.get_by_label("Always on").check()
    form.get_by_role("button", name="Create card").click()
    rules = cards.filter(has_text="House Rules")
    expect(rules.locator(".card-always")).to_have_text("always on")
    expect(rules).to_contain_text("No keywords: it is always on.")

    panel.get_by_role("button", name="New card").click()
    form = panel.get_by_role("form", name="New story card")
    form.get_by_label("Name").fill("Storm")
    form.get_by_label("Type").select_option("lore")
    form.get_by_label("Keywords (").fill("sea")
    form.get_by_label("Secondary keys").fill("storm, gale")
    expect(form.get_by_label("Secondary rule")).to_have_value("any")
    form.get_by_label("Secondary rule").select_option("all")
    form.get_by_label("Entry").fill("Storms come from the west.")
    form.get_by_role("button", name="Create card").click()
    storm = cards.filter(has_text="Storm")
    expect(storm.locator(".card-secondary")).to_have_text("With all of: storm, gale")
    expect(storm.locator(".card-always")).to_have_count(0)

    stored = {c["name"]: c for c in live.api.get(f"/api/adventures/{aid}/cards").json()}
    assert (stored["House Rules"]["always_on"], stored["House Rules"]["keywords"]) == (True, [])
    assert stored["Storm"]["secondary_keywords"] == ["storm", "gale"]
    assert (stored["Storm"]["secondary_rule"], stored["Storm"]["always_on"]) == ("all", False)

    # Editing shows what is stored, and a change of rule is saved.
    storm.get_by_role("button", name="Edit card Storm").click()
    edit = panel.get_by_role("form", name="Edit card Storm")
    expect(edit.get_by_label("Secondary keys")).to_have_value("storm, gale")
    expect(edit.get_by_label("Secondary rule")).to_have_value("all")
    expect(edit.get_by_label("Always on")).not_to_be_checked()
    edit.get_by_label("Secondary rule").select_option("any")
    edit.get_by_role("button", name="Save card").click()
    expect(storm.locator(".card-secondary")).to_have_text("With any of: storm, gale")
    stored = {c["name"]: c for c in live.api.get(f"/api/adventures/{aid}/cards").json()}
    assert stored["Storm"]["secondary_rule"] == "any"

    # A turn where the sea and a gale appear: the always-on card first, then the fired one.
    live.double.script("A gale rises over the sea.", "The gale howls.")
    live.turn(aid, "look out over the harbour")
    reply = live.turn(aid, "watch the sea")["reply"]
    snapshot = live.api.get(f"/api/actions/{reply['id']}/insights").json()
    assert [(c["name"], c["always_on"]) for c in snapshot["cards"]] == [
        ("House Rules", True),
        ("Storm", False),
    ]
    dialog = open_insights(page, {"actionId": reply["id"]})
    items = dialog.locator(".ins-card")
    expect(items).to_have_count(2)
    first = items.nth(0)
    expect(first.locator(".ins-card-name")).to_have_text("House Rules")
    expect(first.locator(".ins-always")).to_have_text("always on")
    expect(first.locator(".ins-keyword")).to_have_count(0)
    expect(first).not_to_contain_text("fired by")
    second = items.nth(1)
    expect(second.locator(".ins-keyword")).to_have_text("sea")
    expect(second).to_contain_text("in the player's input")
    expect(second.locator(".ins-held")).to_have_text(["gale"])
    expect(second.locator(".ins-always")).to_have_count(0)
