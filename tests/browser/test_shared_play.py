"""Two browsers play one shared adventure together (docs/sharing.md): the host's page and a
player's, each signed in to its own account, each seeing who is here and writing, and the
other's action and its reply live, in the third person, and the host's World panel
telling where the other player's character stands, and Insights reading a turn that
addresses no one as its actor's; a viewer's page has the story and
no action box, and a member removed while reading is told so; an action sent during
another's reply waits its turn; the host shares from the People panel."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from tests.browser.conftest import Live
from tests.conftest import double_settings
from tests.kit.browser import (
    MARA,
    STORY,
    TOVE,
    another_browser,
    create_account,
    open_insights,
    open_tab,
    sign_in,
    signed_in_api,
)

from talekeeper.settings import Settings
from talekeeper_testkit.double import ModelDouble


@pytest.fixture
def live_settings(tmp_path: Path, double: ModelDouble) -> Settings:
    settings: Settings = double_settings(tmp_path, double, auth="accounts")
    return settings


def _share(live: Live, role: str) -> tuple[int, int]:
    """Mara's adventure, with Tove joined as ``role``: its id and Tove's user id."""
    create_account(live, MARA)
    create_account(live, TOVE)
    with signed_in_api(live, MARA) as mara:
        persona = {"name": "Mara Quill"}
        made = mara.post("/api/adventures", json={"title": "The Quay", "persona": persona})
        aid = int(made.json()["id"])
        code = mara.post(f"/api/adventures/{aid}/invites", json={"role": role}).json()["code"]
    with signed_in_api(live, TOVE) as tove:
        joined = tove.post(f"/api/invites/{code}/join", json={"persona": {"name": "Tove Lind"}})
        assert joined.status_code == 200, joined.text
        tove_id = tove.get(f"/api/adventures/{aid}/members").json()[1]["user_id"]
    return aid, tove_id


def _act(page: Any, text: str) -> None:
    box = page.get_by_label("Your action")
    box.fill(text)
    box.press("Enter")


def test_two_browsers_play_one_adventure_and_see_each_other_live(
    live: Live, page: Any, browser: Any
) -> None:
    aid, _ = _share(live, "player")
    sign_in(page, live, MARA, f"/adventures/{aid}")
    expect(page.locator("#panels")).to_be_visible()  # the host's page has every panel
    with another_browser(browser) as other:
        sign_in(other, live, TOVE, f"/adventures/{aid}")
        expect(other.locator("#panels")).to_have_count(0)  # a member's: the story alone
        expect(other.get_by_role("button", name="Undo")).to_have_count(0)

        # Who is here, and who is writing, under the title of each page.
        expect(page.locator("#presence")).to_have_text(re.compile(r"^Here: .*Tove Lind"))
        other.get_by_label("Your action").fill("grab my")
        expect(page.locator("#presence")).to_contain_text("Tove Lind is writing…")
        expect(other.locator("#presence")).not_to_contain_text("writing")  # not of oneself
        live.double.script("The rope pulls taut.")
        _act(other, "grab my rope")
        for seen in (other, page):  # the player's own page, and the host's, live
            expect(
                seen.locator(STORY).filter(has_text="> Tove Lind grabs their rope.")
            ).to_be_visible()
            expect(seen.locator(STORY).filter(has_text="The rope pulls taut.")).to_be_visible()
        expect(page.locator("#presence")).not_to_contain_text("writing")  # sent: done writing

        live.double.script("Gulls lift from the quay.")
        _act(page, "wave")
        for seen in (page, other):
            expect(seen.locator(STORY).filter(has_text="> Mara Quill waves.")).to_be_visible()
            last = seen.locator(STORY).last.locator(".entry-text")
            expect(last).to_have_text("Gulls lift from the quay.")

        # The host's World panel: where the other player's character stands, by name.
        live.double.script("Stalls crowd the square.")
        _act(other, "walk into the Salt Market")
        expect(page.locator(STORY).filter(has_text="Stalls crowd the square.")).to_be_visible()
    panel = open_tab(live, page, aid, "World")
    expect(panel.get_by_text("Location (Mara Quill)", exact=True)).to_be_visible()
    expect(panel.locator(".world-player")).to_contain_text(
        "Tove Lind — at the Salt Market · carrying"
    )
    # Insights of Tove's turn: it addressed no one, so it was read as Tove's.
    with signed_in_api(live, MARA) as mara:
        actions = mara.get(f"/api/adventures/{aid}/actions").json()["actions"]
    reply = actions[-1]
    assert reply["text"] == "Stalls crowd the square."
    dialog = open_insights(page, {"actionId": reply["id"]})
    part = dialog.locator('.ins-part[data-part="witness"]')
    expect(part.locator(".ins-witness-who")).to_contain_text("Tove Lind — playing this turn")


def test_a_viewer_reads_without_acting_and_a_removal_is_told(live: Live, page: Any) -> None:
    aid, tove_id = _share(live, "viewer")
    sign_in(page, live, TOVE, f"/adventures/{aid}")
    expect(page.locator("#story")).to_be_visible()
    expect(page.get_by_label("Your action")).to_be_hidden()
    expect(page.get_by_role("button", name="Retry")).to_have_count(0)
    with signed_in_api(live, MARA) as mara:
        assert mara.delete(f"/api/adventures/{aid}/members/{tove_id}").status_code == 200
    expect(page.get_by_text("You are no longer a member of this adventure.")).to_be_visible()


def test_an_action_sent_during_anothers_reply_waits_its_turn(
    live: Live, page: Any, browser: Any
) -> None:
    """Tove's reply is being written when Mara acts: Mara's page says her action waits and
    keeps it unsaved in the box; it is answered after Tove's, in that order on both pages."""
    aid, _ = _share(live, "player")
    sign_in(page, live, MARA, f"/adventures/{aid}")
    first = "The tide turns over the stones below the old lamp, slow and grey and cold."
    with another_browser(browser) as other:
        sign_in(other, live, TOVE, f"/adventures/{aid}")
        live.double.chunk_delay = 0.2
        live.double.script(first, "The bell answers.")
        _act(other, "watch the tide")
        expect(page.get_by_text("The narrator is answering Tove Lind.")).to_be_visible()
        # Mara's page shows Tove's reply as it is written, before it is saved.
        expect(page.locator(".others-reply")).to_contain_text("The tide turns")
        _act(page, "ring the bell")
        expect(page.get_by_text("Waiting for 1 turn ahead of yours…")).to_be_visible()
        expect(page.get_by_label("Your action")).to_have_value("ring the bell")
        for seen in (page, other):
            last = seen.locator(STORY).last.locator(".entry-text")
            expect(last).to_have_text("The bell answers.", timeout=20_000)
            texts = [t.strip() for t in seen.locator(STORY).all_inner_texts()]
            order = [
                next(i for i, t in enumerate(texts) if part in t)
                for part in ("Tove Lind watches the tide.", first, "Mara Quill rings the bell.")
            ]
            assert order == sorted(order), texts


def test_the_host_shares_from_the_people_panel(live: Live, page: Any) -> None:
    """The host makes an invite link (shown once), sees who joined as it happens, changes
    their role, sets round-robin turns and removes them, all from the People panel."""
    create_account(live, MARA)
    create_account(live, TOVE)
    with signed_in_api(live, MARA) as mara:
        made = mara.post("/api/adventures", json={"title": "The Quay"})
        aid = int(made.json()["id"])
    sign_in(page, live, MARA, f"/adventures/{aid}")
    page.get_by_role("tab", name="People").click()
    panel = page.locator("#panel-people")
    expect(panel.get_by_text("No invites yet.")).to_be_visible()
    panel.get_by_label("Uses").fill("2")
    panel.get_by_role("button", name="Make an invite link").click()
    link = panel.get_by_label("Invite link")
    expect(link).to_have_value(re.compile(r"/join#\S{20,}$"))
    code = link.input_value().split("#", 1)[1]
    expect(panel.get_by_text("2 uses left", exact=False)).to_be_visible()
    with signed_in_api(live, TOVE) as tove:
        joined = tove.post(f"/api/invites/{code}/join", json={"persona": {"name": "Tove Lind"}})
        assert joined.status_code == 200, joined.text
    person = panel.locator(".person").filter(has_text="as Tove Lind")
    expect(person).to_be_visible()  # told by the feed, no reload
    expect(panel.get_by_text("1 use left", exact=False)).to_be_visible()
    person.get_by_label(re.compile("Role of")).select_option("viewer")
    expect(page.get_by_text(re.compile("is now a viewer"))).to_be_visible()
    panel.get_by_label("Round-robin: each player acts once per round").check()
    expect(page.get_by_text("Players now take turns round-robin.")).to_be_visible()
    with signed_in_api(live, MARA) as mara:
        members = mara.get(f"/api/adventures/{aid}/members").json()
        assert [m["role"] for m in members] == ["host", "viewer"]
        assert mara.get(f"/api/adventures/{aid}").json()["turn_order"] == "round_robin"
    person.get_by_role("button", name=re.compile("^Remove")).click()
    panel.get_by_role("button", name="Yes, remove").click()
    expect(panel.locator(".person")).to_have_count(1)


def test_a_cohosts_page_has_the_story_tools_and_panels_but_not_the_people(
    live: Live, page: Any
) -> None:
    aid, tove_id = _share(live, "player")
    with signed_in_api(live, MARA) as mara:
        made = mara.patch(f"/api/adventures/{aid}/members/{tove_id}", json={"role": "cohost"})
        assert made.status_code == 200, made.text
    sign_in(page, live, TOVE, f"/adventures/{aid}")
    expect(page.locator("#panels")).to_be_visible()
    expect(page.get_by_role("button", name="Undo")).to_be_visible()
    expect(page.get_by_role("tab", name="Memory")).to_be_visible()
    expect(page.get_by_role("tab", name="People")).to_have_count(0)  # sharing is the host's
