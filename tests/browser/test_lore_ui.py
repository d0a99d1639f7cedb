"""Other tools' lore in the browser: the Cards panel's "Import lore…" previews a file (the
report, totals first, and the cards it makes) and keeps nothing until the player confirms;
its reading options read the file again; "Export cards…" downloads a file the importer reads
back; the adventures page starts an adventure from a character card with the greeting the
player chose. A refused file shows the server's message, and markup in a file is text."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from playwright.sync_api import expect
from tests.browser.conftest import Live
from tests.kit.browser import open_tab
from tests.services.lore.builders import FIXTURES, fixture

OCTETS = {"Content-Type": "application/octet-stream"}
WORLD_INFO = FIXTURES / "sillytavern_world_info.json"
CHARACTER = FIXTURES / "character_card_v2.json"
LEVELS = ("refused", "changed", "lost", "info")
XSS = '<img src=x onerror="window.__pwned = 1">'
FIELDS = ("name", "type", "keywords", "entry", "always_on", "secondary_keywords", "secondary_rule")


def dry_run(live: Live, aid: int, data: bytes, name: str, **params: str) -> dict[str, Any]:
    answer = live.api.post(
        f"/api/adventures/{aid}/lore/import",
        params={"filename": name, "dry_run": "true", **params},
        content=data,
        headers=OCTETS,
    )
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def stored_cards(live: Live, aid: int) -> list[dict[str, Any]]:
    cards: list[dict[str, Any]] = live.api.get(f"/api/adventures/{aid}/cards").json()
    return cards


def same(cards: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    return [tuple(json.dumps(c[k]) for k in FIELDS) for c in cards]


def choose_lore(panel: Any, file: Any) -> Any:
    """Pick a file with the Cards panel's "Import lore…" and return its preview."""
    expect(panel.get_by_role("button", name="Import lore…")).to_be_visible()
    panel.get_by_label("Lore file to import").set_input_files(file)
    return panel.locator("section.lore-preview")


def expect_report(preview: Any, report: dict[str, Any]) -> None:
    """The totals come first, then each level's items (message and path) in order."""
    shown = preview.locator(".lore-report")
    expect(shown.locator(":scope > *").first).to_have_class(re.compile(r"\blore-totals\b"))
    totals = shown.locator(".lore-total")
    expect(totals).to_have_count(5)
    for index, key in enumerate(("cards", *LEVELS)):
        expect(totals.nth(index)).to_contain_text(str(report["totals"][key]))
        expect(totals.nth(index)).to_contain_text(key if key != "cards" else "card")
    levels = [lv for lv in LEVELS if any(i["level"] == lv for i in report["items"])]
    sections = shown.locator("section.lore-level")
    expect(sections).to_have_count(len(levels))
    for index, level in enumerate(levels):
        section = sections.nth(index)
        expect(section).to_have_attribute("data-level", level)
        items = [i for i in report["items"] if i["level"] == level]
        expect(section.locator(".lore-message")).to_have_text([i["message"] for i in items])
        paths = [i["path"] for i in items if i["path"]]
        expect(section.locator(".lore-path")).to_have_text(paths)


def test_the_cards_panel_previews_a_lorebook_and_keeps_nothing_until_confirmed(
    live: Live, page: Any
) -> None:
    aid = live.adventure(title="Eldoria", opening="The gates open.")["id"]
    expected = dry_run(live, aid, WORLD_INFO.read_bytes(), WORLD_INFO.name)
    panel = open_tab(live, page, aid, "Cards")
    preview = choose_lore(panel, str(WORLD_INFO))
    expect(preview.locator(".lore-format")).to_have_text("Read as SillyTavern World Info.")
    expect_report(preview, expected["report"])
    assert expected["report"]["totals"]["refused"] > 0 and expected["report"]["totals"]["lost"] > 0

    shown = preview.locator("li.lore-card")
    expect(shown.locator(".lore-card-name")).to_have_text([c["name"] for c in expected["cards"]])
    eldoria = shown.filter(has=page.locator(".lore-card-name", has_text="Eldoria"))
    expect(eldoria.locator(".lore-card-secondary")).to_have_text("With all of: war, siege")
    expect(eldoria.locator(".lore-card-keywords")).to_have_text("Keywords: Eldoria, kingdom, realm")
    rules = shown.filter(has=page.locator(".lore-card-name", has_text="House rules"))
    expect(rules.locator(".lore-always")).to_have_text("always on")
    expect(rules.locator(".lore-instruction")).to_be_visible()
    assert stored_cards(live, aid) == []  # the preview keeps nothing
    assert live.api.get(f"/api/adventures/{aid}").json()["ai_instructions"] == ""

    count = len(expected["cards"])
    preview.get_by_role("button", name=f"Import {count} cards").click()
    expect(preview).to_have_count(0)
    expect(panel.locator("li.card-item")).to_have_count(count)
    expect(page.locator("#status")).to_contain_text(f"Imported {count} cards")
    stored = stored_cards(live, aid)
    assert sorted(same(stored)) == sorted(same(expected["cards"]))  # exactly what it showed
    listed = panel.locator("li.card-item .card-name")
    expect(listed).to_have_text([c["name"] for c in stored])


def test_an_option_reads_the_file_again_and_cancel_keeps_nothing(live: Live, page: Any) -> None:
    aid = live.adventure(title="Eldoria")["id"]
    data = WORLD_INFO.read_bytes()
    plain = dry_run(live, aid, data, WORLD_INFO.name)
    disabled = dry_run(live, aid, data, WORLD_INFO.name, include_disabled="true")
    both = dry_run(
        live, aid, data, WORLD_INFO.name, include_disabled="true", move_instructions="true"
    )
    assert len(disabled["cards"]) == len(plain["cards"]) + 1
    panel = open_tab(live, page, aid, "Cards")
    preview = choose_lore(panel, str(WORLD_INFO))
    names = preview.locator("li.lore-card .lore-card-name")
    expect(names).to_have_text([c["name"] for c in plain["cards"]])
    expect(preview.locator(".lore-disabled")).to_have_count(0)

    preview.get_by_label("Include disabled entries").check()
    expect(names).to_have_text([c["name"] for c in disabled["cards"]])
    ghost = preview.locator("li.lore-card").filter(has_text="Ghost")
    expect(ghost.locator(".lore-disabled")).to_have_text("disabled in the file")
    expect_report(preview, disabled["report"])
    button = f"Import {len(disabled['cards'])} cards"
    expect(preview.get_by_role("button", name=button)).to_be_enabled()

    preview.get_by_label("Move instruction-like entries to AI Instructions").check()
    expect(names).to_have_text([c["name"] for c in both["cards"]])
    expect(preview.locator(".lore-instruction")).to_have_count(0)
    expect_report(preview, both["report"])

    preview.get_by_role("button", name="Cancel").click()
    expect(preview).to_have_count(0)
    assert stored_cards(live, aid) == []
    assert live.api.get(f"/api/adventures/{aid}").json()["ai_instructions"] == ""

    # Confirmed with the options ticked: the moved entry is in AI Instructions, not a card.
    preview = choose_lore(panel, str(WORLD_INFO))
    preview.get_by_label("Include disabled entries").check()
    preview.get_by_label("Move instruction-like entries to AI Instructions").check()
    expect(names).to_have_text([c["name"] for c in both["cards"]])
    preview.get_by_role("button", name=f"Import {len(both['cards'])} cards").click()
    expect(panel.locator("li.card-item")).to_have_count(len(both["cards"]))
    assert sorted(same(stored_cards(live, aid))) == sorted(same(both["cards"]))
    instructions = live.api.get(f"/api/adventures/{aid}").json()["ai_instructions"]
    assert "Always write in present tense." in instructions
    # ...and the Plot panel shows them without a reload.
    page.get_by_role("tab", name="Plot").click()
    plot = page.get_by_role("tabpanel", name="Plot")
    expect(plot.locator("[data-component=ai_instructions]")).to_contain_text(
        "Always write in present tense."
    )


def test_export_downloads_files_the_importer_reads_back(live: Live, page: Any) -> None:
    aid = live.adventure(title="Vale")["id"]
    made = live.api.post(
        f"/api/adventures/{aid}/lore/import",
        params={"filename": WORLD_INFO.name},
        content=WORLD_INFO.read_bytes(),
        headers=OCTETS,
    )
    assert made.status_code == 200, made.text
    stored = stored_cards(live, aid)
    panel = open_tab(live, page, aid, "Cards")
    expect(panel.locator("li.card-item")).to_have_count(len(stored))
    panel.get_by_text("Export cards…").click()
    links = panel.get_by_role("list", name="Export the cards as").get_by_role("link")
    expect(links).to_have_count(4)
    for label in (
        "AI Dungeon story cards",
        "SillyTavern World Info",
        "Character Card V3 lorebook",
        "NovelAI lorebook",
    ):
        with page.expect_download() as info:
            links.filter(has_text=label).click()
        download = info.value
        name = download.suggested_filename
        assert name.startswith("vale"), (label, name)
        data = Path(download.path()).read_bytes()
        back = dry_run(live, aid, data, name)
        assert {c["name"] for c in back["cards"]} == {c["name"] for c in stored}, label
    assert len(stored_cards(live, aid)) == len(stored)  # exporting changes nothing


def test_an_adventure_starts_from_a_character_card_with_the_chosen_greeting(
    live: Live, page: Any
) -> None:
    preview_api = live.api.post(
        "/api/adventures/from-file",
        params={"filename": CHARACTER.name, "dry_run": "true"},
        content=CHARACTER.read_bytes(),
        headers=OCTETS,
    ).json()
    [greeting] = preview_api["alternate_greetings"]
    page.goto(live.url + "/")
    expect(page.get_by_role("button", name="Start from a file…")).to_be_visible()
    page.get_by_label("A file to start an adventure from").set_input_files(str(CHARACTER))
    form = page.get_by_role("form", name=f"New adventure from “{CHARACTER.name}”")
    expect(form.locator(".lore-title")).to_have_text("Seren Ashdown")
    expect(form.locator(".lore-format")).to_have_text("Read as Character Card V2.")
    opening = form.get_by_role("radio", name="The opening")
    expect(opening).to_be_checked()
    expect(form.locator(".lore-greeting .opening")).to_have_text([preview_api["opening"], greeting])
    components = form.locator(".lore-components dd")
    expect(components).to_have_text(
        [
            preview_api["ai_instructions"],
            preview_api["plot_essentials"],
            preview_api["authors_note"],
        ]
    )
    cards = len(preview_api["cards"])
    expect(form.locator(".lore-cards-box summary")).to_have_text(
        f"{cards} cards for the Cards panel"
    )
    expect_report(form, preview_api["report"])
    assert live.api.get("/api/adventures").json() == []  # the preview makes nothing

    # An option reads the file again and keeps the chosen greeting.
    form.get_by_role("radio", name="Alternate greeting 1").check()
    form.get_by_label("Include disabled entries").check()
    expect(form.get_by_role("button", name="Create adventure")).to_be_enabled()
    expect(form.get_by_role("radio", name="Alternate greeting 1")).to_be_checked()
    form.get_by_role("button", name="Create adventure").click()
    expect(page).to_have_url(re.compile(r"/adventures/\d+$"))
    aid = int(page.url.rsplit("/", 1)[1])
    expect(page.locator("#story .entry-text").first).to_have_text(greeting)
    detail = live.api.get(f"/api/adventures/{aid}").json()
    assert detail["title"] == "Seren Ashdown"
    assert detail["head"]["text"] == greeting
    assert detail["plot_essentials"] == preview_api["plot_essentials"]
    assert {c["name"] for c in stored_cards(live, aid)} >= {"Seren Ashdown"}


def test_a_refused_file_shows_the_message_and_keeps_nothing(live: Live, page: Any) -> None:
    aid = live.adventure(title="Vale")["id"]
    bad = json.dumps({"hello": "world"}).encode()
    refusal = live.api.post(
        f"/api/adventures/{aid}/lore/import",
        params={"filename": "hello.json", "dry_run": "true"},
        content=bad,
        headers=OCTETS,
    )
    assert refusal.status_code == 400
    panel = open_tab(live, page, aid, "Cards")
    preview = choose_lore(
        panel, {"name": "hello.json", "mimeType": "application/json", "buffer": bad}
    )
    shown = preview.locator(".lore-refusal")
    expect(shown).to_contain_text("“hello.json” was not read; nothing was kept.")
    expect(shown.locator(".lore-refusal-message")).to_have_text(refusal.json()["error"]["message"])
    expect(preview.get_by_role("button", name="Import")).to_be_disabled()
    preview.get_by_role("button", name="Cancel").click()
    assert stored_cards(live, aid) == []

    # A lore-only file cannot start an adventure: the message, in the preview area.
    lore_only = live.api.post(
        "/api/adventures/from-file",
        params={"filename": WORLD_INFO.name, "dry_run": "true"},
        content=WORLD_INFO.read_bytes(),
        headers=OCTETS,
    )
    assert lore_only.status_code == 400
    page.goto(live.url + "/")
    page.get_by_label("A file to start an adventure from").set_input_files(str(WORLD_INFO))
    form = page.get_by_role("form", name=f"New adventure from “{WORLD_INFO.name}”")
    expect(form.locator(".lore-refusal-message")).to_have_text(lore_only.json()["error"]["message"])
    expect(form.get_by_role("button", name="Create adventure")).to_be_disabled()
    form.get_by_role("button", name="Cancel").click()
    expect(page.get_by_role("button", name="Start from a file…")).to_be_focused()
    assert [a["id"] for a in live.api.get("/api/adventures").json()] == [aid]


def test_markup_in_a_file_is_shown_as_text(live: Live, page: Any) -> None:
    aid = live.adventure(title="Vale")["id"]
    hostile = [
        {
            "title": XSS,
            "type": "character",
            "keys": "intruder",
            "value": "<script>window.__pwned = 2</script>",
        },
    ]
    panel = open_tab(live, page, aid, "Cards")
    preview = choose_lore(
        panel,
        {
            "name": f"{XSS}.json",
            "mimeType": "application/json",
            "buffer": json.dumps(hostile).encode(),
        },
    )
    expect(preview.locator(".lore-card-name")).to_have_text(XSS)
    expect(preview.locator(".lore-card-entry")).to_have_text("<script>window.__pwned = 2</script>")
    expect(preview.locator("h3")).to_have_text(f"Import “{XSS}.json”")
    assert panel.locator("img, script").count() == 0
    preview.get_by_role("button", name="Import 1 card").click()
    expect(panel.locator("li.card-item .card-name")).to_have_text([XSS])
    assert page.locator("#panels img, #panels script").count() == 0
    assert page.evaluate("window.__pwned") is None

    card = json.loads(fixture("character_card_v2.json"))
    card["data"]["name"] = XSS
    card["data"]["first_mes"] = '<img src=y onerror="window.__pwned = 3">Hello.'
    page.goto(live.url + "/")
    page.get_by_label("A file to start an adventure from").set_input_files(
        {"name": "card.json", "mimeType": "application/json", "buffer": json.dumps(card).encode()}
    )
    form = page.get_by_role("form", name="New adventure from “card.json”")
    expect(form.locator(".lore-title")).to_have_text(XSS)
    expect(form.locator(".lore-greeting .opening").first).to_contain_text("<img src=y")
    assert page.locator("#new-adventure-root img").count() == 0
    assert page.evaluate("window.__pwned") is None


# -- Files dropped on the page: the Cards panel and the adventures page ----------------------

DROP_HINT = "Drop to preview the import"
NEW_DROP_HINT = "Drop to preview a new adventure from this file"
HIGHLIGHT = re.compile(r"\bdrop-target\b")


def data_transfer(
    page: Any, files: list[Path] | None = None, types: dict[str, str] | None = None
) -> Any:
    """A DataTransfer built in the page: the files (their text, their names) and any other
    data by type ({"text/plain": "…"})."""
    named = [[path.name, path.read_text(encoding="utf-8")] for path in files or []]
    return page.evaluate_handle(
        """([files, types]) => {
            const d = new DataTransfer();
            for (const [name, text] of files) {
                d.items.add(new File([text], name, {type: "application/json"}));
            }
            for (const [type, value] of Object.entries(types)) d.setData(type, value);
            return d;
        }""",
        [named, types or {}],
    )


def drag(target: Any, kind: str, transfer: Any) -> bool:
    """Dispatch a drag event (`dragenter`, `dragover`, `dragleave`, `drop`) carrying
    `transfer` at the target; True when the page prevented the browser's own handling."""
    prevented: bool = target.evaluate(
        """(el, [kind, transfer]) => {
            const event = new DragEvent(kind, {
                bubbles: true, cancelable: true, composed: true, dataTransfer: transfer,
            });
            el.dispatchEvent(event);
            return event.defaultPrevented;
        }""",
        [kind, transfer],
    )
    return prevented


def test_a_file_dropped_on_the_cards_panel_opens_the_import_preview(live: Live, page: Any) -> None:
    aid = live.adventure(title="Eldoria")["id"]
    expected = dry_run(live, aid, WORLD_INFO.read_bytes(), WORLD_INFO.name)
    panel = open_tab(live, page, aid, "Cards")
    # What the button shows, to compare with what the drop shows.
    chosen = choose_lore(panel, str(WORLD_INFO))
    expect(chosen.locator("li.lore-card")).to_have_count(len(expected["cards"]))
    by_button = chosen.inner_text()
    chosen.get_by_role("button", name="Cancel").click()
    expect(chosen).to_have_count(0)

    transfer = data_transfer(page, [WORLD_INFO])
    assert drag(panel, "dragenter", transfer)
    assert drag(panel.locator(".cards-list"), "dragover", transfer)  # the browser never opens it
    expect(panel).to_have_class(HIGHLIGHT)
    expect(panel.get_by_text(DROP_HINT)).to_be_visible()
    drag(panel, "dragleave", transfer)
    expect(panel).not_to_have_class(HIGHLIGHT)
    expect(page.get_by_text(DROP_HINT)).to_have_count(0)

    assert drag(panel, "dragover", transfer)
    expect(panel.get_by_text(DROP_HINT)).to_be_visible()
    assert drag(panel.get_by_role("button", name="Import lore…"), "drop", transfer)
    expect(page.get_by_text(DROP_HINT)).to_have_count(0)
    expect(panel).not_to_have_class(HIGHLIGHT)
    preview = panel.locator("section.lore-preview")
    expect(preview.locator("h3")).to_have_text(f"Import “{WORLD_INFO.name}”")
    expect(preview.locator(".lore-format")).to_have_text("Read as SillyTavern World Info.")
    expect_report(preview, expected["report"])
    names = preview.locator("li.lore-card .lore-card-name")
    expect(names).to_have_text([c["name"] for c in expected["cards"]])
    assert preview.inner_text() == by_button  # the same preview as the button's
    expect(preview.locator(".lore-drop-note")).to_have_count(0)
    assert stored_cards(live, aid) == []  # the drop keeps nothing
    assert page.url == f"{live.url}/adventures/{aid}"

    count = len(expected["cards"])
    preview.get_by_role("button", name=f"Import {count} cards").click()
    expect(preview).to_have_count(0)
    expect(panel.locator("li.card-item")).to_have_count(count)
    assert sorted(same(stored_cards(live, aid))) == sorted(same(expected["cards"]))
    expect(panel.get_by_role("button", name="Import lore…")).to_be_focused()


def test_text_dropped_does_nothing_and_a_file_dropped_elsewhere_is_refused(
    live: Live, page: Any
) -> None:
    aid = live.adventure(title="Vale", opening="The gates open.")["id"]
    panel = open_tab(live, page, aid, "Cards")
    expect(panel.get_by_role("button", name="Import lore…")).to_be_visible()
    for types in (
        {"text/plain": "Eldoria is a kingdom."},
        {"text/uri-list": "https://example.com/lore.json", "text/plain": "a link"},
    ):
        transfer = data_transfer(page, types=types)
        drag(panel, "dragenter", transfer)
        drag(panel, "dragover", transfer)
        expect(panel).not_to_have_class(HIGHLIGHT)
        assert drag(panel, "drop", transfer)  # refused there: a link never navigates away
    # A file dropped beside the Cards panel (on the story) opens nothing and never the file.
    transfer = data_transfer(page, [WORLD_INFO])
    story = page.locator("#story")
    assert drag(story, "dragover", transfer)
    expect(page.get_by_text(DROP_HINT)).to_have_count(0)
    assert drag(story, "drop", transfer)
    page.wait_for_timeout(300)
    expect(page.locator("section.lore-preview")).to_have_count(0)
    assert page.url == f"{live.url}/adventures/{aid}"
    assert stored_cards(live, aid) == []

    # The adventures page: text does nothing; a file dropped before the page is the
    # chooser's target is refused there too.
    page.goto(live.url + "/")
    expect(page.get_by_role("button", name="Start from a file…")).to_be_visible()
    target = page.locator("#adventures-page")
    text = data_transfer(page, types={"text/plain": "A character card"})
    drag(target, "dragover", text)
    expect(target).not_to_have_class(HIGHLIGHT)
    assert drag(target, "drop", text)
    page.wait_for_timeout(300)
    expect(page.locator("form.lore-preview")).to_have_count(0)
    assert drag(page.locator("header.topbar"), "drop", data_transfer(page, [CHARACTER]))
    page.wait_for_timeout(300)
    expect(page.locator("form.lore-preview")).to_have_count(0)
    assert page.url == live.url + "/"
    assert [a["id"] for a in live.api.get("/api/adventures").json()] == [aid]


def test_files_dropped_on_the_adventures_page_preview_the_first(live: Live, page: Any) -> None:
    preview_api = live.api.post(
        "/api/adventures/from-file",
        params={"filename": CHARACTER.name, "dry_run": "true"},
        content=CHARACTER.read_bytes(),
        headers=OCTETS,
    ).json()
    page.goto(live.url + "/")
    expect(page.get_by_role("button", name="Start from a file…")).to_be_visible()
    target = page.locator("#adventures-page")
    transfer = data_transfer(page, [CHARACTER, WORLD_INFO])
    assert drag(page.locator("#adventures-root"), "dragenter", transfer)
    assert drag(page.locator("#adventures-root"), "dragover", transfer)
    expect(target).to_have_class(HIGHLIGHT)
    expect(target.get_by_text(NEW_DROP_HINT)).to_be_visible()
    assert drag(page.locator("#new-adventure-heading"), "drop", transfer)
    expect(page.get_by_text(NEW_DROP_HINT)).to_have_count(0)
    expect(target).not_to_have_class(HIGHLIGHT)

    form = page.get_by_role("form", name=f"New adventure from “{CHARACTER.name}”")
    expect(form.locator(".lore-drop-note")).to_have_text(
        f"2 files were dropped: only the first, “{CHARACTER.name}”, is read."
    )
    expect(form.locator(".lore-format")).to_have_text("Read as Character Card V2.")
    expect(form.locator(".lore-title")).to_have_text(preview_api["title"])
    greetings = [preview_api["opening"], *preview_api["alternate_greetings"]]
    expect(form.locator(".lore-greeting .opening")).to_have_text(greetings)
    expect_report(form, preview_api["report"])
    expect(form.get_by_role("button", name="Create adventure")).to_be_enabled()
    assert live.api.get("/api/adventures").json() == []  # the preview makes nothing

    # Back to the chooser: a single file dropped then says nothing about others.
    form.get_by_role("button", name="Cancel").click()
    expect(page.get_by_role("button", name="Start from a file…")).to_be_focused()
    single = data_transfer(page, [CHARACTER])
    drag(target, "dragover", single)
    drag(target, "drop", single)
    form = page.get_by_role("form", name=f"New adventure from “{CHARACTER.name}”")
    expect(form.locator(".lore-title")).to_have_text(preview_api["title"])
    expect(form.locator(".lore-drop-note")).to_have_count(0)
    form.get_by_role("button", name="Create adventure").click()
    expect(page).to_have_url(re.compile(r"/adventures/\d+$"))
    assert [a["title"] for a in live.api.get("/api/adventures").json()] == [preview_api["title"]]
