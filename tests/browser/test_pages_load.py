"""Every page loads in a real browser with its scripts, and shows an error as a message."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect
from tests.browser.conftest import Live


def test_every_page_loads_without_a_script_error(live: Live, page: Any) -> None:
    adventure = live.adventure()
    for path in ("/", "/settings", "/debug", f"/adventures/{adventure['id']}"):
        response = page.goto(live.url + path)
        assert response is not None and response.status == 200, path
        expect(page.locator(".topbar .brand")).to_have_text("Talekeeper")
        expect(page.locator(".topbar .models")).to_contain_text("double-narrator")


def test_an_unknown_adventure_is_a_readable_page(live: Live, page: Any) -> None:
    response = page.goto(live.url + "/adventures/987654")
    assert response is not None and response.status == 404
    expect(page.locator("h1")).to_have_text("No such adventure")
    expect(page.locator("main")).to_contain_text("There is no adventure 987654.")
