"""The administrator's page in a real browser (accounts mode): adding a user, disabling and
enabling them, a new password, revoking a player's token, and a player who is shown no
way in. Accounts are made through the accounts service at a cheap argon2 cost, as in
``test_accounts_pages``."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from playwright.sync_api import expect
from tests.browser.conftest import Live
from tests.kit.browser import (
    MARA,
    TOVE,
    another_browser,
    create_account,
    fill_sign_in,
    sign_in,
    signed_in_api,
    user_row,
)

from talekeeper.services.accounts import AccountDisabled


@pytest.fixture
def live(admin_live: Live) -> Live:
    """The server in accounts mode with the administrator's routes (``conftest.py``)."""
    return admin_live


def can_sign_in(live: Live, account: tuple[str, str]) -> bool:
    with httpx.Client(base_url=live.url, timeout=30) as client:
        body = {"username": account[0], "password": account[1]}
        return client.post("/api/auth/login", json=body).status_code == 200


def test_an_administrator_adds_a_user_then_disables_and_enables_them(
    live: Live, page: Any, browser: Any
) -> None:
    create_account(live, MARA, admin=True)
    sign_in(page, live, MARA, "/admin")
    link = page.locator(".topbar .admin-link")
    expect(link).to_have_attribute("aria-current", "page")
    mine = user_row(page, MARA[0])
    expect(mine.locator(".badge-you")).to_have_text("you")
    expect(mine.get_by_role("button", name="Disable")).to_be_disabled()
    expect(mine.get_by_role("button", name="Remove admin")).to_be_disabled()

    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.method + " " + request.url))
    page.get_by_label("Name", exact=True).fill(TOVE[0])
    page.get_by_label("Password", exact=True).fill(TOVE[1])
    page.get_by_label("Repeat the password").fill(TOVE[1] + "x")
    page.get_by_role("button", name="Add user").click()
    message = page.locator("#add-message")
    expect(message).to_contain_text("The two passwords differ")
    assert not [r for r in sent if r.startswith("POST")]
    page.get_by_label("Repeat the password").fill(TOVE[1])
    page.get_by_role("button", name="Add user").click()
    expect(message).to_have_text(f"Added the player {TOVE[0]}.")
    row = user_row(page, TOVE[0])
    expect(row.locator("td.num").first).to_have_text("0")
    assert can_sign_in(live, TOVE)

    row.get_by_role("button", name="Disable").click()
    row.get_by_role("button", name="Disable").click()  # the confirmation's own button
    expect(row.locator(".badge-disabled")).to_have_text("disabled")
    with another_browser(browser) as tove:
        tove.goto(live.url + "/login")
        fill_sign_in(tove, TOVE)
        expect(tove.locator("#login-error")).to_have_text(str(AccountDisabled(TOVE[0])))
    row.get_by_role("button", name="Enable").click()
    expect(row.locator(".badge-disabled")).to_have_count(0)
    assert can_sign_in(live, TOVE)


def test_a_new_password_from_the_admin_page_signs_the_player_out(
    live: Live, page: Any, browser: Any
) -> None:
    create_account(live, MARA, admin=True)
    create_account(live, TOVE)
    new = "salt-marsh-lantern-9"
    with another_browser(browser) as tove:
        sign_in(tove, live, TOVE, "/settings")
        sign_in(page, live, MARA, "/admin")
        row = user_row(page, TOVE[0])
        expect(row.locator("td.num").nth(5)).to_have_text("1")  # signed in: one browser
        row.get_by_role("button", name="Reset password").click()
        page.get_by_label("New password", exact=True).fill(new)
        page.get_by_label("Repeat the new password").fill(new + "!")
        page.get_by_role("button", name="Set password", exact=True).click()
        expect(page.locator(".password-reset .form-message")).to_contain_text("differ")
        page.get_by_label("Repeat the new password").fill(new)
        page.get_by_role("button", name="Set password", exact=True).click()
        expect(page.locator("#admin-message")).to_contain_text(
            f"The password of {TOVE[0]} was changed"
        )
        expect(row.locator("td.num").nth(5)).to_have_text("0")
        assert tove.request.get(live.url + "/api/settings").status == 401
    assert not can_sign_in(live, TOVE)
    assert can_sign_in(live, (TOVE[0], new))


def test_an_administrator_revokes_a_players_token_without_seeing_their_stories(
    live: Live, page: Any
) -> None:
    create_account(live, MARA, admin=True)
    create_account(live, TOVE)
    name = "<b>nightly</b> backup"
    with signed_in_api(live, TOVE) as tove:
        made = tove.post("/api/adventures", json={"title": "The Heron of Vellmar"})
        assert made.status_code == 201, made.text
        token = tove.post("/api/tokens", json={"name": name, "scopes": ["read"]}).json()
    bearer = {"Authorization": f"Bearer {token['token']}"}
    with httpx.Client(base_url=live.url, timeout=30) as script:
        assert script.get("/api/adventures", headers=bearer).status_code == 200
    sign_in(page, live, MARA, "/admin")
    row = user_row(page, TOVE[0])
    expect(row.locator("td.num").first).to_have_text("1")  # one adventure, counted
    row.get_by_role("button", name="Tokens (1)").click()
    listed = page.locator(".user-tokens tbody tr")
    expect(listed).to_have_count(1)
    expect(listed.locator(".token-name")).to_have_text(name)  # text, not markup
    expect(listed.locator(".token-name b")).to_have_count(0)
    assert "Heron of Vellmar" not in page.content()
    listed.get_by_role("button", name=f"Revoke the token {name}").click()
    listed.get_by_role("button", name="Revoke it").click()
    expect(page.locator(".user-tokens .tokens-empty")).to_have_text("No tokens.")
    expect(row.get_by_role("button", name="Tokens (0)")).to_be_visible()
    with httpx.Client(base_url=live.url, timeout=30) as script:
        assert script.get("/api/adventures", headers=bearer).status_code == 401


def test_a_player_has_no_admin_link_and_the_admin_page_is_not_found(live: Live, page: Any) -> None:
    create_account(live, MARA, admin=True)
    create_account(live, TOVE)
    sign_in(page, live, TOVE, "/")
    expect(page.locator(".topbar .account-name")).to_have_text(TOVE[0])
    expect(page.locator(".topbar .admin-link")).to_have_count(0)
    answer = page.goto(live.url + "/admin")
    assert answer is not None and answer.status == 404
    expect(page.get_by_role("heading", name="No such page")).to_be_visible()
    expect(page.locator("#users-list")).to_have_count(0)
