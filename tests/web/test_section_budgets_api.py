"""An adventure's own section budgets through the JSON API (docs/context.md, "Section
budgets"): read with the defaults beside them, set as a whole, refused with a message that
names what to fix (and nothing stored), used by the next turn, and shown by its Insights."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from talekeeper.services.prompt import budgets
from talekeeper_testkit.double import ModelDouble

CARD = {
    "name": "Harbour",
    "type": "location",
    "keywords": ["harbour"],
    "entry": "The harbour wall is old and wet and green with weed. " * 4,  # ~50 tokens
}


def harbour(client: TestClient) -> int:
    made = client.post("/api/adventures", json={"title": "Harbour", "opening": "Fog lies."})
    assert made.status_code == 201, made.text
    aid: int = made.json()["id"]
    for card in (CARD, CARD | {"name": "Quay", "keywords": ["quay"]}):
        assert client.post(f"/api/adventures/{aid}/cards", json=card).status_code == 201
    return aid


def by_name(adventure: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {b["name"]: b for b in adventure["section_budgets"]}


def test_an_adventure_starts_with_the_documented_defaults(client: TestClient) -> None:
    aid = harbour(client)
    shown = by_name(client.get(f"/api/adventures/{aid}").json())
    assert list(shown) == ["memories", "story_cards", "knowledge", "current_state"]
    for name, default in budgets.DEFAULTS.items():
        row = shown[name.value]
        assert (row["share"], row["ceiling"], row["floor"]) == (
            default.share,
            default.ceiling,
            default.floor,
        )
        assert (row["default_share"], row["default_ceiling"]) == (default.share, default.ceiling)
        assert not row["share_set"] and not row["ceiling_set"]
    assert (shown["memories"]["per"], shown["knowledge"]["per"]) == ("memory", "passage")
    assert shown["story_cards"]["title"] == "Story Cards"


def turn_insights(client: TestClient, double: ModelDouble, aid: int, text: str) -> Any:
    double.script("The gulls cry.")
    answer = client.post(f"/api/adventures/{aid}/actions", json={"type": "do", "text": text})
    assert answer.status_code == 200, answer.text
    return answer.json()["insights"]


def test_the_budgets_set_are_what_the_next_turn_uses_and_insights_shows(
    client: TestClient, double: ModelDouble
) -> None:
    aid = harbour(client)
    before = turn_insights(client, double, aid, "walk the harbour quay")
    cards = next(s for s in before["sections"] if s["name"] == "story_cards")
    assert "Harbour (location)" in cards["text"] and "Quay (location)" in cards["text"]
    available = before["budget"]["available"]
    assert cards["budget"] == budgets.STORY_CARDS.tokens(available)

    own = {"story_cards": {"ceiling": 96}, "memories": {"share": 0.1, "ceiling": 80}}
    answer = client.patch(f"/api/adventures/{aid}", json={"section_budgets": own})
    assert answer.status_code == 200, answer.text
    shown = by_name(answer.json())
    assert (shown["story_cards"]["ceiling"], shown["story_cards"]["ceiling_set"]) == (96, True)
    assert not shown["story_cards"]["share_set"]
    assert (shown["memories"]["share"], shown["memories"]["ceiling"]) == (0.1, 80)
    assert not shown["knowledge"]["share_set"] and not shown["current_state"]["ceiling_set"]
    assert by_name(client.get(f"/api/adventures/{aid}").json()) == shown

    after = turn_insights(client, double, aid, "walk the harbour quay")
    cards = next(s for s in after["sections"] if s["name"] == "story_cards")
    assert cards["budget"] == 96  # the ceiling set: one card of ~50 tokens fits, not two
    assert cards["text"].count("(location)") == 1
    assert cards["reason"].split("; ")[1].startswith("1 left out for its budget of 96 tokens: ")
    slots = max(after["memories"]["query"]["top_k"], len(after["memories"]["used"]))
    assert after["memories"]["budget"] == max(72 * slots, min(80 * slots, int(available * 0.1)))

    # The whole set is replaced: {} is the defaults again.
    assert client.patch(f"/api/adventures/{aid}", json={"section_budgets": {}}).status_code == 200
    again = turn_insights(client, double, aid, "walk the harbour quay")
    cards = next(s for s in again["sections"] if s["name"] == "story_cards")
    assert cards["budget"] == budgets.STORY_CARDS.tokens(available)
    # (the cache layout keeps the held card where it was; the other comes in as new)
    both = "".join(s["text"] for s in again["sections"] if s["name"].startswith("story_cards"))
    assert both.count("(location)") == 2


@pytest.mark.parametrize(
    ("sent", "says"),
    [
        ({"history": {"share": 0.5}}, "unknown section(s) history"),
        ({"story_cards": {"share": 2}}, "'section_budgets.story_cards.share' must be a number"),
        ({"story_cards": {"share": "a lot"}}, "above 0 and at most 0.75"),
        ({"memories": {"ceiling": 5}}, "at least 72 (its floor)"),
        ({"knowledge": {"ceiling": 10**12}}, "at most 32768"),
        ({"current_state": {"floor": 1}}, "unknown field(s) floor"),
        ({"current_state": "small"}, "must be an object with a share, a ceiling or both"),
    ],
)
def test_a_bad_budget_is_a_400_that_says_what_to_fix_and_changes_nothing(
    client: TestClient, sent: dict[str, Any], says: str
) -> None:
    aid = harbour(client)
    kept = {"story_cards": {"share": 0.3}}
    assert client.patch(f"/api/adventures/{aid}", json={"section_budgets": kept}).status_code == 200
    answer = client.patch(f"/api/adventures/{aid}", json={"section_budgets": sent, "title": "X"})
    assert answer.status_code == 400
    assert says in answer.text
    stored = client.get(f"/api/adventures/{aid}").json()
    assert stored["title"] == "Harbour"
    assert by_name(stored)["story_cards"]["share"] == 0.3


def test_a_new_adventure_may_be_made_with_its_budgets(client: TestClient) -> None:
    body = {"title": "Small", "section_budgets": {"current_state": {"ceiling": 60}}}
    made = client.post("/api/adventures", json=body)
    assert made.status_code == 201, made.text
    assert by_name(made.json())["current_state"]["ceiling"] == 60
    refused = client.post(
        "/api/adventures", json={"title": "Bad", "section_budgets": {"memories": []}}
    )
    assert refused.status_code == 400 and "section_budgets.memories" in refused.text


def test_the_budgets_travel_in_an_export_and_a_bad_one_is_refused_on_import(
    client: TestClient,
) -> None:
    aid = harbour(client)
    plain = client.get(f"/api/adventures/{aid}/export").json()
    assert "section_budgets" not in plain["adventure"]  # a file as it was before budgets
    own = {"knowledge": {"share": 0.1}, "story_cards": {"ceiling": 500}}
    assert client.patch(f"/api/adventures/{aid}", json={"section_budgets": own}).status_code == 200
    exported = client.get(f"/api/adventures/{aid}/export").json()
    assert exported["adventure"]["section_budgets"] == own
    imported = client.post("/api/adventures/import", json=exported)
    assert imported.status_code == 201, imported.text
    copy = by_name(client.get(f"/api/adventures/{imported.json()['id']}").json())
    assert by_name(client.get(f"/api/adventures/{aid}").json()) == copy
    exported["adventure"]["section_budgets"] = {"knowledge": {"share": 9}}
    bad = client.post("/api/adventures/import", json=exported)
    assert bad.status_code == 400 and "section_budgets.knowledge.share" in bad.text
    assert len(client.get("/api/adventures").json()) == 2  # nothing imported
