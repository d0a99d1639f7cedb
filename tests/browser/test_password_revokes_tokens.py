"""A new password and the account's API tokens, in a real browser (accounts mode): the
account page's "also revoke my API tokens" and the admin page's "also revoke their API
tokens" are ticked when the form opens, revoke the tokens as they say, and keep them when
unticked."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from playwright.sync_api import expect
from tests.browser.conftest import Live
from tests.kit.browser import MARA, TOVE, create_account, sign_in, signed_in_api, user_row


@pytest.fixture
def live(admin_live: Live) -> Live:
    """The server in accounts mode with the administrator's routes (``conftest.py``)."""
    return admin_live


def make_token(live: Live, account: tuple[str, str], name: str) -> dict[str, str]:
    with signed_in_api(live, account) as client:
        made = client.post("/api/tokens", json={"name": name, "scopes": ["read"]})
        assert made.status_code == 201, made.text
        return {"Authorization": f"Bearer {made.json()['token']}"}


def works(live: Live, bearer: dict[str, str]) -> bool:
    with httpx.Client(base_url=live.url, timeout=30) as client:
        return client.get("/api/adventures", headers=bearer).status_code == 200


def change_password(page: Any, current: str, new: str) -> None:
    page.get_by_label("Current password").fill(current)
    page.get_by_label("New password", exact=True).fill(new)
    page.get_by_label("Repeat the new password").fill(new)
    page.get_by_role("button", name="Change password").click()


def test_the_account_page_revokes_the_tokens_unless_unticked(live: Live, page: Any) -> None:
    create_account(live, MARA)
    script = make_token(live, MARA, "backup")
    sign_in(page, live, MARA, "/account")
    box = page.get_by_label("also revoke my API tokens")
    expect(box).to_be_checked()
    expect(page.locator("#tokens-list tbody tr")).to_have_count(1)
    change_password(page, MARA[1], "first-new-passphrase")
    message = page.locator("#password-message")
    expect(message).to_contain_text("your API token was revoked")
    expect(page.locator(".tokens-empty")).to_have_text("No tokens yet.")
    assert not works(live, script)
    kept = make_token(live, (MARA[0], "first-new-passphrase"), "sync")
    page.reload()
    expect(box).to_be_checked()  # ticked again on every load
    box.uncheck()
    change_password(page, "first-new-passphrase", "second-new-passphrase")
    expect(message).to_contain_text("your API tokens keep working")
    expect(page.locator("#tokens-list tbody tr")).to_have_count(1)
    assert works(live, kept)


def test_the_admin_page_revokes_a_players_tokens_unless_unticked(live: Live, page: Any) -> None:
    create_account(live, MARA, admin=True)
    create_account(live, TOVE)
    first = make_token(live, TOVE, "first")
    sign_in(page, live, MARA, "/admin")
    row = user_row(page, TOVE[0])

    def reset(new: str, revoke: bool) -> None:
        row.get_by_role("button", name="Reset password").click()
        box = page.get_by_label("also revoke their API tokens")
        expect(box).to_be_checked()
        if not revoke:
            box.uncheck()
        page.get_by_label("New password", exact=True).fill(new)
        page.get_by_label("Repeat the new password").fill(new)
        page.get_by_role("button", name="Set password", exact=True).click()

    reset("salt-marsh-lantern-9", revoke=True)
    expect(page.locator("#admin-message")).to_contain_text("their API tokens revoked")
    assert not works(live, first)
    second = make_token(live, (TOVE[0], "salt-marsh-lantern-9"), "second")
    reset("salt-marsh-lantern-10", revoke=False)
    expect(page.locator("#admin-message")).to_contain_text("their API tokens kept")
    assert works(live, second)
