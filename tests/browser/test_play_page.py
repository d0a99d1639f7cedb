"""The play page's story column in a real browser: streaming turns, the action box, retry and
takes, undo and redo, inline edit and delete, fork and the branch tree, a narrator failure,
and paging through a long story. Each test checks what the player sees and, where it matters,
what the server stored."""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect
from tests.browser.conftest import Live, shoot
from tests.kit.browser import STORY, open_play, state, story

REPLIES = "#story .entry-narration .entry-text"


def toolbar(page: Any, name: str) -> Any:
    return page.locator("#story-toolbar").get_by_role("button", name=name, exact=True)


def test_three_turns_stream_in_chunk_by_chunk(live: Live, page: Any) -> None:
    adventure = live.adventure()
    replies = [
        f"Reply {n}: the candle gutters as you cross the gallery toward door {n}."
        for n in (1, 2, 3)
    ]
    live.double.script(*replies)
    live.double.chunk_delay = 0.15
    open_play(page, live, adventure["id"], 1)
    box = page.get_by_label("Your action")
    for n, full in enumerate(replies, start=1):
        box.fill(f"I walk to door {n}")
        box.press("Enter")
        streaming = page.locator("#story .entry.streaming .entry-text")
        expect(streaming).to_contain_text(f"Reply {n}:")
        partial = streaming.text_content() or ""
        assert partial and full.startswith(partial) and len(partial) < len(full), partial
        # the player's action is on the page while the reply is still being written
        expect(page.locator("#story .entry-do .entry-text").last).to_have_text(
            f"> You walk to door {n}."
        )
        expect(page.get_by_label("Your action")).to_be_disabled()
        expect(page.locator("#story .entry.streaming")).to_have_count(0, timeout=20_000)
        expect(page.locator(REPLIES).last).to_have_text(full)
        expect(box).to_be_enabled()
        expect(box).to_have_value("")
    expect(page.locator(STORY)).to_have_count(7)
    saved = story(live, adventure["id"])
    assert [a["text"] for a in saved[2::2]] == replies
    assert all(a["has_insights"] for a in saved[2::2])
    expect(page.get_by_role("button", name="Insights for this reply")).to_have_count(3)
    # a richer view for the screenshot: a second take of the newest reply
    live.double.chunk_delay = 0
    live.double.script("Reply 3, again: the gallery is dark now, and door 3 stands ajar.")
    toolbar(page, "Retry").click()
    expect(page.locator(".take-count")).to_have_text("2/2")
    live.idle()
    shoot(page, "play")


def test_insights_buttons_and_story_changes_are_announced(live: Live, page: Any) -> None:
    adventure = live.adventure()
    aid = adventure["id"]
    live.double.script("The vault hums.", "A bell rings.")
    reply = live.turn(aid, "I open the vault")["reply"]
    open_play(page, live, aid, 3)
    page.evaluate(
        """() => {
        window.__seen = [];
        for (const name of ["open-insights", "story-changed"]) {
            document.addEventListener("tk:" + name, (e) => window.__seen.push([name, e.detail]));
        }
    }"""
    )
    assert (
        page.locator("#story .entry")
        .first.get_by_role("button", name="Insights for this reply")
        .count()
        == 0
    )  # the scenario's opening was not generated: it has no Insights
    insights = page.locator("#insights-dialog")
    page.get_by_role("button", name="Insights for this reply").click()
    expect(insights).to_be_visible()
    page.keyboard.press("Escape")
    expect(insights).to_be_hidden()
    page.get_by_role("button", name="Say", exact=True).click()
    page.get_by_label("Your action").fill("Is anyone there?")
    toolbar(page, "Preview next context").click()
    expect(insights).to_be_visible()
    page.keyboard.press("Escape")
    expect(insights).to_be_hidden()
    page.get_by_label("Your action").press("Enter")
    expect(page.locator(REPLIES).last).to_have_text("A bell rings.")
    toolbar(page, "Undo").click()
    expect(page.locator(STORY)).to_have_count(4)
    seen = page.evaluate("window.__seen")
    assert seen == [
        ["open-insights", {"actionId": reply["id"], "depth": reply["depth"]}],
        ["open-insights", {"dryRun": {"type": "say", "text": "Is anyone there?"}}],
        ["story-changed", {"reason": "turn"}],
        ["story-changed", {"reason": "undo"}],
    ]


def test_enter_sends_and_shift_enter_makes_a_new_line(live: Live, page: Any) -> None:
    adventure = live.adventure()
    live.double.script("The hall falls silent.")
    open_play(page, live, adventure["id"], 1)
    page.get_by_role("button", name="Story", exact=True).click()
    box = page.get_by_label("Your action")
    box.type("The clock strikes twelve.")
    box.press("Shift+Enter")
    box.type("Nobody moves.")
    expect(box).to_have_value("The clock strikes twelve.\nNobody moves.")
    assert len(story(live, adventure["id"])) == 1  # Shift+Enter sent nothing
    box.press("Enter")
    expect(page.locator(REPLIES).last).to_have_text("The hall falls silent.")
    expect(page.locator("#story .entry-story .entry-text")).to_have_text(
        "The clock strikes twelve.\nNobody moves."
    )
    saved = story(live, adventure["id"])
    assert (saved[1]["type"], saved[1]["text"]) == (
        "story",
        "The clock strikes twelve.\nNobody moves.",
    )


def test_say_story_and_continue_render_as_the_engine_renders_them(live: Live, page: Any) -> None:
    adventure = live.adventure()
    live.double.script("Mrs. Hale stiffens.", "She looks away.", "The fire crackles on.")
    open_play(page, live, adventure["id"], 1)
    box = page.get_by_label("Your action")
    page.get_by_role("button", name="Say", exact=True).click()
    expect(page.get_by_role("button", name="Say", exact=True)).to_have_attribute(
        "aria-pressed", "true"
    )
    box.fill("who locked the library")
    box.press("Enter")
    expect(page.locator(REPLIES).last).to_have_text("Mrs. Hale stiffens.")
    expect(page.locator("#story .entry-say .entry-text")).to_have_text(
        '> You say "Who locked the library."'
    )
    page.get_by_role("button", name="Story", exact=True).click()
    box.fill("  You notice mud on her boots.  ")
    box.press("Enter")
    expect(page.locator(REPLIES).last).to_have_text("She looks away.")
    expect(page.locator("#story .entry-story .entry-text")).to_have_text(
        "You notice mud on her boots."
    )
    page.get_by_role("button", name="Continue", exact=True).click()
    expect(box).to_be_disabled()
    page.get_by_role("button", name="Continue the story").click()
    expect(page.locator(REPLIES).last).to_have_text("The fire crackles on.")
    expect(page.locator(STORY)).to_have_count(6)  # a continue adds only the reply
    # The streamed text shows before the reply is saved: read the story once the page has
    # the saved reply (its entry no longer streaming).
    expect(page.locator("#story .entry.streaming")).to_have_count(0)
    rendered = [a["rendered"] for a in story(live, adventure["id"])]
    shown = page.locator("#story .entry .entry-text").all_text_contents()
    assert shown == rendered


def test_retry_makes_a_new_take_and_the_switcher_moves_between_takes(live: Live, page: Any) -> None:
    adventure = live.adventure()
    aid = adventure["id"]
    live.double.script("The first take of the reply.", "The second take of the reply.")
    live.turn(aid, "I wait by the fire")
    open_play(page, live, aid, 3)
    expect(page.locator(".take-count")).to_have_count(0)  # one take: no switcher
    toolbar(page, "Retry").click()
    expect(page.locator(REPLIES).last).to_have_text("The second take of the reply.")
    expect(page.locator(".take-count")).to_have_text("2/2")
    head = state(live, aid)["head"]
    assert (head["take"], head["takes"], head["text"]) == (2, 2, "The second take of the reply.")
    page.get_by_role("button", name="Previous take").click()
    expect(page.locator(".take-count")).to_have_text("1/2")
    expect(page.locator(REPLIES).last).to_have_text("The first take of the reply.")
    expect(page.get_by_role("button", name="Previous take")).to_be_disabled()
    assert state(live, aid)["head"]["text"] == "The first take of the reply."
    page.get_by_role("button", name="Next take").click()
    expect(page.locator(".take-count")).to_have_text("2/2")
    expect(page.locator(REPLIES).last).to_have_text("The second take of the reply.")
    assert state(live, aid)["head"]["take"] == 2
    expect(page.locator(STORY)).to_have_count(3)


def test_undo_removes_the_newest_action_and_redo_restores_it(live: Live, page: Any) -> None:
    adventure = live.adventure()
    aid = adventure["id"]
    live.double.script("A door creaks.", "The butler coughs.")
    live.turn(aid, "I listen")
    last = live.turn(aid, "I turn around")["reply"]
    open_play(page, live, aid, 5)
    expect(toolbar(page, "Redo")).to_be_disabled()
    toolbar(page, "Undo").click()
    expect(page.locator(STORY)).to_have_count(4)
    expect(page.locator(STORY).last).to_contain_text("> You turn around.")
    after_undo = state(live, aid)
    assert after_undo["head"]["text"] == "I turn around" and after_undo["can_redo"]
    expect(toolbar(page, "Redo")).to_be_enabled()
    toolbar(page, "Redo").click()
    expect(page.locator(STORY)).to_have_count(5)
    expect(page.locator(REPLIES).last).to_have_text("The butler coughs.")
    expect(toolbar(page, "Redo")).to_be_disabled()
    after_redo = state(live, aid)
    assert after_redo["head"]["id"] == last["id"] and not after_redo["can_redo"]


def test_edit_an_earlier_action_inline(live: Live, page: Any) -> None:
    adventure = live.adventure()
    aid = adventure["id"]
    live.double.script("The study is cold.", "Ash drifts in the grate.")
    first = live.turn(aid, "I enter the study")["action"]
    live.turn(aid, "I kneel by the hearth")
    open_play(page, live, aid, 5)
    entry = page.locator(f'#story .entry[data-id="{first["id"]}"]')
    entry.get_by_role("button", name="Edit").click()
    editor = entry.get_by_label("Text of this action")
    expect(editor).to_have_value("I enter the study")
    editor.fill("I slip into the study")
    editor.press("Escape")  # Escape cancels: nothing is saved
    expect(entry.get_by_label("Text of this action")).to_have_count(0)
    expect(entry.locator(".entry-text")).to_have_text("> You enter the study.")
    entry.get_by_role("button", name="Edit").click()
    entry.get_by_label("Text of this action").fill("I slip quietly into the study")
    entry.get_by_role("button", name="Save").click()
    expect(entry.locator(".entry-text")).to_have_text("> You slip quietly into the study.")
    expect(entry.locator(".badge")).to_have_text("edited")
    saved = next(a for a in story(live, aid) if a["id"] == first["id"])
    assert saved["text"] == "I slip quietly into the study" and saved["edited_at"]


def test_delete_asks_first(live: Live, page: Any) -> None:
    adventure = live.adventure()
    aid = adventure["id"]
    live.double.script("A dog barks outside.")
    turn = live.turn(aid, "I open the window")
    open_play(page, live, aid, 3)
    entry = page.locator(f'#story .entry[data-id="{turn["reply"]["id"]}"]')
    entry.get_by_role("button", name="Delete").click()
    entry.get_by_role("button", name="Keep it").click()
    expect(page.locator(STORY)).to_have_count(3)
    entry.get_by_role("button", name="Delete").click()
    entry.get_by_role("button", name="Yes, delete").click()
    expect(page.locator(STORY)).to_have_count(2)
    assert [a["id"] for a in story(live, aid)][-1] == turn["action"]["id"]
    # the action now waits for a reply again, and the page offers to write it
    expect(page.locator(".turn-error")).to_contain_text("has not answered")


def test_fork_from_an_earlier_action_and_switch_branches(live: Live, page: Any) -> None:
    adventure = live.adventure()
    aid = adventure["id"]
    live.double.script("Rain on the glass.", "Footsteps above.", "A match flares.", "Fog rolls in.")
    first = live.turn(aid, "I look out")["reply"]
    live.turn(aid, "I go upstairs")
    live.turn(aid, "I light a match")
    main_id = state(live, aid)["branch_id"]
    open_play(page, live, aid, 7)
    entry = page.locator(f'#story .entry[data-id="{first["id"]}"]')
    entry.get_by_role("button", name="Fork").click()
    entry.get_by_label("Name of the new branch").fill("The garden path")
    entry.get_by_role("button", name="Create branch").click()
    expect(page.locator(STORY)).to_have_count(3)
    expect(page.locator(REPLIES).last).to_have_text("Rain on the glass.")
    forked = state(live, aid)
    assert forked["branch_id"] != main_id and forked["head"]["id"] == first["id"]
    box = page.get_by_label("Your action")
    box.fill("I step into the garden")
    box.press("Enter")
    expect(page.locator(REPLIES).last).to_have_text("Fog rolls in.")
    toolbar(page, "Branches").click()
    dialog = page.locator("#tree-dialog")
    expect(dialog).to_be_visible()
    expect(dialog.locator(".tree-item")).to_have_count(2)
    current = dialog.locator(".tree-item.current")
    expect(current).to_contain_text("The garden path")
    expect(current).to_contain_text("forked from “Main” after action 3")
    expect(current).to_contain_text("2 actions of its own")
    shoot(page, "branches")
    dialog.get_by_role("button", name="Main").click()
    expect(dialog).to_be_hidden()
    expect(page.locator(STORY)).to_have_count(7)
    expect(page.locator(REPLIES).last).to_have_text("A match flares.")
    assert state(live, aid)["branch_id"] == main_id


def test_a_narrator_failure_is_readable_and_retry_completes_the_turn(live: Live, page: Any) -> None:
    adventure = live.adventure()
    aid = adventure["id"]
    live.double.fail_next("500", model="double-narrator")
    live.double.script("At last the inspector answers.")
    open_play(page, live, aid, 1)
    box = page.get_by_label("Your action")
    box.fill("I ring for the inspector")
    box.press("Enter")
    notice = page.locator(".turn-error")
    expect(notice).to_contain_text("Your action is saved")
    expect(page.locator("#story .entry-do .entry-text")).to_have_text(
        "> You ring for the inspector."
    )
    expect(page.locator("#story .entry.streaming")).to_have_count(0)
    assert state(live, aid)["awaiting_reply"] is True
    notice.get_by_role("button", name="Retry").click()
    expect(page.locator(REPLIES).last).to_have_text("At last the inspector answers.")
    expect(page.locator("#story .entry.streaming")).to_have_count(0)  # the turn has ended
    expect(notice).to_have_count(0)
    after = state(live, aid)
    assert after["awaiting_reply"] is False
    assert after["head"]["text"] == "At last the inspector answers."
    assert [a["type"] for a in story(live, aid)] == ["narration", "do", "narration"]


def test_a_long_story_renders_its_newest_part_first(live: Live, page: Any) -> None:
    adventure = live.adventure()
    response = live.api.get(f"/api/adventures/{adventure['id']}/export")
    assert response.status_code == 200, response.text
    exported = response.json()
    template = exported["actions"][0]
    exported["actions"] = [
        {
            **template,
            "key": n + 1,
            "depth": n,
            "type": "narration" if n % 2 == 0 else "do",
            "text": f"Passage number {n}." if n % 2 == 0 else f"I take step {n}",
        }
        for n in range(120)
    ]
    exported["adventure"]["title"] = "A long walk"
    response = live.api.post("/api/adventures/import", json=exported)
    assert response.status_code == 201, response.text
    aid = response.json()["id"]
    open_play(page, live, aid, 40)
    expect(page.locator(STORY).first.locator(".entry-text")).to_have_text("Passage number 80.")
    expect(page.locator(STORY).last).to_contain_text("> You take step 119.")
    page.get_by_role("button", name="Show earlier").click()
    expect(page.locator(STORY)).to_have_count(80)
    expect(page.locator(STORY).first.locator(".entry-text")).to_have_text("Passage number 40.")
    page.get_by_role("button", name="Show earlier").click()
    expect(page.locator(STORY)).to_have_count(120)
    expect(page.locator(STORY).first.locator(".entry-text")).to_have_text("Passage number 0.")
    expect(page.get_by_role("button", name="Show earlier")).to_have_count(0)
    expect(page.locator(STORY).last).to_contain_text("> You take step 119.")
