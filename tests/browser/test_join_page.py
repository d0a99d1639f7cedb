"""An invite link in a real browser (docs/sharing.md): "/join#CODE" opened signed out goes
through the sign-in page and back with its code, the persona form joins, and the shared
adventure is listed with the member's role and no host's buttons; a refused code shows the
server's sentence; a member's play page is the story without the host's panels."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from tests.browser.conftest import Live
from tests.conftest import double_settings
from tests.kit.browser import MARA, TOVE, create_account, fill_sign_in, signed_in_api

from talekeeper.settings import Settings
from talekeeper_testkit.double import ModelDouble


@pytest.fixture
def live_settings(tmp_path: Path, double: ModelDouble) -> Settings:
    settings: Settings = double_settings(tmp_path, double, auth="accounts")
    return settings


def _shared(live: Live, uses: int = 1) -> tuple[int, str]:
    """Mara's adventure and an invite link to it."""
    create_account(live, MARA)
    with signed_in_api(live, MARA) as mara:
        made = mara.post("/api/adventures", json={"title": "The Drowned Bell"})
        assert made.status_code == 201, made.text
        aid = int(made.json()["id"])
        invite = mara.post(f"/api/adventures/{aid}/invites", json={"uses": uses})
        assert invite.status_code == 201, invite.text
        return aid, str(invite.json()["url"])


def test_an_invite_link_signs_in_joins_and_lists_the_shared_adventure(
    live: Live, page: Any
) -> None:
    aid, link = _shared(live)
    assert link.startswith(live.url + "/join#")
    create_account(live, TOVE)
    page.goto(link)
    expect(page.locator("#login-form")).to_be_visible()
    fill_sign_in(page, TOVE)
    expect(page).to_have_url(link)  # back with the code, which no request carried
    page.get_by_label("Your character's name").fill("Tove Lind")
    page.get_by_label("Pronouns").fill("she/her")
    page.get_by_role("button", name="Join").click()
    expect(page).to_have_url(live.url + "/")
    row = page.locator(f'li.adv[data-adventure-id="{aid}"]')
    expect(row.locator(".adv-title")).to_have_text("The Drowned Bell")
    expect(row.locator(".badge")).to_have_text("Shared with you: player")
    expect(row.get_by_role("button", name="Delete “The Drowned Bell”")).to_have_count(0)
    row.get_by_role("link", name="Open “The Drowned Bell”").click()
    expect(page.get_by_role("heading", name="The Drowned Bell")).to_be_visible()
    expect(page.get_by_label("Your action")).to_be_visible()  # a player's page: the story
    expect(page.locator("#panels")).to_have_count(0)  # without the host's panels
    with signed_in_api(live, MARA) as mara:
        members = mara.get(f"/api/adventures/{aid}/members").json()
    assert [(m["name"], m["persona"]["name"]) for m in members] == [
        ("mara", ""),
        ("tove", "Tove Lind"),
    ]


def test_a_used_up_invite_shows_the_servers_refusal(live: Live, page: Any) -> None:
    _, link = _shared(live)
    create_account(live, TOVE)
    with signed_in_api(live, TOVE) as tove:
        code = link.split("#", 1)[1]
        assert tove.post(f"/api/invites/{code}/join", json={"persona": {"name": "T"}}).is_success
    third = ("wren", "salt-and-signal-fires")
    create_account(live, third)
    page.goto(link)
    fill_sign_in(page, third)
    page.get_by_label("Your character's name").fill("Wren")
    page.get_by_role("button", name="Join").click()
    refusal = page.locator("#join-error")
    expect(refusal).to_have_attribute("role", "alert")
    expect(refusal).to_have_text("This invite is used up: ask the host for a new one.")
    expect(page.get_by_label("Your character's name")).to_have_value("Wren")
