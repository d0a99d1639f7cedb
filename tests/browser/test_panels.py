"""The play page's side panels in a real browser: plot components edited in place, story
cards, the Scene, the Memory Bank (grouped, pinned, witnessed, edited, sourced, used, written
by hand, deleted, filling in while the player watches) and the Story Summary with its versions.

Turns are played through the API (``live.turn``); where the page must notice a turn it did
not take itself, the test sends the page's own "story-changed" event, as the story column
does after every turn.
"""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import expect
from tests.browser.conftest import Live, shoot
from tests.kit.browser import open_tab

SCENARIO = "lantern-coast"
# Each reply starts with a different sentence: the double's summary model writes a memory from
# the first sentence of a block, so the memories differ and name who is in the story.
REPLIES = [
    "Old Maren lifts her lantern pole toward the cold tower.",
    "Brother Fennick unbars the chapel gate with shaking hands.",
    "The ferryman Ostrey hauls his boat above the tide line.",
    "Old Maren tells you the Choir took her left eye.",
    "Fennick swears the Hearthstone flame still burns.",
    "Ostrey counts the drowned bells along the breakwater.",
    "A gull screams from the Great Lantern's glass crown.",
    "Maren hands you a tin of brine-oil and a striker.",
    "The singing stops all at once beneath the harbour wall.",
    "Brother Fennick reads the keepers' names from a salt-stained ledger.",
    "Ostrey's lantern gutters as the fog comes in off the water.",
    "Old Maren sharpens the hook of her lantern pole on the steps.",
    "The keepers' door shudders as something knocks from inside.",
    "Fennick presses a shard of sea-glass into your palm.",
]
NEW_ESSENTIALS = "The Great Lantern must be lit before the Long Night, or the Choir walks."


def play(live: Live, adventure_id: int, turns: int, start: int = 0) -> list[dict[str, Any]]:
    replies = []
    for i in range(start, start + turns):
        live.double.script(REPLIES[i % len(REPLIES)] + " The tide rises. What do you do?")
        replies.append(live.turn(adventure_id, f"follow the road to the headland ({i + 1})"))
    return replies


def story_changed(page: Any) -> None:
    """What the story column emits after a turn it took."""
    page.evaluate(
        "document.dispatchEvent(new CustomEvent('tk:story-changed', {detail: {reason: 'turn'}}))"
    )


def memories(live: Live, adventure_id: int, **params: str) -> list[dict[str, Any]]:
    response = live.api.get(f"/api/adventures/{adventure_id}/memories", params=params)
    assert response.status_code == 200, response.text
    listed: list[dict[str, Any]] = response.json()
    return listed


def memory_item(panel: Any, text: str) -> Any:
    return panel.locator("li.memory").filter(has_text=text)


def memory_by_id(panel: Any, memory_id: int) -> Any:
    return panel.locator(f"li.memory[data-memory-id='{memory_id}']")


def adventure(live: Live) -> dict[str, Any]:
    return live.adventure(scenario=SCENARIO)


# -- plot components, cards, the Scene --------------------------------------------------------


def test_plot_essentials_are_edited_in_place_and_stored(live: Live, page: Any) -> None:
    aid = adventure(live)["id"]
    panel = open_tab(live, page, aid, "Plot")
    essentials = panel.locator("[data-component=plot_essentials]")
    expect(essentials).to_contain_text("Gullreach")
    essentials.get_by_role("button", name="Edit Plot Essentials").click()
    essentials.get_by_role("textbox", name="Plot Essentials").fill(NEW_ESSENTIALS)
    with page.expect_response(lambda r: r.request.method == "PATCH"):
        essentials.get_by_role("button", name="Save").click()
    expect(essentials.locator(".editable-text")).to_have_text(NEW_ESSENTIALS)
    expect(essentials.get_by_role("textbox")).to_have_count(0)
    stored = live.api.get(f"/api/adventures/{aid}").json()
    assert stored["plot_essentials"] == NEW_ESSENTIALS
    assert stored["authors_note"] == "Tone: salt-stained, hopeful, a little eerie."  # untouched

    # Cancel leaves what is stored alone.
    essentials.get_by_role("button", name="Edit Plot Essentials").click()
    essentials.get_by_role("textbox", name="Plot Essentials").fill("Never saved.")
    essentials.get_by_role("button", name="Cancel").click()
    expect(essentials.locator(".editable-text")).to_have_text(NEW_ESSENTIALS)

    # The toggles and the persona are stored the same way.
    with page.expect_response(lambda r: r.request.method == "PATCH"):
        panel.get_by_label("Use the Memory Bank").uncheck()
    panel.get_by_role("button", name="Edit persona").click()
    panel.get_by_label("Name").fill("Wren Tally")
    with page.expect_response(lambda r: r.request.method == "PATCH"):
        panel.get_by_role("button", name="Save persona").click()
    expect(panel.locator(".persona-name")).to_have_text("Wren Tally")
    stored = live.api.get(f"/api/adventures/{aid}").json()
    assert stored["memory_bank"] is False and stored["auto_summarize"] is True
    assert stored["persona"]["name"] == "Wren Tally"
    assert stored["persona"]["pronouns"] == "she/her"

    # After a reload the page shows what was stored.
    panel = open_tab(live, page, aid, "Plot")
    expect(panel.locator("[data-component=plot_essentials]")).to_contain_text(NEW_ESSENTIALS)
    expect(panel.get_by_label("Use the Memory Bank")).not_to_be_checked()


def test_story_cards_are_created_searched_edited_and_deleted(live: Live, page: Any) -> None:
    aid = adventure(live)["id"]
    before = len(live.api.get(f"/api/adventures/{aid}/cards").json())
    panel = open_tab(live, page, aid, "Cards")
    cards = panel.locator("li.card-item")
    expect(cards).to_have_count(before)

    panel.get_by_role("button", name="New card").click()
    form = panel.get_by_role("form", name="New story card")
    form.get_by_label("Name").fill("The Brass Key")
    form.get_by_label("Type").select_option("item")
    form.get_by_label("Keywords").fill("brass key, keeper's key")
    form.get_by_label("Entry").fill("A heavy key to the keepers' door, warm to the touch.")
    form.get_by_role("button", name="Create card").click()
    card = cards.filter(has_text="The Brass Key")
    expect(card).to_contain_text("item")
    expect(card).to_contain_text("brass key, keeper's key")
    expect(cards).to_have_count(before + 1)
    listed = live.api.get(f"/api/adventures/{aid}/cards").json()
    stored = [c for c in listed if "Brass" in c["name"]]
    assert [(c["name"], c["type"], c["keywords"]) for c in stored] == [
        ("The Brass Key", "item", ["brass key", "keeper's key"])
    ]
    card_id = stored[0]["id"]

    search = panel.get_by_role("searchbox", name="Search story cards")
    search.fill("brass")
    expect(cards).to_have_count(1)
    expect(cards.first).to_contain_text("The Brass Key")
    expect(panel.locator(".cards-count")).to_contain_text("1 card match")
    search.fill("no such thing")
    expect(cards).to_have_count(0)
    expect(panel.locator(".cards-count")).to_have_text("No card matches “no such thing”.")
    search.fill("")
    expect(cards).to_have_count(before + 1)

    card.get_by_role("button", name="Edit card The Brass Key").click()
    edit = panel.get_by_role("form", name="Edit card The Brass Key")
    edit.get_by_label("Name").fill("The Keepers' Key")
    edit.get_by_label("Keywords").fill("keepers' key")
    edit.get_by_role("button", name="Save card").click()
    renamed = cards.filter(has_text="The Keepers' Key")
    expect(renamed).to_be_visible()
    stored_card = live.api.get(f"/api/adventures/{aid}/cards").json()
    assert [(c["name"], c["keywords"]) for c in stored_card if c["id"] == card_id] == [
        ("The Keepers' Key", ["keepers' key"])
    ]

    # A refused change shows the server's reason and keeps the form open.
    renamed.get_by_role("button", name="Edit card The Keepers' Key").click()
    edit = panel.get_by_role("form", name="Edit card The Keepers' Key")
    edit.get_by_label("Name").fill("   ")
    edit.get_by_role("button", name="Save card").click()
    expect(page.locator("#errors")).to_contain_text("'name' must not be empty.")
    edit.get_by_role("button", name="Cancel").click()

    renamed.get_by_role("button", name="Delete card The Keepers' Key").click()
    renamed.get_by_role("button", name="Cancel").click()  # asked first: nothing deleted yet
    expect(cards).to_have_count(before + 1)
    renamed.get_by_role("button", name="Delete card The Keepers' Key").click()
    expect(renamed).to_contain_text("Delete “The Keepers' Key”?")
    renamed.get_by_role("button", name="Yes, delete").click()
    expect(cards).to_have_count(before)
    expect(cards.filter(has_text="The Keepers' Key")).to_have_count(0)
    ids = [c["id"] for c in live.api.get(f"/api/adventures/{aid}/cards").json()]
    assert card_id not in ids and len(ids) == before


def test_an_editor_opened_while_the_list_loads_keeps_what_is_typed(live: Live, page: Any) -> None:
    """The list's fetch is held while the player opens a card's editor and types: the answer
    arriving later must not redraw the list over the open form; it is drawn once the form
    closes."""
    aid = adventure(live)["id"]
    live.api.post(
        f"/api/adventures/{aid}/cards",
        json={"name": "The Tide Bell", "type": "item", "keywords": ["tide bell"], "entry": "x"},
    ).raise_for_status()
    panel = open_tab(live, page, aid, "Cards")
    cards = panel.locator("li.card-item")
    bell = cards.filter(has_text="The Tide Bell")
    expect(bell).to_be_visible()

    held: list[Any] = []
    searched = re.compile(r"/api/adventures/\d+/cards\?q=")
    page.route(searched, lambda route: held.append(route))
    panel.get_by_role("searchbox", name="Search story cards").fill("bell")
    for _ in range(100):
        if held:
            break
        page.wait_for_timeout(50)
    assert held, "the search's fetch never left the page"

    bell.get_by_role("button", name="Edit card The Tide Bell").click()
    edit = panel.get_by_role("form", name="Edit card The Tide Bell")
    edit.get_by_label("Entry").fill("Typed while the list was loading.")
    with page.expect_response(searched):
        held[0].continue_()
    page.unroute(searched)  # only the first fetch is held
    page.wait_for_timeout(300)  # the answer is read and handed to the panel
    expect(edit).to_be_visible()
    expect(edit.get_by_label("Entry")).to_have_value("Typed while the list was loading.")

    # Closing the editor draws the list the search asked for.
    edit.get_by_role("button", name="Cancel").click()
    expect(panel.locator(".cards-count")).to_contain_text("1 card match")


def test_the_scene_is_set_by_the_player_and_handed_back(live: Live, page: Any) -> None:
    aid = adventure(live)["id"]
    panel = open_tab(live, page, aid, "Scene")
    # The opening ("You reach Gullreach at dusk ...") says where the player is.
    expect(panel.locator(".scene-location")).to_have_text("Gullreach")
    expect(panel.locator(".scene-source")).to_contain_text("from the story")

    panel.get_by_role("button", name="Set the scene").click()
    form = panel.get_by_role("form", name="Set the scene")
    form.get_by_label("Location").fill("The Hearthstone Shrine")
    form.get_by_label("Who is present").fill("Brother Fennick, Old Maren")
    form.get_by_label("What is happening").fill("The flame gutters in the draught.")
    form.get_by_role("button", name="Save scene").click()
    expect(panel.locator(".scene-location")).to_have_text("The Hearthstone Shrine")
    expect(panel.locator(".scene-present")).to_have_text("Brother Fennick, Old Maren")
    expect(panel.locator(".scene-source")).to_contain_text("set by you")
    scene = live.api.get(f"/api/adventures/{aid}/scene").json()
    assert scene == {
        "location": "The Hearthstone Shrine",
        "present": ["Brother Fennick", "Old Maren"],
        "summary": "The flame gutters in the draught.",
        "source": "player",
    }

    panel.get_by_role("button", name="Hand back to the story").click()
    expect(panel.locator(".scene-source")).to_contain_text("from the story")
    expect(panel.locator(".scene-location")).to_have_text("Gullreach")
    assert live.api.get(f"/api/adventures/{aid}/scene").json()["source"] == "story cards"


# -- the World ----------------------------------------------------------------------------------


def test_the_world_shows_the_state_its_events_and_takes_the_players_word(
    live: Live, page: Any
) -> None:
    aid = adventure(live)["id"]
    live.double.script("You pick up the brass key. Old Maren arrives.")
    live.turn(aid, "search the quay")
    panel = open_tab(live, page, aid, "World")
    expect(panel.locator(".world-location")).to_have_text("Gullreach")  # from the opening
    expect(panel.locator(".world-inventory")).to_have_text("the brass key")
    expect(panel.locator(".world-present")).to_have_text("Old Maren")
    expect(panel.locator(".world-time")).to_have_text("at dusk")
    took = panel.locator(".world-event", has_text="the brass key")
    expect(took).to_contain_text("read from the story")
    expect(took.locator(".world-evidence")).to_have_text("You pick up the brass key.")

    form = panel.get_by_role("form", name="Add to the world")
    form.get_by_label("What changed").select_option("took")
    form.get_by_label("What or where (object)").fill("a lantern")
    form.get_by_role("button", name="Add event").click()
    expect(panel.locator(".world-inventory")).to_have_text("the brass key, a lantern")
    mine = panel.locator(".world-event[data-origin='player']")
    expect(mine).to_contain_text("set by you")
    shoot(page, "world")

    # The world as it stood after the opening: there, nothing was carried yet.
    opening = panel.locator(".world-event", has_text="moved").filter(has_text="Gullreach")
    opening.get_by_role("button", name=re.compile("The world as it stood")).click()
    expect(panel.get_by_role("heading", name=re.compile("The world at action"))).to_be_visible()
    expect(panel.locator(".world-inventory")).to_have_text("—")
    expect(panel.locator(".world-location")).to_have_text("Gullreach")
    panel.get_by_role("button", name="Back to now").click()
    expect(panel.locator(".world-inventory")).to_have_text("the brass key, a lantern")

    # Dismiss what the story said of the key: it is kept, but no longer counts.
    key_id = took.get_attribute("data-id")
    panel.get_by_role("button", name=f"Dismiss event {key_id}").click()
    expect(panel.locator(".world-inventory")).to_have_text("a lantern")
    mine.get_by_role("button", name=re.compile("Remove event")).click()
    expect(panel.locator(".world-inventory")).to_have_text("—")
    state = live.api.get(f"/api/adventures/{aid}/world").json()
    assert state["inventory"] == [] and state["location"]["name"] == "Gullreach"


# -- the Memory Bank ----------------------------------------------------------------------------


def test_the_memory_bank_groups_pins_edits_sources_and_deletes(live: Live, page: Any) -> None:
    # Two memories a turn, so the newest reply uses two and the others are idle.
    assert live.api.patch("/api/settings", json={"memory_top_k": 2}).status_code == 200
    aid = adventure(live)["id"]
    play(live, aid, 1)  # the player goes to the headland
    # Old Maren joins the player there at 2: she witnessed every block but the first (0-5).
    came = {"kind": "arrived", "subject": "Old Maren"}
    assert live.api.post(f"/api/adventures/{aid}/world/events", json=came).status_code == 201
    play(live, aid, 12, start=1)  # 27 actions: memories of four blocks
    live.idle()
    written = memories(live, aid)
    assert len(written) >= 4, written
    target = written[-1]  # the next turn asks about it, so the newest reply uses it
    live.double.script("Maren nods slowly. The Choir is patient. What do you do?")
    reply = live.turn(aid, target["text"])["reply"]
    used = live.api.get(f"/api/actions/{reply['id']}/insights").json()["memories"]["used"]
    assert target["id"] in [m["id"] for m in used] and len(used) == 2, used
    live.idle()

    panel = open_tab(live, page, aid, "Memory")
    used_group = panel.locator("[data-group=used]")
    idle_group = panel.locator("[data-group=idle]")
    expect(used_group.locator("li.memory")).to_have_count(len(used))
    expect(memory_item(used_group, target["text"])).to_be_visible()
    others = [m for m in memories(live, aid) if m["id"] not in {u["id"] for u in used}]
    expect(idle_group.locator("li.memory")).to_have_count(len(others))
    for item in panel.locator("li.memory").all():
        expect(item.locator(".authority")).to_have_text(re.compile("^(established|inference)$"))
    # Who witnessed each: derived from the world, shown small beside where it comes from.
    for m in memories(live, aid):
        assert m["witnesses"] == ([] if m["source_start"] == 0 else ["Old Maren"]), m
        seen = "seen by Old Maren" if m["witnesses"] else "seen by no one else"
        expect(memory_by_id(panel, m["id"]).locator(".memory-witnesses")).to_have_text(seen)

    # Pin an idle one.
    pinned = others[0]
    item = memory_item(panel, pinned["text"])
    item.get_by_role("button", name="Pin this memory").click()
    item = memory_item(panel, pinned["text"])
    expect(item.get_by_role("button", name="Unpin this memory")).to_have_attribute(
        "aria-pressed", "true"
    )
    expect(item.locator(".pin-badge")).to_have_text("pinned")
    assert next(m for m in memories(live, aid) if m["id"] == pinned["id"])["pinned"] is True

    # The turns that used the memory the newest reply used.
    target_item = memory_item(used_group, target["text"])
    target_item.get_by_role("button", name="Show the turns that used it").click()
    turns = target_item.locator(".turn-list li")
    expect(turns).to_have_count(len(target["used_by"]) + 1)
    newest = turns.filter(has_text=f"Reply #{reply['depth']}")
    expect(newest.locator(".this-turn")).to_have_text("this turn")
    expect(target_item.locator(".memory-uses-count")).to_have_text(
        f"used {target['use_count'] + 1}×"
    )
    shoot(page, "memory-bank")

    # Open its source block: the actions it was written from.
    source = live.api.get(f"/api/memories/{pinned['id']}/source").json()
    assert source["actions"], source
    item = memory_item(panel, pinned["text"])
    item.get_by_role("button", name="Show the source block").click()
    blocks = item.locator(".memory-source blockquote")
    expect(blocks).to_have_count(len(source["actions"]))
    expect(blocks.first).to_contain_text(source["actions"][0]["rendered"][:40])

    # Edit one.
    edited = target
    item = memory_by_id(panel, edited["id"])
    item.get_by_role("button", name="Edit this memory").click()
    item.get_by_role("textbox", name="Memory text").fill("  ")
    item.get_by_role("button", name="Save memory").click()  # refused: the editor stays open
    expect(page.locator("#errors")).to_contain_text("'text' must not be empty.")
    item.get_by_role("textbox", name="Memory text").fill("Brother Fennick fears the open sea.")
    item.get_by_role("button", name="Save memory").click()
    expect(memory_item(panel, "Brother Fennick fears the open sea.")).to_be_visible()
    stored = next(m for m in memories(live, aid) if m["id"] == edited["id"])
    assert stored["text"] == "Brother Fennick fears the open sea." and stored["writer"] == "player"

    # Add one by hand: listed as idle, and embedded once the background work has run.
    panel.get_by_text("Add a memory by hand").click()
    panel.get_by_label("A sentence or two the narrator should remember").fill(
        "Ostrey owes the Keepers' Guild a boat."
    )
    panel.get_by_role("button", name="Add memory").click()
    added = memory_item(idle_group, "Ostrey owes the Keepers' Guild a boat.")
    expect(added).to_contain_text("written by you")
    expect(added.locator(".memory-witnesses")).to_have_count(0)  # no stretch: none derived
    expect(added.locator(".embedded")).to_have_text("embedded")
    hand = [m for m in memories(live, aid) if m["origin"] == "user"]
    assert [m["text"] for m in hand] == ["Ostrey owes the Keepers' Guild a boat."]

    # Delete one, after confirming.
    added.get_by_role("button", name="Delete this memory").click()
    expect(added).to_contain_text("Delete this memory?")
    added.get_by_role("button", name="Yes, delete").click()
    expect(panel.locator("li.memory").filter(has_text="Ostrey owes")).to_have_count(0)
    everything = memories(live, aid, include="all")
    assert next(m for m in everything if m["id"] == hand[0]["id"])["status"] == "deleted"
    panel.get_by_label("Show all").check()
    expect(memory_item(panel.locator("[data-group=deleted]"), "Ostrey owes")).to_be_visible()


def test_a_memory_is_marked_a_secret_and_back_in_the_memory_bank(live: Live, page: Any) -> None:
    aid = adventure(live)["id"]
    play(live, aid, 7)  # 15 actions: the first block's memory
    live.idle()
    (first, *_) = memories(live, aid)
    panel = open_tab(live, page, aid, "Memory")
    item = memory_by_id(panel, first["id"])
    expect(item.locator(".memory-secret")).to_have_count(0)

    item.get_by_role("button", name="Say who knows this memory").click()
    item.get_by_label("Known only by (names, separated by commas)").fill(" Old Maren, , Tobin ")
    item.get_by_role("button", name="Keep secret").click()
    item = memory_by_id(panel, first["id"])
    expect(item.locator(".memory-secret")).to_have_text(
        "secret: known only to Old Maren, Tobin and you"
    )
    assert next(m for m in memories(live, aid) if m["id"] == first["id"])["known_by"] == [
        "Old Maren",
        "Tobin",
    ]

    # A name the server refuses: the form stays, the error says why, nothing changes.
    item.get_by_role("button", name="Say who knows this memory").click()
    item.get_by_label("Known only by (names, separated by commas)").fill("Mara, " + "x" * 300)
    item.get_by_role("button", name="Keep secret").click()
    expect(page.locator("#errors")).to_contain_text("characters long")
    item.get_by_role("button", name="No longer a secret").click()
    item = memory_by_id(panel, first["id"])
    expect(item.locator(".memory-secret")).to_have_count(0)
    assert next(m for m in memories(live, aid) if m["id"] == first["id"])["known_by"] is None


def test_memories_fill_in_while_the_player_watches(live: Live, page: Any) -> None:
    aid = adventure(live)["id"]
    play(live, aid, 5)  # 11 actions: no memory is due yet
    live.idle()
    panel = open_tab(live, page, aid, "Memory")
    status = page.locator("#background-status")
    expect(panel.locator(".memory-empty")).to_contain_text("No memories yet")
    expect(status).to_have_text("Memories and summary are up to date.")

    # The memory pass fails: the page says so, and that it will try again.
    live.double.fail_next("500", model="double-summary")
    play(live, aid, 1, start=5)
    live.idle()
    story_changed(page)
    expect(status).to_contain_text("memory writing failed:")
    expect(status).to_contain_text("will retry next turn")
    expect(panel.locator("li.memory")).to_have_count(0)

    # The next turn: the work is slow, the page shows it running, then the memories appear
    # without a reload.
    live.double.fail_next("timeout", delay=1.2, model="double-summary")
    play(live, aid, 1, start=6)
    story_changed(page)
    expect(status).to_contain_text("writing memories…")
    expect(panel.locator("li.memory")).to_have_count(2)
    expect(status).to_have_text("Memories and summary are up to date.")
    assert len(memories(live, aid)) == 2


# -- the Story Summary ---------------------------------------------------------------------------


def test_the_summary_shows_its_versions_and_the_players_edit(live: Live, page: Any) -> None:
    aid = adventure(live)["id"]
    play(live, aid, 8)  # 17 actions: the first automatic summary is written after 15
    live.idle()
    summary = live.api.get(f"/api/adventures/{aid}/summary").json()
    assert [v["trigger"] for v in summary["versions"]] == ["interval"], summary
    panel = open_tab(live, page, aid, "Summary")
    versions = panel.locator("li.summary-version")
    expect(versions).to_have_count(1)
    expect(versions.first.locator(".trigger-auto")).to_have_text("automatic")
    expect(versions.first).to_contain_text(f"covers actions 0–{summary['covers_to']}")
    expect(versions.first.locator(".in-force-badge")).to_have_text("in force")
    expect(panel.locator(".editable-text")).to_have_text(summary["text"])

    mine = "Tamsin reached Gullreach at dusk; Old Maren told her the keepers' door is barred."
    panel.get_by_role("button", name="Edit the summary").click()
    panel.get_by_role("textbox", name="Summary in force").fill(mine)
    panel.get_by_role("button", name="Save").click()
    expect(panel.locator(".editable-text")).to_have_text(mine)
    expect(versions).to_have_count(2)
    newest = versions.first
    expect(newest.locator(".trigger-user")).to_have_text("written by you")
    expect(newest.locator(".in-force-badge")).to_have_text("in force")
    expect(versions.nth(1).locator(".trigger-auto")).to_have_text("automatic")
    expect(versions.nth(1).locator(".in-force-badge")).to_have_count(0)
    newest.locator("summary").click()
    expect(newest.locator(".version-text")).to_have_text(mine)
    stored = live.api.get(f"/api/adventures/{aid}/summary").json()
    assert stored["text"] == mine
    assert [v["trigger"] for v in stored["versions"]] == ["interval", "user"]
    assert stored["current_version_id"] == stored["versions"][-1]["id"]
    shoot(page, "summary")
