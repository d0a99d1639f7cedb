"""Accounts mode in a real browser: the sign-in page, the top bar's account and sign-out, the
account page (password, API tokens), and what one account cannot see of another's.

The server runs with ``TALEKEEPER_AUTH=accounts``; accounts are made through the accounts
service with a cheap argon2 cost (the hash records its cost, so the web's sign-in verifies
it, then stores a hash at the default cost). Sign-in failures count in the process's
throttle for the address 127.0.0.1 too, so this module makes only two of them (five would
lock the address out for every later test).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect
from tests.browser.conftest import Live
from tests.conftest import double_settings
from tests.kit.browser import (
    MARA,
    TOVE,
    another_browser,
    create_account,
    fill_sign_in,
    sign_in,
    signed_in_api,
)

from talekeeper.services.accounts import (
    AccountDisabled,
    WeakPassword,
    WrongCredentials,
    check_password,
    set_disabled,
)
from talekeeper.settings import Settings
from talekeeper.storage.db import session_scope
from talekeeper_testkit.double import ModelDouble

ATTACKS = (
    "//evil.example/",
    "https://evil.example/",
    "/\\evil.example/",
    "/\t/evil.example/",
    "javascript:alert(1)",
)


@pytest.fixture
def live_settings(tmp_path: Path, double: ModelDouble) -> Settings:
    settings: Settings = double_settings(tmp_path, double, auth="accounts")
    return settings


def login_url(live: Live, back: str) -> str:
    return f"{live.url}/login?next={quote(back, safe='/')}"


# -- signing in and out ---------------------------------------------------------------------


def test_sign_in_shows_the_servers_refusal_then_goes_back_and_signs_out(
    live: Live, page: Any
) -> None:
    create_account(live, MARA)
    page.goto(live.url + "/settings")
    expect(page).to_have_url(login_url(live, "/settings"))
    # Nothing of the server is shown before sign-in: no navigation, no model names.
    expect(page.get_by_role("navigation", name="Main")).to_have_count(0)
    assert "double-narrator" not in page.content()
    fill_sign_in(page, (MARA[0], "not-the-password"))
    refusal = page.locator("#login-error")
    expect(refusal).to_have_attribute("role", "alert")
    expect(refusal).to_have_text(str(WrongCredentials()))
    expect(page.get_by_label("Password", exact=True)).to_have_value("")
    expect(page).to_have_url(login_url(live, "/settings"))
    fill_sign_in(page, MARA)
    expect(page).to_have_url(live.url + "/settings")
    expect(page.get_by_label("Reply length (tokens)", exact=True)).to_be_visible()
    expect(page.locator(".topbar .account-name")).to_have_text(MARA[0])
    expect(page.locator(".topbar .account-name")).to_have_attribute("href", "/account")
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(live.url + "/login")
    assert page.request.get(live.url + "/api/adventures").status == 401
    page.goto(live.url + "/settings")
    expect(page).to_have_url(login_url(live, "/settings"))
    page.goto(live.url + "/")
    expect(page).to_have_url(live.url + "/login")


def test_next_never_leaves_the_site(live: Live, page: Any) -> None:
    create_account(live, MARA)
    for attack in ATTACKS:
        page.goto("about:blank")  # the open page's scripts would meet the 401 and navigate
        page.context.clear_cookies()
        page.goto(f"{live.url}/login?next={quote(attack, safe='')}")
        fill_sign_in(page, MARA)
        expect(page.locator(".account-name")).to_have_text(MARA[0])
        expect(page).to_have_url(live.url + "/")
    # A path of this site is followed, with its query, from the redirect to the end.
    page.goto("about:blank")
    page.context.clear_cookies()
    page.goto(live.url + "/debug?from=mail")
    expect(page).to_have_url(login_url(live, "/debug?from=mail"))
    fill_sign_in(page, MARA)
    expect(page).to_have_url(live.url + "/debug?from=mail")


def test_the_sign_in_script_keeps_only_paths_of_this_origin(live: Live, page: Any) -> None:
    """The script's own check, whatever the server put in the page: the module the page
    loaded is asked directly."""
    page.goto(live.url + "/login")
    kept = page.evaluate(
        """async (attacks) => {
          const src = document.querySelector('script[src*="/static/js/login.js"]').src;
          const { safeNext } = await import(src);
          return {
            attacks: attacks.map((a) => safeNext(a)),
            paths: ["/debug?from=mail#top", "/adventures/3"].map((a) => safeNext(a)),
          };
        }""",
        [*ATTACKS, "/\n/evil.example/", " //evil.example/", "/login?next=//evil.example/"],
    )
    assert kept["attacks"] == ["/"] * (len(ATTACKS) + 3)
    assert kept["paths"] == ["/debug?from=mail#top", "/adventures/3"]


# -- what accounts share --------------------------------------------------------------------


def test_another_account_sees_none_of_the_first_ones_adventures(
    live: Live, page: Any, browser: Any
) -> None:
    create_account(live, MARA, admin=True)
    create_account(live, TOVE)
    with signed_in_api(live, MARA) as mara:
        scenario = mara.get("/api/scenarios").json()[0]["id"]
        made = mara.post("/api/adventures", json={"scenario": scenario, "title": "Mara's secret"})
        assert made.status_code == 201, made.text
        secret = made.json()
    sign_in(page, live, MARA)
    expect(page.locator("#adventures-root")).to_contain_text("Mara's secret")
    with another_browser(browser) as tove:
        sign_in(tove, live, TOVE)
        expect(tove.locator(".adv-empty-lead")).to_have_text("No adventures yet.")
        expect(tove.locator("#adventures-root")).not_to_contain_text("Mara's secret")
        tove.goto(f"{live.url}/adventures/{secret['id']}")
        expect(tove.get_by_role("heading", name="No such adventure")).to_be_visible()
        assert "Mara's secret" not in tove.content()
        assert tove.request.get(f"{live.url}/api/adventures/{secret['id']}").status == 404
        # Only an administrator is offered the admin scope.
        tove.goto(live.url + "/account")
        expect(tove.get_by_label("play: write and change stories")).to_be_visible()
        expect(tove.locator('input[name="scope"][value="admin"]')).to_have_count(0)


def test_a_password_changed_elsewhere_sends_this_browser_to_sign_in(
    live: Live, page: Any, browser: Any
) -> None:
    create_account(live, MARA)
    sign_in(page, live, MARA, "/settings")
    new = "a-brand-new-passphrase"
    with another_browser(browser) as other:
        sign_in(other, live, MARA, "/account")
        other.get_by_label("Current password").fill(MARA[1])
        other.get_by_label("New password", exact=True).fill(new)
        other.get_by_label("Repeat the new password").fill(new)
        other.get_by_role("button", name="Change password").click()
        expect(other.locator("#password-message")).to_contain_text("Password changed.")
        # The browser that changed it stays signed in (a fresh cookie).
        other.reload()
        expect(other).to_have_url(live.url + "/account")
        assert other.request.get(live.url + "/api/auth/me").json()["name"] == MARA[0]
    answer = page.request.get(live.url + "/api/adventures")
    assert answer.status == 401 and answer.json()["error"]["code"] == "not_signed_in"
    page.get_by_role("link", name="Debug").click()
    expect(page).to_have_url(login_url(live, "/debug"))
    fill_sign_in(page, (MARA[0], new))
    expect(page).to_have_url(live.url + "/debug")


def test_a_disabled_account_is_sent_to_sign_in_and_told_why(live: Live, page: Any) -> None:
    create_account(live, MARA)
    sign_in(page, live, MARA, "/settings")
    with session_scope(live.app.state.runtime.sessions) as session:
        set_disabled(session, MARA[0], True)
    assert page.request.get(live.url + "/api/settings").status == 401
    # The open page's own script meets the 401 and takes the browser to sign in.
    try:  # the navigation it causes may end the evaluation before it answers
        page.evaluate(
            "() => { import('/static/js/ui.js').then(m => m.api('GET', '/api/settings'))"
            ".catch(() => null); }"
        )
    except PlaywrightError as ended:
        assert "navigation" in str(ended)
    expect(page).to_have_url(login_url(live, "/settings"))
    fill_sign_in(page, MARA)
    expect(page.locator("#login-error")).to_have_text(str(AccountDisabled(MARA[0])))
    expect(page).to_have_url(login_url(live, "/settings"))


# -- the account page -----------------------------------------------------------------------


def test_the_account_page_changes_the_password(live: Live, page: Any) -> None:
    create_account(live, MARA)
    sign_in(page, live, MARA, "/account")
    sent: list[str] = []
    page.on("request", lambda request: sent.append(request.url))
    current = page.get_by_label("Current password")
    fresh = page.get_by_label("New password", exact=True)
    repeat = page.get_by_label("Repeat the new password")
    change = page.get_by_role("button", name="Change password")
    message = page.locator("#password-message")
    current.fill(MARA[1])
    fresh.fill("first-new-passphrase")
    repeat.fill("first-new-passphrasf")
    change.click()
    expect(message).to_contain_text("The two new passwords differ")
    expect(message).to_have_attribute("role", "alert")
    assert not [url for url in sent if url.endswith("/api/auth/password")]
    with pytest.raises(WeakPassword) as weak:
        check_password("short1")
    fresh.fill("short1")
    repeat.fill("short1")
    change.click()
    expect(message).to_have_text(str(weak.value))
    new = "first-new-passphrase"
    fresh.fill(new)
    repeat.fill(new)
    change.click()
    expect(message).to_contain_text("Password changed.")
    expect(current).to_have_value("")
    with httpx.Client(base_url=live.url, timeout=30) as client:
        old = client.post("/api/auth/login", json={"username": MARA[0], "password": MARA[1]})
        assert old.status_code == 401, old.text
        good = client.post("/api/auth/login", json={"username": MARA[0], "password": new})
        assert good.status_code == 200, good.text
    page.reload()  # this browser is still signed in
    expect(page.locator(".account-name")).to_have_text(MARA[0])


def test_a_token_is_shown_once_works_and_stops_when_revoked(live: Live, page: Any) -> None:
    create_account(live, MARA, admin=True)
    sign_in(page, live, MARA, "/account")
    expect(page.locator(".tokens-empty")).to_have_text("No tokens yet.")
    name = "<b>backup</b> script"
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("admin: manage accounts").check()
    page.get_by_label("never expires").check()
    expect(page.get_by_label("Expires after (days)")).to_be_disabled()
    page.get_by_role("button", name="Create token").click()
    shown = page.locator("#token-value")
    expect(shown).to_have_value(re.compile(r"^tk_\S{20,}$"))
    token = shown.input_value()
    expect(shown).to_have_attribute("readonly", "")
    expect(page.locator("#token-created")).to_contain_text("it will not be shown again")
    expect(page.get_by_role("button", name="Copy")).to_be_visible()
    row = page.locator("#tokens-list tbody tr")
    expect(row).to_have_count(1)
    expect(row.locator(".token-name")).to_have_text(name)  # text, not markup
    expect(row.locator(".token-name b")).to_have_count(0)
    expect(row.locator(".token-scope-list")).to_have_text("admin, play, read")
    expect(row.locator("td").nth(3)).to_have_text("never")
    bearer = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=live.url, timeout=30) as client:
        assert client.get("/api/adventures", headers=bearer).status_code == 200
    page.reload()  # shown once: the page never has it again
    expect(row).to_have_count(1)
    expect(page.locator("#token-created")).to_be_hidden()
    assert token not in page.content()
    expect(row.locator(".token-name")).to_have_text(name)
    row.get_by_role("button", name=f"Revoke the token {name}").click()
    row.get_by_role("button", name="Revoke it").click()
    expect(page.locator(".tokens-empty")).to_have_text("No tokens yet.")
    with httpx.Client(base_url=live.url, timeout=30) as client:
        refused = client.get("/api/adventures", headers=bearer)
        assert refused.status_code == 401, refused.text
