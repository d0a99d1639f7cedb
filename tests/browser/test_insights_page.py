"""Insights in the browser: a reply's exact context, its memories with their score bars, the
cards that fired, a dry run of the next turn, and errors shown inside the dialog.

The dialog is opened the way the story column opens it, through the page's
``tk:open-insights`` event, so these tests do not depend on the story column's buttons.
What the dialog shows is compared with what the JSON API returns for the same reply.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from playwright.sync_api import expect
from tests.browser.conftest import Live, shoot
from tests.kit.browser import open_insights

from talekeeper.services.memory.scoring import LEXICAL_WEIGHT

FACT = "The vault password is heron-7."
QUESTION = "What was the vault password?"
CARD = {"name": "The Vault", "type": "location", "keywords": ["vault"], "entry": "Steel, cold."}
PINNED = "Mrs. Hale keeps the only spare keys."


def play_until_memories(live: Live) -> tuple[int, dict[str, Any]]:
    """Eight turns that plant FACT in the first block a memory is written from, a card keyed on
    'vault', a pinned hand-written memory and a duplicate of FACT; then the question."""
    adventure_id = live.adventure()["id"]
    card = live.api.post(f"/api/adventures/{adventure_id}/cards", json=CARD)
    assert card.status_code == 201, card.text
    # Depth 0 is the opening, so the third reply (depth 6) opens the block 6-11 the second
    # memory is written from: the double's summarizer keeps a block's first sentence.
    replies = [f"The corridor is quiet, turn {i}." for i in range(1, 9)]
    replies[2] = FACT + " The clerk closes the ledger."
    live.double.script(*replies, "You recall it clearly.")
    for i in range(1, 9):
        live.turn(adventure_id, f"I walk on, step {i}")
    live.idle()
    for text, pinned in ((PINNED, True), (FACT, False)):
        made = live.api.post(
            f"/api/adventures/{adventure_id}/memories", json={"text": text, "pinned": pinned}
        )
        assert made.status_code == 201, made.text
    live.idle()
    reply = live.turn(adventure_id, QUESTION)["reply"]
    return adventure_id, reply


def bar_widths(page: Any, memory_id: int) -> dict[str, tuple[float, float]]:
    """Per score: the width the script set (percent) and the drawn fill/track ratio (percent)."""
    widths: dict[str, tuple[float, float]] = page.evaluate(
        """id => Object.fromEntries([...document.querySelectorAll(
             `#insights-dialog .ins-memory[data-memory-id="${id}"] .ins-score`)].map(row => {
               const fill = row.querySelector('.ins-bar-fill');
               const track = row.querySelector('.ins-bar').getBoundingClientRect().width - 2;
               return [row.dataset.score, [parseFloat(fill.style.width),
                                           100 * fill.getBoundingClientRect().width / track]];
             }))""",
        memory_id,
    )
    return widths


def expected_pct(value: float, scale: float) -> float:
    return round(max(0.0, min(1.0, value / scale)) * 100, 2)


def test_a_reply_shows_its_memories_with_score_bars_sections_and_cards(
    live: Live, page: Any
) -> None:
    adventure_id, reply = play_until_memories(live)
    snapshot = live.api.get(f"/api/actions/{reply['id']}/insights").json()
    memories = snapshot["memories"]
    fact = next(m for m in memories["used"] if m["text"] == FACT)
    assert fact["lexical_score"] > 0 and fact["source"]["source_start"] == 6, fact
    assert memories["suppressed"], "the hand-written copy of the fact is a duplicate"

    page.goto(f"{live.url}/adventures/{adventure_id}")
    dialog = open_insights(page, {"actionId": reply["id"]})
    expect(dialog.locator("h2")).to_have_text(f"Insights for reply at depth {reply['depth']}")

    # the memory that holds the fact: its scores as numbers and as bars of the right width
    item = dialog.locator(f'.ins-memory[data-memory-id="{fact["id"]}"]')
    expect(item.locator(".ins-mem-text")).to_have_text(FACT)
    expect(item.locator(".ins-authority")).to_have_text("established")
    expect(item.locator(".ins-source")).to_have_text("from depths 6–11 · branch #1")
    scales = {"semantic": 1.0, "lexical": 1.0, "final": 1 + memories["query"]["weights"]["lexical"]}
    for name in scales:
        value = fact[f"{name}_score"]
        expect(item.locator(f'[data-score="{name}"] .ins-score-value')).to_have_text(f"{value:.4f}")
    widths = bar_widths(page, fact["id"])
    for name, scale in scales.items():
        set_pct, drawn_pct = widths[name]
        assert set_pct == pytest.approx(expected_pct(fact[f"{name}_score"], scale), abs=0.01)
        assert drawn_pct == pytest.approx(set_pct, abs=1.0), name
    assert widths["lexical"][0] > 0

    # the pinned memory, the counts, the duplicate, the query
    pinned = next(m for m in memories["used"] if m["text"] == PINNED)
    by_hand = dialog.locator(f'.ins-memory[data-memory-id="{pinned["id"]}"]')
    expect(by_hand.locator(".ins-pinned")).to_have_text("pinned")
    expect(by_hand.locator(".ins-source")).to_have_text("written by hand · branch #1")
    expect(item.locator(".ins-pinned")).to_have_count(0)
    expect(dialog.locator(".ins-considered")).to_have_text(str(memories["considered"]))
    duplicate = memories["suppressed"][0]
    expect(dialog.locator(".ins-suppressed")).to_contain_text(
        f"Memory #{duplicate['id']} was left out as a duplicate of #{duplicate['duplicate_of']}"
    )
    expect(dialog.locator(".ins-query-input")).to_have_text(QUESTION)
    terms = memories["query"]["input_terms"]
    assert terms == ["vault", "password"]
    expect(dialog.locator(".ins-term")).to_have_count(len(terms))
    for term in terms:
        weight = memories["query"]["term_weights"][term]
        expect(dialog.locator(f'.ins-term[data-term="{term}"]')).to_have_text(
            f"{term} {weight:.2f}"
        )
    final = f"final = semantic + {LEXICAL_WEIGHT:g} × lexical"
    expect(dialog.locator(".ins-weights")).to_contain_text(final)

    # every section, in order, with the tokens the API reports; one opened to its exact text
    names = [s["name"] for s in snapshot["sections"]]
    assert (
        dialog.locator(".ins-section").evaluate_all("els => els.map(e => e.dataset.name)") == names
    )
    for section in snapshot["sections"]:
        row = dialog.locator(f'.ins-section[data-name="{section["name"]}"]')
        expect(row.locator(".ins-tokens")).to_have_text(f"{section['tokens']:,}")
        expect(row.locator(".ins-why")).to_have_text("Why: " + section["reason"])
        if section.get("budget") is not None:  # its own budget, a share of the prompt
            expect(row.locator(".ins-sec-budget")).to_have_text(f"budget {section['budget']:,}")
        else:
            expect(row.locator(".ins-sec-budget")).to_have_count(0)
    budgeted = {s["name"] for s in snapshot["sections"] if s.get("budget") is not None}
    assert {"memories", "story_cards"} <= budgeted
    assert "history" not in budgeted and "story_summary" not in budgeted
    memories_section = dialog.locator('.ins-section[data-name="memories"]')
    expect(memories_section.locator(".ins-text")).to_be_hidden()
    memories_section.locator("summary").click()
    text = next(s["text"] for s in snapshot["sections"] if s["name"] == "memories")
    assert FACT in text
    expect(memories_section.locator(".ins-text")).to_have_text(text)
    budget = dialog.locator('[data-part="budget"]')
    expect(budget.locator('[data-fact="used"] strong')).to_have_text(
        f"{snapshot['budget']['used']:,}"
    )

    # the card and the keyword that fired it; the model and its tokens
    # (the cache layout keeps cards fired earlier in the scene while the history holds)
    expect(dialog.locator(".ins-card")).to_have_count(len(snapshot["cards"]))
    card = dialog.locator(".ins-card", has=page.locator(".ins-card-name", has_text="The Vault"))
    expect(card.locator(".ins-card-name")).to_have_text("The Vault")
    expect(card.locator(".ins-keyword")).to_have_text("vault")
    expect(card).to_contain_text("in the player's input")
    expect(dialog.locator('[data-part="model"]')).to_contain_text("double-narrator")
    expect(dialog.locator('[data-part="dropped"]')).to_contain_text(
        f"{snapshot['history']['kept']} actions of the recent history kept"
    )

    memories_section.locator("summary").click()  # folded again, so the memories fill the view
    dialog.locator('[data-part="memories"]').scroll_into_view_if_needed()
    shoot(page, "insights")

    dialog.get_by_role("button", name="Close Insights").click()
    expect(dialog).to_be_hidden()


def test_a_dry_run_shows_the_next_context_with_the_typed_text(live: Live, page: Any) -> None:
    adventure_id = live.adventure()["id"]
    live.double.script("The guard blinks.")
    live.turn(adventure_id, "I knock at the gate")
    before = live.api.get(f"/api/adventures/{adventure_id}/actions").json()["actions"]
    typed = "Tell me about the heron ledger, <b>please</b>"
    expected = live.api.post(
        f"/api/adventures/{adventure_id}/insights/dry-run", json={"type": "say", "text": typed}
    ).json()

    page.goto(f"{live.url}/adventures/{adventure_id}")
    dialog = open_insights(page, {"dryRun": {"type": "say", "text": typed}})
    expect(dialog.locator("h2")).to_have_text("Dry run: the context of the next turn")
    expect(dialog.locator(".ins-quote")).to_have_text(f"Say: “{typed}”")
    action = dialog.locator('.ins-section[data-name="player_action"]')
    wanted = next(s for s in expected["sections"] if s["name"] == "player_action")
    assert typed in wanted["text"]
    expect(action.locator(".ins-tokens")).to_have_text(str(wanted["tokens"]))
    action.locator("summary").click()
    expect(action.locator(".ins-text")).to_have_text(wanted["text"])
    expect(dialog.locator(".ins-query-input")).to_have_text(typed)
    expect(dialog.locator('[data-part="model"]')).to_contain_text("— (nothing generated)")
    expect(dialog.locator("b")).to_have_count(0)
    # a dry run writes nothing
    after = live.api.get(f"/api/adventures/{adventure_id}/actions").json()["actions"]
    assert [a["id"] for a in after] == [a["id"] for a in before]

    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()

    # with the Memory Bank off, the memories part says so
    off = live.api.patch(f"/api/adventures/{adventure_id}", json={"memory_bank": False})
    assert off.status_code == 200, off.text
    dialog = open_insights(page, {"dryRun": {"type": "continue", "text": ""}})
    expect(dialog.locator(".ins-note")).to_have_text("the Memory Bank is off for this adventure")
    expect(dialog.locator(".ins-query-input")).to_have_count(0)
    expect(dialog.locator('[data-part="memories"]')).to_contain_text(
        "none (a continue, or no text)"
    )


def test_an_action_without_insights_shows_a_readable_error_in_the_dialog(
    live: Live, page: Any
) -> None:
    adventure_id = live.adventure()["id"]
    live.double.script("A reply.")
    player_action = live.turn(adventure_id, "I wait")["action"]
    answer = live.api.get(f"/api/actions/{player_action['id']}/insights")
    assert answer.status_code == 404
    message = answer.json()["error"]["message"]
    assert "has no Insights" in message

    page.goto(f"{live.url}/adventures/{adventure_id}")
    dialog = open_insights(page, {"actionId": player_action["id"]})
    expect(dialog.get_by_role("alert")).to_have_text("Insights could not be shown. " + message)
    expect(dialog.locator(".ins-section")).to_have_count(0)

    dialog = open_insights(page, {"actionId": 987654})
    expect(dialog.get_by_role("alert")).to_contain_text("987654")
    # shown in the dialog, not as a stray banner behind it
    expect(page.locator("#errors")).not_to_contain_text("987654")
    dialog.get_by_role("button", name="Close Insights").click()
    expect(dialog).to_be_hidden()


def test_model_text_with_markup_is_shown_as_text(live: Live, page: Any) -> None:
    adventure_id = live.adventure()["id"]
    hostile = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
    live.double.script(hostile, "Nothing happens.")
    live.turn(adventure_id, "I open the box")
    reply = live.turn(adventure_id, "I look again")["reply"]
    snapshot = live.api.get(f"/api/actions/{reply['id']}/insights").json()
    history = next(s for s in snapshot["sections"] if s["name"] == "history")
    assert hostile in history["text"]

    page.goto(f"{live.url}/adventures/{adventure_id}")
    # with no depth in the page to read, the title finds it in the story
    page.wait_for_load_state("networkidle")  # the story column (if any) has drawn its entries
    page.evaluate("document.querySelectorAll('[data-depth]').forEach(e => delete e.dataset.depth)")
    dialog = open_insights(page, {"actionId": reply["id"]})
    expect(dialog.locator("h2")).to_have_text(f"Insights for reply at depth {reply['depth']}")
    section = dialog.locator('.ins-section[data-name="history"]')
    section.locator("summary").click()
    expect(section.locator(".ins-text")).to_have_text(history["text"])
    expect(section.locator(".ins-text")).to_contain_text("<script>window.__pwned = 1</script>")
    assert dialog.locator("script, img").count() == 0
    assert page.evaluate("() => window.__pwned") is None
    assert json.dumps(page.evaluate("() => typeof window.__pwned")) == '"undefined"'


def test_the_world_part_shows_the_state_read_and_names_what_changed_the_players_word(
    live: Live, page: Any
) -> None:
    adventure_id = live.adventure()["id"]
    live.double.script("The fog lifts.", "You walk into the Salt Market.", "Gulls cry.")
    live.turn(adventure_id, "wait")
    mine = live.api.post(
        f"/api/adventures/{adventure_id}/world/events",
        json={"kind": "moved", "object": "the cellar"},
    )
    assert mine.status_code == 201, mine.text
    live.turn(adventure_id, "go on")
    reply = live.turn(adventure_id, "look")["reply"]
    state = live.api.get(f"/api/actions/{reply['id']}/insights").json()["state"]
    assert state["location"] == "the Salt Market"

    page.goto(f"{live.url}/adventures/{adventure_id}")
    dialog = open_insights(page, {"actionId": reply["id"]})
    world = dialog.locator('.ins-part[data-part="state"]')
    expect(world.locator("dd").first).to_have_text("the Salt Market")
    moved = world.locator(".ins-world-change", has_text="the Salt Market")
    expect(moved).to_contain_text("read from the story")
    expect(moved.locator(".ins-world-override")).to_have_text(
        f"Changed what you set (your event #{mine.json()['id']}): its evidence says so."
    )
    expect(moved.locator(".world-evidence")).to_have_text("You walk into the Salt Market.")


def test_the_witness_part_names_who_was_addressed_and_what_they_did_not_see(
    live: Live, page: Any
) -> None:
    adventure_id = live.adventure()["id"]
    for body in (
        {"kind": "moved", "object": "the Salt Market"},
        {"kind": "arrived", "subject": "Tobin"},
    ):
        made = live.api.post(f"/api/adventures/{adventure_id}/world/events", json=body)
        assert made.status_code == 201, made.text
    # Tobin leaves as the block 6-11 opens and is back as the next one opens.
    replies = ["The tide turns.", "Gulls cry.", "Tobin leaves.", "You hide the key.",
               "The fog thickens.", "Tobin arrives.", "The bells are still."]  # fmt: skip
    live.double.script(*replies)
    for i in range(len(replies)):
        live.turn(adventure_id, f"wait {i}")
    live.idle()
    asked = {"type": "say", "text": "Tobin, where is the key?"}
    expected = live.api.post(f"/api/adventures/{adventure_id}/insights/dry-run", json=asked).json()
    (missed,) = expected["witness"]["labelled"]

    page.goto(f"{live.url}/adventures/{adventure_id}")
    dialog = open_insights(page, {"dryRun": asked})
    part = dialog.locator('.ins-part[data-part="witness"]')
    expect(part.locator(".ins-witness-who")).to_contain_text("Tobin — spoken to by name")
    expect(part).to_contain_text("kept, marked as unknown to them")
    row = part.locator(f'.ins-witness-memory[data-id="{missed}"]')
    expect(row).to_have_attribute("data-what", "labelled")
    expect(row).to_contain_text("absent at actions 6–11")
    memories = dialog.locator('.ins-section[data-name="memories"]')
    memories.locator("summary").click()
    expect(memories.locator(".ins-text")).to_contain_text("— Tobin was not there")

    page.keyboard.press("Escape")
    dialog = open_insights(page, {"dryRun": {"type": "story", "text": "Tobin waits."}})
    expect(dialog.locator('.ins-part[data-part="witness"]')).to_contain_text(
        "Your input addressed no one"
    )


def test_memories_left_out_for_room_are_listed_apart_from_those_used(live: Live, page: Any) -> None:
    """A small context with long Plot Essentials: the Memories fall back to fewer memories,
    and the dialog lists those left out for room apart from the ones that went in."""
    adventure_id, _ = play_until_memories(live)
    essentials = {"plot_essentials": " ".join(["The lighthouse keeper guards the coast."] * 40)}
    assert live.api.patch(f"/api/adventures/{adventure_id}", json=essentials).status_code == 200
    dry = {"type": "do", "text": QUESTION}
    found: dict[str, Any] = {}
    for tokens in range(400, 1600, 50):
        changed = live.api.patch("/api/settings", json={"context_tokens": tokens})
        assert changed.status_code == 200, changed.text
        shown = live.api.post(f"/api/adventures/{adventure_id}/insights/dry-run", json=dry)
        memories = shown.json()["memories"]
        if memories["used"] and memories["left_for_room"]:
            found = memories
            break
    assert found, "no context size left memories out"
    left = found["left_for_room"]
    page.goto(f"{live.url}/adventures/{adventure_id}")
    dialog = open_insights(page, {"dryRun": dry})
    expect(dialog.locator(".ins-used-count")).to_have_text(str(len(found["used"])))
    expect(dialog.locator(".ins-no-room")).to_have_text(f" · {len(left)} left out for room")
    listed = dialog.locator(".ins-left-for-room li")
    expect(listed).to_have_count(len(left))
    for item, memory in zip(listed.all(), left, strict=True):
        expect(item).to_contain_text(f"Memory #{memory['id']} was retrieved but did not fit")
    used_ids = {m["id"] for m in found["used"]}
    assert used_ids.isdisjoint(m["id"] for m in left)
    expect(dialog.locator(".ins-memory")).to_have_count(len(found["used"]))
