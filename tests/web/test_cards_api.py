"""The card rules over the JSON API: always on, secondary keywords and their rule are taken
and answered by the card routes, refused with a 4xx that says what to fix, shown by
Insights (a reply's snapshot and the dry run), and carried by our export and import; an
export from before them still imports."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from talekeeper.services.cards.model import CARD_FIELDS
from talekeeper.web.routes.adventures import CardIn
from talekeeper.web.schemas.adventures import CardFields, CardOut
from talekeeper_testkit.double import ModelDouble

RULES = {"always_on": False, "secondary_keywords": [], "secondary_rule": "any"}


def adventure(client: TestClient, **body: Any) -> int:
    response = client.post("/api/adventures", json={"title": "Harbour", **body})
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def add(client: TestClient, aid: int, **card: Any) -> dict[str, Any]:
    response = client.post(f"/api/adventures/{aid}/cards", json={"type": "lore", **card})
    assert response.status_code == 201, response.text
    return dict(response.json())


def test_the_card_routes_take_and_answer_the_rules(client: TestClient) -> None:
    aid = adventure(client)
    plain = add(client, aid, name="Harbour", keywords=["harbour"])
    assert {k: plain[k] for k in RULES} == RULES  # the defaults: it fires as cards always did
    storm = add(
        client,
        aid,
        name="Storm",
        keywords=["sea"],
        always_on=True,
        secondary_keywords=[" storm ", "STORM", "thunder"],
        secondary_rule="all",
    )
    assert (storm["always_on"], storm["secondary_keywords"], storm["secondary_rule"]) == (
        True,
        ["storm", "thunder"],
        "all",
    )
    listed = client.get(f"/api/adventures/{aid}/cards").json()
    assert listed == [plain, storm]
    assert client.get(f"/api/adventures/{aid}/cards", params={"q": "thunder"}).json() == [storm]
    patched = client.patch(f"/api/cards/{storm['id']}", json={"secondary_rule": "none"}).json()
    assert patched == storm | {"secondary_rule": "none"}  # only the field sent changes
    patched = client.patch(
        f"/api/cards/{storm['id']}", json={"always_on": False, "secondary_keywords": []}
    ).json()
    assert (patched["always_on"], patched["secondary_keywords"]) == (False, [])


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"secondary_rule": "some"}, "secondary_rule: Input should be 'any', 'all' or 'none'"),
        ({"secondary_rule": 3}, "secondary_rule"),
        ({"always_on": "maybe"}, "always_on: Input should be a valid boolean"),
        ({"secondary_keywords": "storm"}, "secondary_keywords: Input should be a valid list"),
        ({"secondary_keywords": ["s" * 81]}, "'secondary_keywords' is 81 characters"),
        ({"secondary_keywords": [f"k{i}" for i in range(31)]}, "at most 30 secondary keywords"),
        ({"secondary_keywords": [" "] * 2 + ["x"], "bogus": 1}, "bogus"),
    ],
)
def test_a_bad_rule_is_a_4xx_that_says_what_to_fix(
    client: TestClient, body: dict[str, Any], says: str
) -> None:
    aid = adventure(client)
    card = add(client, aid, name="Storm")
    for method, path, sent in (
        ("POST", f"/api/adventures/{aid}/cards", {"name": "Other", **body}),
        ("PATCH", f"/api/cards/{card['id']}", body),
    ):
        response = client.request(method, path, json=sent)
        assert response.status_code == 400, response.text
        assert says in response.json()["error"]["message"], response.text
    assert client.get(f"/api/adventures/{aid}/cards").json() == [card]  # nothing changed


def _chat_request(double: ModelDouble) -> list[dict[str, str]]:
    requests = [r for r in double.requests if r.path == "/v1/chat/completions"]
    return list(requests[-1].body["messages"])


def test_insights_shows_always_on_cards_first_and_the_secondary_keywords_that_held(
    client: TestClient, double: ModelDouble
) -> None:
    aid = adventure(client, opening="Fog lies on the harbour.")
    add(client, aid, name="Harbour", type="location", keywords=["harbour"], entry="Wet stone.")
    add(client, aid, name="Rules", entry="Nobody swims at night.", always_on=True)
    add(
        client,
        aid,
        name="Storm",
        keywords=["sea"],
        entry="Storms come from the west.",
        secondary_keywords=["storm", "gale"],
        secondary_rule="any",
    )
    dry = client.post(
        f"/api/adventures/{aid}/insights/dry-run", json={"type": "do", "text": "watch the sea"}
    ).json()
    assert [(c["name"], c["always_on"]) for c in dry["cards"]] == [
        ("Rules", True),
        ("Harbour", False),
    ]  # Storm: "sea", but no storm yet
    assert dry["cards"][0]["keyword"] is None
    double.script("A gale rises over the sea.")
    reply = client.post(
        f"/api/adventures/{aid}/actions", json={"type": "do", "text": "watch the sea"}
    ).json()["reply"]
    double.script("The storm breaks.")
    second = client.post(
        f"/api/adventures/{aid}/actions", json={"type": "do", "text": "run from the sea"}
    ).json()["reply"]
    sent = "\n\n".join(m["content"] for m in _chat_request(double))  # wherever it went
    world = sent[sent.index("[World]") :].splitlines()
    # The ``cache`` layout: the cards the history's head held stay as they were; the card
    # fired since goes in a section of its own before the player's action.
    assert world[1:3] == ["Rules (lore): Nobody swims at night.", "Harbour (location): Wet stone."]
    assert sent.endswith(
        "[World]\nStorm (lore): Storms come from the west.\n\n> You run from the sea."
    )
    first = client.get(f"/api/actions/{reply['id']}/insights").json()
    assert [c["name"] for c in first["cards"]] == ["Rules", "Harbour"]
    later = client.get(f"/api/actions/{second['id']}/insights").json()
    storm = next(c for c in later["cards"] if c["name"] == "Storm")
    assert (storm["keyword"], storm["where"], storm["secondary"]) == ("sea", "input", ["gale"])
    section = next(s for s in later["sections"] if s["name"] == "story_cards")
    assert section["reason"].startswith("Rules: always on; Harbour: 'harbour' in the story")


def test_export_and_import_carry_the_rules_and_an_older_export_still_imports(
    client: TestClient,
) -> None:
    aid = adventure(client)
    add(client, aid, name="Storm", keywords=["sea"], always_on=True, secondary_keywords=["gale"])
    add(client, aid, name="Calm", keywords=["sea"], secondary_rule="none")
    exported = client.get(f"/api/adventures/{aid}/export").json()
    assert [{k: c[k] for k in RULES} for c in exported["cards"]] == [
        {"always_on": True, "secondary_keywords": ["gale"], "secondary_rule": "any"},
        {"always_on": False, "secondary_keywords": [], "secondary_rule": "none"},
    ]
    copy = client.post("/api/adventures/import", json=exported)
    assert copy.status_code == 201, copy.text
    again = client.get(f"/api/adventures/{copy.json()['id']}/export").json()
    assert again["cards"] == exported["cards"]
    older = exported | {
        "cards": [{k: v for k, v in c.items() if k not in RULES} for c in again["cards"]]
    }
    imported = client.post("/api/adventures/import", json=older)
    assert imported.status_code == 201, imported.text
    cards = client.get(f"/api/adventures/{imported.json()['id']}/cards").json()
    assert [{k: c[k] for k in RULES} for c in cards] == [RULES, RULES]
    bad = exported | {"cards": [exported["cards"][0] | {"secondary_rule": "most"}]}
    refused = client.post("/api/adventures/import", json=bad)
    assert refused.status_code == 400
    assert "cards[0]" in refused.text and "'secondary_rule' must be one of" in refused.text


def test_a_scenario_card_may_carry_the_rules(client: TestClient) -> None:
    scenario = client.get("/api/scenarios/lantern-coast").json()
    assert all({k: c[k] for k in RULES} == RULES for c in scenario["story_cards"])
    fields = ["name", "type", "keywords", "entry", "notes", *RULES]
    assert all(list(c) == fields for c in scenario["story_cards"])  # a card without its id


def test_the_card_models_declare_the_card_s_fields() -> None:
    """The answer lists ``Card``'s fields in its order (the JSON's key order); the body takes
    each of them: a field added to ``Card`` and not to these fails here. A stored card adds
    its id and its secret (``known_by``), which a card of a scenario or another tool has
    not."""
    assert list(CardFields.model_fields) == list(CARD_FIELDS)
    assert list(CardOut.model_fields) == [*CARD_FIELDS, "id", "known_by"]
    assert sorted(CardIn.model_fields) == sorted([*CARD_FIELDS, "known_by"])
    assert all(not field.is_required() for field in CardIn.model_fields.values())
