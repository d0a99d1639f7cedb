"""The evidence of memories in the browser, on a dense story (every reply states several
facts) played against the model double: Insights shows, for each memory in the context,
which key matched (its own text, or a passage of the story with its action), whether that
passage went into the context or was left out for the Memories budget, and the budget
itself; the Memory Bank's source view lists the passages each memory is found by. Story text
holding markup is shown as text in both.

What the page shows is compared with what the JSON API returns for the same reply, dry run
or memory. Insights is opened the way the story column opens it (``tk:open-insights``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from tests.browser.conftest import Live
from tests.kit.browser import open_insights as kit_open_insights
from tests.kit.dense_story import (
    DENSE,
    FACT,
    HOSTILE,
    HOSTILE_QUESTION,
    QUESTION,
    SCENARIO,
    dense_settings,
)

from talekeeper.settings import Settings
from talekeeper_testkit.double import ModelDouble

# The memory of the block with the greenhouse key states it.
TEXT_QUESTION = "Where does the gardener Pike keep the greenhouse key?"
LEFT_OUT = "left out: over the Memories budget"
ONE_SLOT_QUESTION = "Which brother owes a bookmaker?"


@pytest.fixture
def live_settings(tmp_path: Path, double: ModelDouble) -> Settings:
    settings: Settings = dense_settings(tmp_path, double)
    return settings


def play_dense(live: Live) -> int:
    adventure_id: int = live.adventure(scenario=SCENARIO)["id"]
    for i, reply in enumerate(DENSE):
        live.double.script(reply)
        live.turn(adventure_id, f"wait {i}")
        live.idle()
    return adventure_id


def dry_run(live: Live, adventure_id: int, text: str) -> dict[str, Any]:
    answer = live.api.post(
        f"/api/adventures/{adventure_id}/insights/dry-run", json={"type": "do", "text": text}
    )
    assert answer.status_code == 200, answer.text
    snapshot: dict[str, Any] = answer.json()
    return snapshot


def open_insights(page: Any, detail: dict[str, Any]) -> Any:
    """The Insights dialog, open and done loading."""
    dialog = kit_open_insights(page, detail)
    expect(dialog.locator(".ins-loading")).to_have_count(0)
    return dialog


def carrying(snapshot: dict[str, Any], passage: str) -> dict[str, Any]:
    """The memory the snapshot used through ``passage``."""
    used: list[dict[str, Any]] = snapshot["memories"]["used"]
    found = [m for m in used if m["matched"] == "source" and m["evidence"] == passage]
    assert len(found) == 1, used
    return found[0]


def memories_text(snapshot: dict[str, Any]) -> str:
    return str(next(s["text"] for s in snapshot["sections"] if s["name"] == "memories"))


def in_history(memory: dict[str, Any]) -> bool:
    """Whether the passage that won ``memory`` its place went in by way of the history (its
    action is there, so the Memories section does not write it again)."""
    won = next(p for p in memory["passages"] if p["key"] == memory["evidence_key"])
    return bool(won["in_history"])


def assert_carried(snapshot: dict[str, Any], memory: dict[str, Any], passage: str) -> None:
    """``passage`` reached the prompt: under its memory, or in the history that holds it."""
    assert memory["evidence_in_context"]
    if in_history(memory):
        history = next(s["text"] for s in snapshot["sections"] if s["name"] == "history")
        assert passage in history and f"from the story: {passage}" not in memories_text(snapshot)
    else:
        assert f"from the story: {passage}" in memories_text(snapshot)


def check_passage_shown(dialog: Any, snapshot: dict[str, Any], memory: dict[str, Any]) -> None:
    """The dialog shows ``memory`` as matched through its passage, with the badge, both
    scores and the Memories budget, as the snapshot says."""
    item = dialog.locator(f'.ins-memory[data-memory-id="{memory["id"]}"]')
    match = item.locator('.ins-match[data-matched="source"]')
    expect(match.locator(".ins-match-label")).to_have_text(
        f"matched a passage of the story (action {memory['evidence_depth']})"
    )
    expect(match.locator(".ins-evidence")).to_have_text(memory["evidence"])
    badges = {
        ".ins-evidence-in": "in the context",
        ".ins-evidence-stated": "said by the memory itself",
        ".ins-evidence-out": LEFT_OUT,
    }
    if memory["evidence_in_context"]:
        shown = ".ins-evidence-in"
        badges[shown] = "in the history" if in_history(memory) else "in the context"
    elif memory["evidence_stated"]:
        shown = ".ins-evidence-stated"
    else:
        shown = ".ins-evidence-out"
    for badge, label in badges.items():
        if badge == shown:
            expect(match.locator(badge)).to_have_text(label)
        else:
            expect(match.locator(badge)).to_have_count(0)
    for name in ("semantic", "lexical", "final"):  # the scores are the passage's
        value = memory[f"{name}_score"]
        expect(item.locator(f'[data-score="{name}"] .ins-score-value')).to_have_text(f"{value:.4f}")
    own = item.locator('[data-score="text"]')
    expect(own.locator(".ins-score-name")).to_have_text("own text")
    expect(own.locator(".ins-score-value")).to_have_text(f"{memory['text_score']:.4f}")
    budget = snapshot["memories"]["budget"]
    expect(dialog.locator(".ins-mem-budget strong")).to_have_text(f"{budget:,}")
    row = dialog.locator('.ins-section[data-name="memories"]')
    expect(row.locator(".ins-sec-budget")).to_have_text(f"budget {budget:,}")
    row.locator("summary").click()
    expect(row.locator(".ins-text")).to_have_text(memories_text(snapshot))


def ordinal(n: int) -> str:
    suffix = "th" if 11 <= n % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


STAGES = {
    "text": "ranked by its own text",
    "passage": "ranked by a passage of its source",
    "hop": "ranked by a name another passage gave",
}


def check_stage_and_passages(item: Any, memory: dict[str, Any]) -> None:
    """The memory names what ranked it and lists its passages for the question, each marked
    as the snapshot says (in the context or not), in the snapshot's order."""
    stage = item.locator(".ins-stage")
    expect(stage).to_have_attribute("data-stage", memory["stage"])
    expect(stage.locator(".ins-stage-label")).to_have_text(STAGES[memory["stage"]])
    rows = item.locator(".ins-passage")
    expect(rows).to_have_count(len(memory["passages"]))
    for i, passage in enumerate(memory["passages"]):
        row = rows.nth(i)
        went_in = passage["order"] is not None
        expect(row).to_have_attribute("data-in-context", str(went_in).lower())
        expect(row.locator(".ins-passage-text")).to_have_text(passage["text"])


def check_places_and_hops(dialog: Any, snapshot: dict[str, Any]) -> None:
    """Every memory shows where it stood by its text and by its best passage, what ranked it
    and its passages for the question; a memory found by a hop shows the names it was found
    through and the memory that named them."""
    for m in snapshot["memories"]["used"]:
        item = dialog.locator(f'.ins-memory[data-memory-id="{m["id"]}"]')
        places = f"Ranked {ordinal(m['text_rank'])} by its own text"
        if m["passage_rank"] is not None:
            places += f", {ordinal(m['passage_rank'])} by its best passage"
        expect(item.locator(".ins-rank")).to_have_text(places)
        check_stage_and_passages(item, m)
        hop = item.locator(".ins-hop")
        if m["via"] is None:
            expect(hop).to_have_count(0)
            continue
        expect(hop).to_have_attribute("data-via", str(m["via"]))
        expect(hop).to_have_text(
            "found through a name "
            + ", ".join(m["via_names"])
            + f" — named by a passage of memory #{m['via']}"
        )


def test_insights_show_the_passage_that_matched_and_whether_it_went_in(
    live: Live, page: Any
) -> None:
    adventure_id = play_dense(live)
    page.goto(f"{live.url}/adventures/{adventure_id}")

    # A dry run of a question about a fact no memory states.
    expected = dry_run(live, adventure_id, QUESTION)
    fact = carrying(expected, FACT)
    assert_carried(expected, fact, FACT)
    dialog = open_insights(page, {"dryRun": {"type": "do", "text": QUESTION}})
    check_passage_shown(dialog, expected, fact)
    check_places_and_hops(dialog, expected)
    page.keyboard.press("Escape")

    # Two memories a turn: the passage that answers names Edmund, whom the question does not;
    # the second slot goes to a memory found through that name.
    assert live.api.patch("/api/settings", json={"memory_top_k": 2}).status_code == 200
    expected = dry_run(live, adventure_id, QUESTION)
    hops = [m for m in expected["memories"]["used"] if m["via"] is not None]
    assert len(hops) == 1 and "edmund" in hops[0]["via_names"], expected["memories"]
    assert "Edmund" in hops[0]["evidence"] or "Edmund" in hops[0]["text"]
    dialog = open_insights(page, {"dryRun": {"type": "do", "text": QUESTION}})
    check_places_and_hops(dialog, expected)
    page.keyboard.press("Escape")
    assert live.api.patch("/api/settings", json={"memory_top_k": None}).status_code == 200

    # A question the memory's own words answer: the sentence saying it wins as a passage of
    # its own, one the memory already says, so only the memory goes in and the dialog says
    # why (not "over the budget").
    expected = dry_run(live, adventure_id, TEXT_QUESTION)
    stated = [m for m in expected["memories"]["used"] if "greenhouse key" in m["text"]]
    assert stated and stated[0]["matched"] == "source", expected["memories"]
    assert "greenhouse key" in stated[0]["evidence"], stated[0]
    assert stated[0]["evidence_stated"] and not stated[0]["evidence_in_context"], stated[0]
    assert f"from the story: {stated[0]['evidence']}" not in memories_text(expected)
    dialog = open_insights(page, {"dryRun": {"type": "do", "text": TEXT_QUESTION}})
    check_passage_shown(dialog, expected, stated[0])
    page.keyboard.press("Escape")

    # One memory a turn: its 118 tokens have room for the passage beside it (at 72, before
    # passages filled the budget, they had none). (The question above would not do: with one
    # slot, the memory first by its own text, a weak first, comes before the one first by its
    # passage.)
    assert live.api.patch("/api/settings", json={"memory_top_k": 1}).status_code == 200
    expected = dry_run(live, adventure_id, ONE_SLOT_QUESTION)
    fact = carrying(expected, FACT)
    assert_carried(expected, fact, FACT)
    dialog = open_insights(page, {"dryRun": {"type": "do", "text": ONE_SLOT_QUESTION}})
    check_passage_shown(dialog, expected, fact)
    page.keyboard.press("Escape")

    # The same question as a turn (top-K back to its default): its reply's stored snapshot.
    assert live.api.patch("/api/settings", json={"memory_top_k": None}).status_code == 200
    live.double.script("Rosie only shrugs.")
    reply = live.turn(adventure_id, QUESTION)["reply"]
    snapshot = live.api.get(f"/api/actions/{reply['id']}/insights").json()
    fact = carrying(snapshot, FACT)
    assert fact["evidence_in_context"]
    dialog = open_insights(page, {"actionId": reply["id"], "depth": reply["depth"]})
    check_passage_shown(dialog, snapshot, fact)


def test_the_memory_bank_source_view_lists_the_evidence_passages(live: Live, page: Any) -> None:
    adventure_id = play_dense(live)
    hand = live.api.post(
        f"/api/adventures/{adventure_id}/memories", json={"text": "Pike distrusts the vicar."}
    )
    assert hand.status_code == 201, hand.text
    live.idle()
    listed = live.api.get(f"/api/adventures/{adventure_id}/memories").json()
    sources = {m["id"]: live.api.get(f"/api/memories/{m['id']}/source").json() for m in listed}
    holder = next(i for i, s in sources.items() if FACT in [e["text"] for e in s["evidence"]])

    page.goto(f"{live.url}/adventures/{adventure_id}")
    page.get_by_role("tab", name="Memory").click()
    panel = page.get_by_role("tabpanel", name="Memory")
    item = panel.locator(f"li.memory[data-memory-id='{holder}']")
    item.get_by_role("button", name="Show the source block").click()
    evidence = sources[holder]["evidence"]
    shown = item.locator(".memory-evidence li.evidence")
    expect(shown).to_have_count(len(evidence))
    assert shown.locator(".evidence-text").all_text_contents() == [e["text"] for e in evidence]
    assert shown.locator(".evidence-where").all_text_contents() == [
        f"action {e['depth']}" for e in evidence
    ]
    expect(shown.locator(".embedded")).to_have_count(len(evidence))  # all embedded by now
    expect(item.locator(".memory-evidence .evidence-intro")).to_contain_text(
        f"{len(evidence)} passages of its source block"
    )
    # the source block itself is still listed, action by action
    expect(item.locator(".memory-source blockquote")).to_have_count(len(sources[holder]["actions"]))

    # a memory written by hand says why it has none
    mine = panel.locator(f"li.memory[data-memory-id='{hand.json()['id']}']")
    mine.get_by_role("button", name="Show the source block").click()
    expect(mine.locator(".memory-evidence .evidence-note")).to_have_text(
        sources[hand.json()["id"]]["evidence_note"]
    )
    expect(mine.locator(".memory-evidence li")).to_have_count(0)


def test_a_passage_holding_markup_is_shown_as_text(live: Live, page: Any) -> None:
    adventure_id = play_dense(live)
    expected = dry_run(live, adventure_id, HOSTILE_QUESTION)
    hostile = carrying(expected, HOSTILE)
    assert hostile["evidence_in_context"], expected["memories"]

    page.goto(f"{live.url}/adventures/{adventure_id}")
    dialog = open_insights(page, {"dryRun": {"type": "do", "text": HOSTILE_QUESTION}})
    item = dialog.locator(f'.ins-memory[data-memory-id="{hostile["id"]}"]')
    expect(item.locator(".ins-evidence")).to_have_text(HOSTILE)
    where = "history" if in_history(hostile) else "memories"
    row = dialog.locator(f'.ins-section[data-name="{where}"]')
    row.locator("summary").click()
    expect(row.locator(".ins-text")).to_contain_text(HOSTILE)
    assert dialog.locator("img, script").count() == 0
    page.keyboard.press("Escape")

    page.get_by_role("tab", name="Memory").click()
    panel = page.get_by_role("tabpanel", name="Memory")
    memory = panel.locator(f"li.memory[data-memory-id='{hostile['id']}']")
    memory.get_by_role("button", name="Show the source block").click()
    expect(memory.locator(".evidence-text").filter(has_text="onerror")).to_have_text(HOSTILE)
    assert page.locator("#panels img, #insights-dialog img").count() == 0
    assert page.evaluate("() => typeof window.__pwned") == "undefined"
