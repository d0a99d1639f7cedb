"""The one-time setup link in a real browser: a new server in accounts mode, with no account,
announces a link; opening it, typing a name and a password twice makes the first
administrator and lands on the adventures page signed in; the link is then not found, in
this browser and in any other."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect
from tests.browser.conftest import TIMEOUT_MS
from tests.conftest import double_settings
from tests.kit.accounts import Announced, built

from talekeeper.services.accounts import list_users
from talekeeper.storage.db import read_scope
from talekeeper_testkit.double import ModelDouble
from talekeeper_testkit.live import serving

ADMIN = ("mara", "lantern-keeper-42")


@pytest.fixture
def fresh_server(tmp_path: Path, double: ModelDouble) -> Iterator[tuple[str, Any, Announced]]:
    """A live server in accounts mode with no account: its URL, app, and announced link."""
    announced = Announced()
    app = built(double_settings(tmp_path, double, auth="accounts"), announced)
    with serving(app) as (url, _loop):
        yield url, app, announced


def test_the_link_makes_the_first_admin_who_lands_signed_in_and_it_works_once(
    fresh_server: tuple[str, Any, Announced], page: Any, browser: Any
) -> None:
    url, app, announced = fresh_server
    opened = page.goto(url + announced.path)
    assert opened is not None and opened.status == 200
    expect(page.get_by_role("heading", name="Create the first administrator")).to_be_visible()
    expect(page.get_by_role("navigation", name="Main")).to_have_count(0)  # nothing shown yet

    page.get_by_label("Account name").fill(ADMIN[0])
    page.get_by_label("Password", exact=True).fill(ADMIN[1])
    page.get_by_label("The same password again").fill(ADMIN[1] + "!")
    page.get_by_role("button", name="Create and sign in").click()
    refusal = page.locator("#setup-error")
    expect(refusal).to_have_text("The two passwords differ: type the same one in both fields.")
    page.get_by_label("The same password again").fill(ADMIN[1])
    page.get_by_role("button", name="Create and sign in").click()

    expect(page).to_have_url(url + "/")
    expect(page.locator(".account-name")).to_have_text(ADMIN[0])
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    with read_scope(app.state.runtime.sessions) as session:
        assert [(a.name, a.is_admin) for a in list_users(session)] == [(ADMIN[0], True)]

    page.go_back()  # the spent link was replaced in the history: back is not the form
    assert "/setup" not in page.url

    context = browser.new_context()
    context.set_default_timeout(TIMEOUT_MS)
    try:
        other = context.new_page()
        again = other.goto(url + announced.path)
        assert again is not None and again.status == 404
        expect(other.get_by_role("heading", name="No such page")).to_be_visible()
        expect(other.locator("#setup-form")).to_have_count(0)
    finally:
        context.close()
    with httpx.Client(base_url=url, timeout=30) as api:  # nor can a script use it again
        body = {"secret": announced.secret, "username": "eve", "password": ADMIN[1]}
        assert api.post("/api/auth/setup", json=body).status_code == 404
