"""The adventure's section budgets in the Plot panel (docs/context.md, "Section budgets"):
the defaults shown as placeholders, a share and a ceiling saved and read back from the
JSON API, a value the server refuses shown in its words with nothing stored, and the
defaults restored."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect
from tests.browser.conftest import Live
from tests.kit.browser import open_tab


def budgets_of(live: Live, adventure_id: int) -> dict[str, dict[str, Any]]:
    adventure = live.api.get(f"/api/adventures/{adventure_id}").json()
    return {b["name"]: b for b in adventure["section_budgets"]}


def test_the_section_budgets_are_set_refused_and_reset_in_the_plot_panel(
    live: Live, page: Any
) -> None:
    aid: int = live.adventure(title="Harbour", opening="Fog lies on the harbour.")["id"]
    panel = open_tab(live, page, aid, "Plot")
    form = panel.get_by_role("form", name="Section budgets")
    rows = form.locator("tbody tr")
    expect(rows).to_have_count(4)
    assert rows.evaluate_all("rs => rs.map(r => r.dataset.section)") == [
        "memories",
        "story_cards",
        "knowledge",
        "current_state",
    ]
    share = form.get_by_label("Story Cards: share of the prompt (%)")
    ceiling = form.get_by_label("Story Cards: ceiling (tokens)")
    expect(share).to_have_attribute("placeholder", "20")
    expect(ceiling).to_have_attribute("placeholder", "1000")
    expect(form.get_by_label("Memories: ceiling (tokens a memory)")).to_have_attribute(
        "placeholder", "118"
    )

    share.fill("30")
    ceiling.fill("2000")
    form.get_by_label("Memories: share of the prompt (%)").fill("12.5")
    form.get_by_role("button", name="Save budgets").click()
    expect(page.locator("#status")).to_have_text("Saved.")
    stored = budgets_of(live, aid)
    assert (stored["story_cards"]["share"], stored["story_cards"]["ceiling"]) == (0.3, 2000)
    assert stored["memories"]["share"] == 0.125 and not stored["memories"]["ceiling_set"]
    assert not stored["knowledge"]["share_set"]
    expect(share).to_have_value("30")  # drawn again from the server's answer

    # A ceiling below the floor: the server's message, the form as typed, nothing stored.
    ceiling.fill("5")
    form.get_by_role("button", name="Save budgets").click()
    expect(page.locator("#errors")).to_contain_text("at least 96 (its floor)")
    expect(ceiling).to_have_value("5")
    assert budgets_of(live, aid)["story_cards"]["ceiling"] == 2000

    form.get_by_role("button", name="Use the defaults").click()
    expect(share).to_have_value("")
    expect(ceiling).to_have_value("")
    stored = budgets_of(live, aid)
    assert not any(b["share_set"] or b["ceiling_set"] for b in stored.values())
