"""A fresh install in the browser: nothing configured, the embedded models, a shipped scenario.

This is what a new user does after ``make run``: open the page, press Start on a scenario, type
an action and watch the reply arrive, then look at its Insights — no endpoint, no settings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from tests.browser.conftest import Live
from tests.conftest import make_settings

from talekeeper.settings import Settings

pytestmark = pytest.mark.model

STORY = "#story .entry"
REPLIES = "#story .entry-narration .entry-text"


@pytest.fixture
def live_settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)  # the defaults: embedded narrator and embedder, extractive


def test_a_new_user_starts_a_scenario_and_plays_on_the_embedded_model(
    live: Live, page: Any
) -> None:
    page.goto(live.url + "/")
    expect(page.locator(".topbar .models")).to_contain_text("embedded")
    # The list above renders after the scenarios and moves them: click once it is there.
    expect(page.locator("#adventures-root")).to_contain_text("No adventures yet.")
    page.get_by_role("button", name="Start “The Lantern Coast”").click()
    expect(page).to_have_url(f"{live.url}/adventures/1")
    expect(page.locator(STORY)).to_have_count(1)  # the scenario's opening

    box = page.get_by_label("Your action")
    box.fill("look at the lantern")
    box.press("Enter")
    expect(page.locator(STORY)).to_have_count(3, timeout=120_000)
    expect(page.locator("#story .streaming")).to_have_count(0, timeout=120_000)
    reply = page.locator(REPLIES).last
    assert reply.inner_text().strip(), "the embedded narrator wrote nothing"

    stored = live.api.get("/api/adventures/1/actions").json()["actions"]
    assert [a["type"] for a in stored][-2:] == ["do", "narration"]
    assert stored[-1]["text"].strip() == reply.inner_text().strip()

    page.get_by_role("button", name="Insights for this reply").click()
    dialog = page.locator("#insights-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("look at the lantern")
    expect(dialog).to_contain_text("embedded")
