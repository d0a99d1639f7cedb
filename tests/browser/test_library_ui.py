"""The knowledge library in the browser: the Library page uploads a file through its chooser
or a drop (an upload bar, then an embedding bar, then ready), searches with scores and
places, retries a failed source, deletes one after asking, and shows a refusal's message;
the play page's Knowledge tab attaches a source; Insights show the passage a turn used with
its source, place and scores. Markup in a file name or a passage is text.

What a page shows is compared with what the JSON API answers for the same thing.
"""

from __future__ import annotations

import re
import time
from typing import Any

from playwright.sync_api import expect
from tests.browser.conftest import Live, shoot
from tests.kit.browser import open_insights, open_tab
from tests.kit.library import BIBLE
from tests.kit.web import OCTETS

QUESTION = "I search for the Drowned Library and its copper doors"
GARBAGE_PDF = b"%PDF-1.7\n" + bytes(range(256)) * 8
XSS = '<img src=x onerror="window.__pwned = 1">'


def markdown(name: str, data: bytes = BIBLE) -> dict[str, Any]:
    return {"name": name, "mimeType": "text/markdown", "buffer": data}


def upload(live: Live, data: bytes, name: str) -> dict[str, Any]:
    made = live.api.post("/api/library", params={"filename": name}, content=data, headers=OCTETS)
    assert made.status_code == 201, made.text
    source: dict[str, Any] = made.json()
    return source


def wait_state(live: Live, source_id: int, state: str, timeout: float = 20.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        got: dict[str, Any] = live.api.get(f"/api/library/{source_id}").json()
        if got["state"] == state:
            return got
        assert time.monotonic() < deadline, got
        time.sleep(0.1)


def sources(live: Live) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = live.api.get("/api/library").json()["sources"]
    return listed


def watch_bars(page: Any) -> None:
    """Record every <progress> the uploads list draws and every value it takes (class, value,
    max), as it happens."""
    page.evaluate(
        """() => {
            window.__bars = [];
            const seen = (el) => window.__bars.push([el.className, el.value, el.max]);
            new MutationObserver((changes) => {
                for (const change of changes) {
                    if (change.type === "attributes") seen(change.target);
                    for (const node of change.addedNodes) {
                        if (!(node instanceof Element)) continue;
                        if (node.matches("progress")) seen(node);
                        node.querySelectorAll("progress").forEach(seen);
                    }
                }
            }).observe(document.getElementById("library-uploads"), {
                childList: true, subtree: true, attributes: true, attributeFilter: ["value"],
            });
        }"""
    )


def open_library(live: Live, page: Any) -> None:
    response = page.goto(live.url + "/library")
    assert response is not None and response.status == 200
    expect(page.get_by_role("heading", name="Your library")).to_be_visible()


def test_a_bible_is_uploaded_indexed_searched_and_deleted(live: Live, page: Any) -> None:
    open_library(live, page)
    expect(page.get_by_role("link", name="Library")).to_have_attribute("aria-current", "page")
    empty = page.locator(".lib-empty")
    expect(empty).to_contain_text("Your library is empty.")
    expect(empty).to_contain_text(".txt, .md, .html, .pdf or .epub files, up to 50 MB each")

    watch_bars(page)
    lists: list[str] = []
    page.on("request", lambda r: lists.append(r.url) if r.url.endswith("/api/library") else None)
    page.get_by_label("Files to add to the library").set_input_files(markdown("salt-coast.md"))
    line = page.locator("li.lib-upload")
    expect(line.locator(".lib-upload-name")).to_have_text("salt-coast.md")
    expect(line).to_have_attribute("data-state", "ready")
    expect(line.locator(".lib-upload-done")).to_contain_text("Ready")
    [stored] = sources(live)
    assert stored["state"] == "ready" and stored["embedded"] == stored["passage_count"] >= 3
    expect(line.locator(".lib-upload-kept")).to_contain_text(
        f"Kept as “The Salt Coast”: {stored['passage_count']} passages."
    )
    bars = page.evaluate("window.__bars")
    uploaded = [b for b in bars if "lib-upload-bar" in b[0]]
    embedding = [b for b in bars if "lib-embed-bar" in b[0]]
    # The upload's bar starts empty and ends full; the embedding bar starts from the answer to
    # the upload: nothing embedded yet.
    assert uploaded[0][1] == 0 and uploaded[-1][1:] == [100, 100], bars
    assert embedding and embedding[0][1:] == [0, stored["passage_count"]], bars

    item = page.locator(f'li.lib-source[data-source-id="{stored["id"]}"]')
    expect(item).to_have_attribute("data-state", "ready")
    expect(item.locator(".lib-title")).to_have_text("The Salt Coast")
    expect(item.locator(".lib-state")).to_have_text("Ready")
    expect(item.locator(".lib-filename")).to_have_text("salt-coast.md")
    expect(item.locator(".lib-kind")).to_have_text("Markdown")
    expect(item.locator(".lib-passages")).to_have_text(f"{stored['passage_count']} passages")
    expect(item.locator(".lib-attached")).to_have_text("attached to no adventure")
    expect(item.locator(".lib-embed-bar")).to_have_count(0)
    expect(item.get_by_role("button", name="Retry The Salt Coast")).to_be_hidden()

    # Nothing is indexing: the list is not asked for again.
    asked = len(lists)
    page.wait_for_timeout(3500)
    assert len(lists) == asked, lists

    found = live.api.get("/api/library/search", params={"q": "copper doors vault"}).json()
    best = found["hits"][0]
    assert best["heading_path"][-1] == "The Drowned Library"
    page.get_by_label("Words to search for").fill("copper doors vault")
    page.get_by_role("button", name="Search", exact=True).click()
    hits = page.locator("li.lib-hit")
    expect(hits).to_have_count(len(found["hits"]))
    first = hits.first
    expect(first.locator(".lib-hit-source")).to_have_text("The Salt Coast")
    expect(first.locator(".lib-hit-location")).to_have_text(best["location"])
    assert best["location"].endswith("Places › The Drowned Library")
    for name in ("final", "semantic", "lexical"):
        value = best[f"{name}_score"]
        expect(first.locator(f'[data-score="{name}"] .lib-score-value')).to_have_text(
            f"{value:.4f}"
        )
    expect(first.locator('[data-score="lexical"] .lib-score-rank')).to_have_text(
        f" (rank {best['lexical_rank']})"
    )
    expect(first.locator(".lib-hit-text")).to_have_text(best["text"])
    expect(page.locator(".lib-considered")).to_have_text(str(found["considered"]))
    shoot(page, "library")

    item.get_by_role("button", name="Delete The Salt Coast").click()
    expect(item.locator(".confirm-question")).to_have_text(
        "Delete “The Salt Coast” and its passages?"
    )
    item.get_by_role("button", name="Cancel").click()
    expect(item.get_by_role("button", name="Delete The Salt Coast")).to_be_focused()
    assert len(sources(live)) == 1
    item.get_by_role("button", name="Delete The Salt Coast").click()
    item.get_by_role("button", name="Yes, delete").click()
    expect(page.locator("li.lib-source")).to_have_count(0)
    expect(page.locator(".lib-empty")).to_be_visible()
    expect(page.locator("#status")).to_have_text("Deleted “The Salt Coast” from the library.")
    assert sources(live) == []


def drop(page: Any, target: str, files: list[tuple[str, bytes]]) -> bool:
    """Drop files (name, bytes) on the element `target` names, as a drag from the desktop
    would; True when the page kept the browser from handling the drop itself."""
    handled: bool = page.evaluate(
        """([selector, files]) => {
            const transfer = new DataTransfer();
            for (const [name, bytes] of files) {
                transfer.items.add(new File([new Uint8Array(bytes)], name));
            }
            const el = document.querySelector(selector);
            let prevented = true;
            for (const kind of ["dragenter", "dragover", "drop"]) {
                const event = new DragEvent(kind, {
                    bubbles: true, cancelable: true, composed: true, dataTransfer: transfer,
                });
                el.dispatchEvent(event);
                prevented = prevented && event.defaultPrevented;
            }
            return prevented;
        }""",
        [target, [[name, list(data)] for name, data in files]],
    )
    return handled


def test_dropped_files_are_uploaded_and_a_refused_one_shows_the_message(
    live: Live, page: Any
) -> None:
    refusal = live.api.post(
        "/api/library", params={"filename": "broken.pdf"}, content=GARBAGE_PDF, headers=OCTETS
    )
    assert refusal.status_code == 400, refusal.text
    message = refusal.json()["error"]["message"]
    assert "broken.pdf" in message
    open_library(live, page)
    expect(page.locator(".lib-empty")).to_be_visible()
    assert drop(page, ".lib-intro", [("broken.pdf", GARBAGE_PDF), ("coast.md", BIBLE)])
    expect(page.locator(".drop-hint")).to_have_count(0)
    lines = page.locator("li.lib-upload")
    expect(lines).to_have_count(2)
    broken = lines.filter(has_text="broken.pdf")
    expect(broken).to_have_attribute("data-phase", "refused")
    expect(broken.get_by_role("alert")).to_contain_text("“broken.pdf” was not kept.")
    expect(broken.locator(".lib-refusal-message")).to_have_text(message)
    good = lines.filter(has_text="coast.md")
    expect(good).to_have_attribute("data-state", "ready")
    [stored] = sources(live)  # the refused file left nothing
    assert stored["filename"] == "coast.md"
    expect(page.locator("li.lib-source")).to_have_count(1)
    broken.get_by_role("button", name="Dismiss the line of broken.pdf").click()
    expect(lines).to_have_count(1)

    # A file over the limit is refused before a byte is sent.
    page.evaluate(
        """() => {
            const input = document.getElementById("library-file");
            const big = new File([new Uint8Array(8)], "huge.txt");
            Object.defineProperty(big, "size", {value: 60 * 1024 * 1024});
            Object.defineProperty(input, "files", {value: [big], configurable: true});
            input.dispatchEvent(new Event("change"));
        }"""
    )
    huge = lines.filter(has_text="huge.txt")
    expect(huge.locator(".lib-refusal-message")).to_have_text(
        "It is 60.0 MB; the library takes files up to 50 MB each. Split it into smaller files."
    )
    assert len(sources(live)) == 1


def test_a_failed_source_shows_its_error_and_retry_indexes_it(live: Live, page: Any) -> None:
    live.double.fail_next("500", model="double-embed")
    open_library(live, page)
    page.get_by_label("Files to add to the library").set_input_files(markdown("coast.md"))
    item = page.locator("li.lib-source")
    expect(item).to_have_attribute("data-state", "failed")
    [failed] = sources(live)
    assert failed["state"] == "failed" and failed["error"] and failed["retry_at"]
    expect(item.locator(".lib-state")).to_have_text("Failed")
    expect(item.locator(".lib-error-text")).to_have_text(failed["error"])
    expect(item.locator(".lib-retry-at")).to_contain_text("Next automatic try: ")
    expect(item.locator(".lib-embed-bar")).to_have_attribute("value", "0")
    item.get_by_role("button", name="Retry The Salt Coast").click()
    expect(item).to_have_attribute("data-state", "ready")
    expect(item.locator(".lib-failure")).to_have_count(0)
    assert sources(live)[0]["state"] == "ready"
    expect(page.locator("li.lib-upload")).to_have_attribute("data-state", "ready")

    # Reindex makes the vectors again: indexing, then ready, with no reload.
    item.get_by_role("button", name="Reindex The Salt Coast").click()
    expect(page.locator("#status")).to_contain_text("Indexing again “The Salt Coast”")
    expect(item).to_have_attribute("data-state", "ready")
    assert sources(live)[0]["embedded"] == failed["passage_count"]


def test_markup_in_a_file_name_and_its_text_is_shown_as_text(live: Live, page: Any) -> None:
    name = f"{XSS}.md"
    body = (
        f"# Lore {XSS}\n\nThe <script>window.__pwned = 2</script> vault of "
        '<img src=y onerror="window.__pwned = 3"> copper keys.\n'
    ).encode()
    open_library(live, page)
    page.get_by_label("Files to add to the library").set_input_files(markdown(name, body))
    line = page.locator("li.lib-upload")
    expect(line.locator(".lib-upload-name")).to_have_text(name)
    expect(line).to_have_attribute("data-phase", "stored")
    [stored] = sources(live)
    item = page.locator("li.lib-source")
    expect(item.locator(".lib-filename")).to_have_text(name)
    expect(item.locator(".lib-title")).to_have_text(stored["title"])
    # One passage: every word is in every passage, so words alone rank nothing (idf 0); its
    # vector finds it.
    wait_state(live, stored["id"], "ready")
    found = live.api.get("/api/library/search", params={"q": "copper keys vault"}).json()
    page.get_by_label("Words to search for").fill("copper keys vault")
    page.get_by_label("Words to search for").press("Enter")
    hit = page.locator("li.lib-hit").first
    expect(hit.locator(".lib-hit-text")).to_have_text(found["hits"][0]["text"])
    expect(hit.locator(".lib-hit-source")).to_have_text(stored["title"])
    expect(hit.locator(".lib-hit-location")).to_have_text(found["hits"][0]["location"])
    # The markup reached the server as text, and the page shows it as text.
    assert stored["title"] == f"Lore {XSS}" and XSS in found["hits"][0]["location"]
    assert "<img src=y" in found["hits"][0]["text"]
    assert page.locator("#library-page img, #library-page script").count() == 0
    assert page.evaluate("() => typeof window.__pwned") == "undefined"


def test_the_knowledge_tab_attaches_a_source_and_insights_show_its_passage(
    live: Live, page: Any
) -> None:
    aid = live.adventure(title="Salt", opening="The tide goes out.")["id"]
    panel = open_tab(live, page, aid, "Knowledge")
    expect(panel.locator(".knowledge-empty")).to_contain_text("Your library is empty.")
    expect(panel.get_by_role("link", name="Open the Library →")).to_have_attribute(
        "href", "/library"
    )

    source = upload(live, BIBLE, "salt-coast.md")
    other = upload(live, b"Notes about the weather on the moors.\n", "weather.txt")
    page.evaluate("window.dispatchEvent(new Event('focus'))")  # back from the Library
    boxes = panel.get_by_role("checkbox")
    expect(boxes).to_have_count(2)
    box = panel.get_by_role("checkbox", name="The Salt Coast")
    expect(box).not_to_be_checked()
    expect(panel.locator(".knowledge-summary")).to_have_text(
        "None of your 2 sources is attached: tick one to let the narrator draw on it."
    )
    line = panel.locator(f'li.knowledge-source[data-source-id="{source["id"]}"]')
    expect(line.locator(".lib-state")).to_have_text("Ready")  # polled while it was indexing
    expect(line.locator(".knowledge-meta")).to_contain_text("salt-coast.md")
    box.check()
    expect(page.locator("#status")).to_contain_text("“The Salt Coast” is attached")
    attached = live.api.get(f"/api/adventures/{aid}/knowledge").json()["sources"]
    assert [s["id"] for s in attached] == [source["id"]]
    expect(panel.locator(".knowledge-summary")).to_contain_text("1 of 2 sources attached")
    expect(line).to_have_class(re.compile(r"\bis-attached\b"))
    wait_state(live, other["id"], "ready")

    page.reload()
    page.get_by_role("tab", name="Knowledge").click()
    expect(panel.get_by_role("checkbox", name="The Salt Coast")).to_be_checked()
    expect(panel.get_by_role("checkbox", name="weather")).not_to_be_checked()

    live.double.script("The copper doors stand shut.")
    reply = live.turn(aid, QUESTION)["reply"]
    snapshot = live.api.get(f"/api/actions/{reply['id']}/insights").json()
    knowledge = snapshot["knowledge"]
    used = knowledge["used"][0]
    assert used["in_context"] and used["location"].endswith("The Drowned Library")
    dialog = open_insights(page, {"actionId": reply["id"]})
    part = dialog.locator('[data-part="knowledge"]')
    expect(part.locator(".ins-know-used")).to_have_text(
        str(sum(h["in_context"] for h in knowledge["used"]))
    )
    expect(part.locator(".ins-know-considered")).to_have_text(f"{knowledge['considered']:,}")
    expect(part.locator(".ins-know-counts")).to_contain_text("considered in 1 source")
    passage = part.locator(f'.ins-passage[data-passage-id="{used["passage_id"]}"]').first
    expect(passage.locator(".ins-passage-source")).to_have_text("The Salt Coast")
    expect(passage.locator(".ins-passage-location")).to_have_text(used["location"])
    expect(passage.locator(".ins-passage-text")).to_have_text(used["text"])
    expect(passage.locator(".ins-know-in")).to_have_text("in the context")
    for name in ("final", "semantic", "lexical"):
        expect(passage.locator(f'[data-score="{name}"] .ins-score-value')).to_have_text(
            f"{used[f'{name}_score']:.4f}"
        )
    expect(passage.locator(".ins-rank")).to_have_attribute(
        "data-lexical-rank", str(used["lexical_rank"])
    )
    runners = knowledge["runners_up"]
    if runners:
        folded = part.locator(".ins-runners")
        expect(folded.locator(".ins-passage").first).to_be_hidden()
        folded.locator("summary").click()
        expect(folded.locator(".ins-passage")).to_have_count(len(runners))
    section = dialog.locator('.ins-section[data-name="knowledge"]')
    expect(section.locator(".ins-why")).to_have_text(
        "Why: " + next(s["reason"] for s in snapshot["sections"] if s["name"] == "knowledge")
    )
    dialog.get_by_role("button", name="Close Insights").click()

    panel.get_by_role("checkbox", name="The Salt Coast").uncheck()
    expect(page.locator("#status")).to_contain_text("is no longer attached")
    assert live.api.get(f"/api/adventures/{aid}/knowledge").json()["sources"] == []


def test_insights_of_a_reply_from_before_the_library_still_render(live: Live, page: Any) -> None:
    aid = live.adventure(title="Old")["id"]
    live.double.script("An old reply.")
    reply = live.turn(aid, "I wait")["reply"]
    snapshot = live.api.get(f"/api/actions/{reply['id']}/insights").json()
    del snapshot["knowledge"]
    for section in snapshot["sections"]:
        section.pop("passages", None)
    snapshot["sections"] = [s for s in snapshot["sections"] if s["name"] != "knowledge"]

    page.goto(f"{live.url}/adventures/{aid}")
    # As stored now: the part says there was no library to search.
    dialog = open_insights(page, {"actionId": reply["id"]})
    expect(dialog.locator('[data-part="knowledge"]')).to_contain_text(
        "No library attached. Attach library sources in the Knowledge tab"
    )
    dialog.get_by_role("button", name="Close Insights").click()

    # As a reply from before the library stored it: no knowledge at all.
    page.route(f"**/api/actions/{reply['id']}/insights", lambda route: route.fulfill(json=snapshot))
    dialog = open_insights(page, {"actionId": reply["id"]})
    expect(dialog.locator('[data-part="memories"]')).to_be_visible()
    expect(dialog.locator('[data-part="model"]')).to_contain_text("double-narrator")
    expect(dialog.locator('.ins-section[data-name="story_cards"]')).to_be_visible()
    expect(dialog.locator('.ins-section[data-name="knowledge"]')).to_have_count(0)
    expect(dialog.locator('[data-part="knowledge"]')).to_have_count(0)
