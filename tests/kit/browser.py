"""The web pages in a real browser, as several browser test modules drive them: accounts
made through the accounts service and signed in (on the sign-in page, or as an API client
holding the session), another browser with cookies of its own, the play page with its
story column or one of its panels open, the Insights dialog, an adventure's state and story
through the API, and a row of the administrator's list of users."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from playwright.sync_api import expect
from tests.browser.conftest import TIMEOUT_MS, Live
from tests.kit.accounts import CHEAP

from talekeeper.services.accounts import create_user as add_user
from talekeeper.storage.db import session_scope

# -- accounts ----------------------------------------------------------------------------------


MARA = ("mara", "lantern-keeper-42")
TOVE = ("tove", "drowned-bell-tolls")


def create_account(live: Live, account: tuple[str, str], admin: bool = False) -> None:
    with session_scope(live.app.state.runtime.sessions) as session:
        add_user(session, account[0], account[1], admin=admin, hasher=CHEAP)


@contextmanager
def signed_in_api(live: Live, account: tuple[str, str]) -> Iterator[httpx.Client]:
    """An API client holding the account's session cookie."""
    with httpx.Client(base_url=live.url, timeout=30) as client:
        answer = client.post(
            "/api/auth/login", json={"username": account[0], "password": account[1]}
        )
        assert answer.status_code == 200, answer.text
        yield client


@contextmanager
def another_browser(browser: Any) -> Iterator[Any]:
    """A page in a context of its own (its own cookies), failing on uncaught page errors."""
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield page
    finally:
        context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


def fill_sign_in(page: Any, account: tuple[str, str]) -> None:
    page.get_by_label("Account name").fill(account[0])
    page.get_by_label("Password", exact=True).fill(account[1])
    page.get_by_role("button", name="Sign in").click()


def sign_in(page: Any, live: Live, account: tuple[str, str], path: str = "/") -> None:
    """Open ``path``, be sent to the sign-in page, sign in and be back on ``path``."""
    page.goto(live.url + path)
    expect(page.locator("#login-form")).to_be_visible()
    fill_sign_in(page, account)
    expect(page.locator(".account-name")).to_have_text(account[0])


def user_row(page: Any, name: str) -> Any:
    return page.locator(f'tr.user-row[data-user-name="{name}"]')


# -- the play page -------------------------------------------------------------------------


STORY = "#story .entry"


def open_play(page: Any, live: Live, adventure_id: int, entries: int) -> None:
    page.goto(f"{live.url}/adventures/{adventure_id}")
    expect(page.locator(STORY)).to_have_count(entries)


def story(live: Live, adventure_id: int) -> list[dict[str, Any]]:
    page = live.api.get(f"/api/adventures/{adventure_id}/actions", params={"limit": 500})
    assert page.status_code == 200, page.text
    actions: list[dict[str, Any]] = page.json()["actions"]
    return actions


def state(live: Live, adventure_id: int) -> dict[str, Any]:
    response = live.api.get(f"/api/adventures/{adventure_id}")
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def open_tab(live: Live, page: Any, adventure_id: int, tab: str) -> Any:
    """The play page with the panel of ``tab`` open; the panel."""
    page.goto(f"{live.url}/adventures/{adventure_id}")
    page.get_by_role("tab", name=tab).click()
    panel = page.get_by_role("tabpanel", name=tab)
    expect(panel).to_be_visible()
    return panel


def open_insights(page: Any, detail: dict[str, Any]) -> Any:
    page.evaluate(
        "detail => document.dispatchEvent(new CustomEvent('tk:open-insights', {detail}))", detail
    )
    dialog = page.locator("#insights-dialog")
    expect(dialog).to_be_visible()
    return dialog
