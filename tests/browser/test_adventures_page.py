"""The adventures page in a real browser: the list, starting from a scenario or a blank page,
import, export and delete, each checked against what the server stored."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from playwright.sync_api import expect
from tests.browser.conftest import Live, shoot

XSS = '<img src=x onerror="window.__pwned = 1">'


def row(page: Any, title: str) -> Any:
    return page.locator("#adventures-root .adv").filter(
        has=page.get_by_role("heading", name=title, exact=True)
    )


def stored(live: Live) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = live.api.get("/api/adventures").json()
    return rows


def test_the_list_shows_each_adventure_with_its_story_and_length(live: Live, page: Any) -> None:
    tale = live.adventure(scenario="lantern-coast")
    live.double.script("The lamps gutter.", "A bell rings twice.")
    live.turn(tale["id"], "light the lamp")
    live.turn(tale["id"], "listen")
    live.adventure(title="A quiet notebook")
    page.goto(live.url + "/")
    expect(page.locator("#adventures-root .adv")).to_have_count(2)
    lantern = row(page, "The Lantern Coast")
    expect(lantern.locator(".adv-meta")).to_contain_text("The Lantern Coast")
    expect(lantern.locator(".adv-meta")).to_contain_text("Last played")
    expect(lantern.locator(".adv-meta")).to_contain_text("5 passages")
    notebook = row(page, "A quiet notebook")
    expect(notebook.locator(".adv-meta")).to_contain_text("Your own story")
    expect(notebook.locator(".adv-meta")).to_contain_text("Started")
    expect(notebook.locator(".adv-meta")).to_contain_text("nothing written yet")
    # Last played first: the notebook was made after the other's last turn.
    expect(page.locator("#adventures-root .adv-title").first).to_have_text("A quiet notebook")
    shoot(page, "adventures")
    lantern.get_by_role("link", name="Play").click()
    expect(page).to_have_url(f"{live.url}/adventures/{tale['id']}")


def test_a_new_player_starts_a_scenario_in_one_click(live: Live, page: Any) -> None:
    page.goto(live.url + "/")
    expect(page.locator("#adventures-root")).to_contain_text("No adventures yet.")
    page.get_by_role("button", name="Start “Death at Ashford Manor”").click()
    expect(page).to_have_url(re.compile(r"/adventures/\d+$"))
    [created] = stored(live)
    assert page.url.endswith(f"/adventures/{created['id']}")
    assert created["scenario"] == "ashford-manor" and created["title"] == "Death at Ashford Manor"
    detail = live.api.get(f"/api/adventures/{created['id']}").json()
    assert detail["persona"]["name"] == "Evelyn Marsh"  # the scenario's own character


def test_start_a_scenario_with_your_own_character(live: Live, page: Any) -> None:
    page.goto(live.url + "/")
    # The list above renders after the scenarios and moves them: click once it is there.
    expect(page.locator("#adventures-root")).to_contain_text("No adventures yet.")
    page.get_by_role("button", name="Choose your character for “The Lantern Coast”").click()
    form = page.get_by_role("form", name="New adventure: The Lantern Coast")
    expect(form).to_contain_text("fantasy")
    expect(form).to_contain_text("The scenario suggests Tamsin Reed (she/her)")
    expect(form.get_by_label("Name")).to_have_value("Tamsin Reed")
    form.get_by_label("Name").fill("Ilse Varga")
    form.get_by_label("Pronouns").fill("she/her")
    form.get_by_label("Description").fill("A salt-cured smuggler who owes the lamplighters a debt.")
    form.get_by_label("Title").fill("Ilse on the coast")
    shoot(page, "new-adventure")
    form.get_by_role("group").get_by_text("Read the opening").click()
    expect(form.locator(".opening")).to_contain_text("You reach Gullreach")
    form.get_by_role("button", name="Start the adventure").click()
    expect(page).to_have_url(re.compile(r"/adventures/\d+$"))
    adventure_id = int(page.url.rsplit("/", 1)[1])
    detail = live.api.get(f"/api/adventures/{adventure_id}").json()
    assert detail["title"] == "Ilse on the coast" and detail["scenario"] == "lantern-coast"
    assert detail["persona"] == {
        "name": "Ilse Varga",
        "pronouns": "she/her",
        "description": "A salt-cured smuggler who owes the lamplighters a debt.",
    }
    assert detail["head"]["text"].startswith("You reach Gullreach")
    assert detail["auto_summarize"] is True and detail["memory_bank"] is True


def test_a_blank_adventure_keeps_its_plot_components(live: Live, page: Any) -> None:
    page.goto(live.url + "/")
    expect(page.locator("#adventures-root")).to_contain_text("No adventures yet.")
    page.get_by_role("button", name="Start from a blank page…").click()
    form = page.get_by_role("form", name="New adventure: a blank page")
    form.get_by_label("Title").fill("   ")
    form.get_by_role("button", name="Start the adventure").click()
    expect(page.locator("#errors")).to_contain_text("'title' must not be empty")
    assert stored(live) == []
    form.get_by_label("Title").fill("The Salt Road")
    form.get_by_label("Opening").fill("The caravan halts where the road turns white with salt.")
    form.get_by_label("Name").fill("Oren")
    form.get_by_label("Pronouns").fill("he/him")
    form.get_by_label("AI Instructions").fill("Write in the second person, present tense.")
    form.get_by_label("Plot Essentials").fill("Salt is worth more than silver here.")
    form.get_by_label("Author's Note").fill("Keep it tense and dry.")
    form.get_by_label("Use the Memory Bank").uncheck()
    form.get_by_role("button", name="Start the adventure").click()
    expect(page).to_have_url(re.compile(r"/adventures/\d+$"))
    [created] = stored(live)
    detail = live.api.get(f"/api/adventures/{created['id']}").json()
    assert detail["title"] == "The Salt Road" and detail["scenario"] is None
    assert detail["ai_instructions"] == "Write in the second person, present tense."
    assert detail["plot_essentials"] == "Salt is worth more than silver here."
    assert detail["authors_note"] == "Keep it tense and dry."
    assert detail["persona"] == {"name": "Oren", "pronouns": "he/him", "description": ""}
    assert detail["memory_bank"] is False and detail["auto_summarize"] is True
    assert detail["head"]["text"] == "The caravan halts where the road turns white with salt."


def test_import_a_file_exported_from_another_adventure(
    live: Live, page: Any, tmp_path: Path
) -> None:
    source = live.adventure(scenario="drift-station")
    live.double.script("The airlock cycles.")
    live.turn(source["id"], "check the seals")
    exported = live.api.get(f"/api/adventures/{source['id']}/export").json()
    path = tmp_path / "drift.json"
    path.write_text(json.dumps(exported), encoding="utf-8")
    page.goto(live.url + "/")
    expect(page.locator("#adventures-root .adv")).to_have_count(1)
    page.get_by_label("Import a file").set_input_files(str(path))
    expect(page.locator("#adventures-root .adv")).to_have_count(2)
    expect(page.locator("#adventures-root .adv.fresh .adv-title")).to_have_text("Drift Station")
    expect(page.locator("#status")).to_contain_text("Imported “Drift Station”")
    ids = {a["id"] for a in stored(live)}
    [imported] = ids - {source["id"]}
    copy = live.api.get(f"/api/adventures/{imported}/export").json()
    assert copy["actions"] == exported["actions"] and copy["adventure"] == exported["adventure"]


def test_a_broken_file_is_refused_readably_and_adds_nothing(live: Live, page: Any) -> None:
    live.adventure(title="Only one")
    page.goto(live.url + "/")
    expect(page.locator("#adventures-root .adv")).to_have_count(1)
    picker = page.get_by_label("Import a file")
    not_json = {"name": "broken.json", "mimeType": "application/json", "buffer": b"{not json"}
    picker.set_input_files(not_json)
    expect(page.locator("#errors")).to_contain_text("“broken.json” is not a JSON file")
    wrong = {"format": "someone-else", "version": 1}
    refusal = live.api.post("/api/adventures/import", json=wrong)
    assert refusal.status_code == 400, refusal.text
    message = refusal.json()["error"]["message"]
    body = json.dumps(wrong).encode()
    picker.set_input_files({"name": "other.json", "mimeType": "application/json", "buffer": body})
    expect(page.locator("#errors")).to_contain_text(f"“other.json” was not imported: {message}")
    expect(page.locator("#adventures-root .adv")).to_have_count(1)
    assert [a["title"] for a in stored(live)] == ["Only one"]


def test_export_downloads_the_adventure_as_json(live: Live, page: Any) -> None:
    tale = live.adventure(title="Harbour / Nights", opening="Fog on the water.")
    page.goto(live.url + "/")
    with page.expect_download() as info:
        row(page, "Harbour / Nights").get_by_role("button", name="Export").click()
    download = info.value
    assert download.suggested_filename == "Harbour Nights.json"
    saved = json.loads(Path(download.path()).read_text(encoding="utf-8"))
    assert saved == live.api.get(f"/api/adventures/{tale['id']}/export").json()
    assert saved["adventure"]["title"] == "Harbour / Nights"
    assert [a["text"] for a in saved["actions"]] == ["Fog on the water."]


def test_delete_asks_first_and_cancel_keeps_it(live: Live, page: Any) -> None:
    doomed = live.adventure(title="Doomed voyage")
    kept = live.adventure(title="Safe harbour")
    page.goto(live.url + "/")
    target = row(page, "Doomed voyage")
    target.get_by_role("button", name="Delete").click()
    expect(target).to_contain_text("Delete “Doomed voyage” for good?")
    target.get_by_role("button", name="Cancel").click()
    expect(target.get_by_role("button", name="Delete")).to_be_visible()
    assert {a["id"] for a in stored(live)} == {doomed["id"], kept["id"]}
    target.get_by_role("button", name="Delete").click()
    page.keyboard.press("Escape")
    expect(target.get_by_role("button", name="Confirm")).to_have_count(0)
    target.get_by_role("button", name="Delete").click()
    target.get_by_role("button", name="Confirm").click()
    expect(page.locator("#adventures-root .adv")).to_have_count(1)
    expect(row(page, "Safe harbour")).to_be_visible()
    assert [a["id"] for a in stored(live)] == [kept["id"]]
    assert live.api.get(f"/api/adventures/{doomed['id']}").status_code == 404


def test_a_title_holding_markup_is_shown_as_text(live: Live, page: Any) -> None:
    live.adventure(title=XSS, persona={"name": XSS})
    page.goto(live.url + "/")
    title = page.locator("#adventures-root .adv-title")
    expect(title).to_have_text(XSS)
    assert page.locator("#adventures-root img").count() == 0
    row(page, XSS).get_by_role("button", name="Delete").click()
    expect(row(page, XSS)).to_contain_text(f"Delete “{XSS}” for good?")
    assert page.locator("main img").count() == 0
    assert page.evaluate("window.__pwned") is None
