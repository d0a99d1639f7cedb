"""Other tools' lore over the JSON API: a preview that writes nothing, the confirm that makes
what the preview showed, an adventure from a character card (with a chosen greeting), the
export that reads back as the same cards, and what a hostile or broken file gets."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

from fastapi.testclient import TestClient
from tests.kit.lore import adventure, cards_of, import_lore
from tests.kit.web import OCTETS
from tests.services.lore.builders import fixture, png, text_chunk

from talekeeper.services.cards import model
from talekeeper.services.common import limits
from talekeeper.services.lore import CardDraft
from talekeeper.services.lore.fields import MAX_FILE_BYTES
from talekeeper.web.routes.lore import LoreCard

CARD_FIELDS = (
    "name",
    "type",
    "keywords",
    "entry",
    "always_on",
    "secondary_keywords",
    "secondary_rule",
)

# A card of a preview or an import: the card's fields, then its id (null in a preview).
PREVIEW_CARD_KEYS = [
    "name",
    "type",
    "keywords",
    "entry",
    "notes",
    "always_on",
    "secondary_keywords",
    "secondary_rule",
    "id",
    "disabled",
    "instruction_like",
    "source",
]


def same(cards: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [tuple(str(c[k]) for k in CARD_FIELDS) for c in cards]


def test_a_dry_run_previews_the_cards_and_writes_nothing_then_the_confirm_makes_them(
    client: TestClient,
) -> None:
    aid = adventure(client)
    data = fixture("sillytavern_world_info.json")
    preview = import_lore(client, aid, data, "Eldoria.json", dry_run="true")
    assert preview.status_code == 200, preview.text
    body = preview.json()
    assert body["format"] == "sillytavern_world_info"
    assert list(body["report"]) == ["totals", "items"]  # totals first
    assert body["report"]["totals"]["cards"] == len(body["cards"]) > 0
    assert all(c["id"] is None for c in body["cards"])
    assert all(list(c) == PREVIEW_CARD_KEYS for c in body["cards"])
    assert all(isinstance(c["keywords"], list) for c in body["cards"])
    assert cards_of(client, aid) == []  # a preview keeps nothing

    made = import_lore(client, aid, data, "Eldoria.json")
    assert made.status_code == 200, made.text
    kept = made.json()
    assert same(kept["cards"]) == same(body["cards"])  # what the preview showed
    stored = cards_of(client, aid)
    assert [c["id"] for c in stored] == [c["id"] for c in kept["cards"]]
    assert same(stored) == same(body["cards"])
    eldoria = next(c for c in stored if c["name"] == "Eldoria")
    assert eldoria["secondary_keywords"] == ["war", "siege"]
    assert any(c["always_on"] for c in stored)  # the constant entry is an always-on card
    assert "Eldoria.json" in eldoria["notes"]  # provenance


def test_the_file_is_read_whatever_content_type_it_came_with(client: TestClient) -> None:
    aid = adventure(client)
    data = fixture("aidungeon_cards.json")
    for content_type in ("application/json", "text/plain", "application/octet-stream"):
        answer = client.post(
            f"/api/adventures/{aid}/lore/import",
            params={"filename": "cards.txt", "dry_run": "true"},
            content=data,
            headers={"Content-Type": content_type},
        )
        assert answer.status_code == 200, (content_type, answer.text)
        assert answer.json()["format"] == "aidungeon_cards"


def test_broken_and_hostile_files_are_refused_with_a_message_and_nothing_kept(
    client: TestClient,
) -> None:
    aid = adventure(client)
    cases = {
        b'{"entries": [1, 2': "line 1",  # invalid JSON: where
        b"\x00\x01not a card": "not a lore file",
        json.dumps({"hello": "world"}).encode(): "not a lore file",
        png(text_chunk("chara", {"spec": "chara_card_v2"}))[:-12]: "IEND",  # truncated
    }
    for data, words in cases.items():
        answer = import_lore(client, aid, data, "x.json")
        assert answer.status_code == 400, (data[:20], answer.text)
        assert words.lower() in answer.json()["error"]["message"].lower(), answer.text
    assert cards_of(client, aid) == []
    empty = import_lore(client, aid, b"", "x.json")
    assert empty.status_code == 400
    # over the cap: refused before it is read
    huge = import_lore(client, aid, b" " * (MAX_FILE_BYTES + 1), "x.json")
    assert huge.status_code == 413, huge.text
    missing = client.post(f"/api/adventures/{aid}/lore/import", content=b"[]", headers=OCTETS)
    assert missing.status_code == 400 and "filename" in missing.text
    assert import_lore(client, 999_999, fixture("aidungeon_cards.json"), "x").status_code == 404


def test_a_cross_site_upload_is_refused(client: TestClient) -> None:
    aid = adventure(client)
    answer = client.post(
        f"/api/adventures/{aid}/lore/import",
        params={"filename": "x.json"},
        content=fixture("aidungeon_cards.json"),
        headers={**OCTETS, "Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"},
    )
    assert answer.status_code == 403
    assert cards_of(client, aid) == []


def test_instruction_entries_can_go_to_ai_instructions_instead(client: TestClient) -> None:
    aid = adventure(client)
    data = fixture("sillytavern_world_info.json")
    preview = import_lore(client, aid, data, "w.json", dry_run="true").json()
    flagged = [c for c in preview["cards"] if c["instruction_like"]]
    assert flagged, preview["cards"]
    moved = import_lore(client, aid, data, "w.json", move_instructions="true")
    assert moved.status_code == 200, moved.text
    names = {c["name"] for c in cards_of(client, aid)}
    assert not names & {c["name"] for c in flagged}
    instructions = client.get(f"/api/adventures/{aid}").json()["ai_instructions"]
    assert all(c["entry"] in instructions for c in flagged)


def test_an_adventure_from_a_character_card_with_the_greeting_the_player_chose(
    client: TestClient,
) -> None:
    data = fixture("character_card_v2.json")
    before = len(client.get("/api/adventures").json())
    preview = client.post(
        "/api/adventures/from-file",
        params={"filename": "seren.json", "dry_run": "true"},
        content=data,
        headers=OCTETS,
    )
    assert preview.status_code == 200, preview.text
    shown = preview.json()
    assert shown["format"] == "character_card_v2" and shown["alternate_greetings"]
    assert list(shown) == [
        "format",
        "title",
        "description",
        "opening",
        "alternate_greetings",
        "ai_instructions",
        "plot_essentials",
        "authors_note",
        "cards",
        "report",
    ]
    assert shown["cards"] and all(list(c) == PREVIEW_CARD_KEYS for c in shown["cards"])
    assert "{{char}}" not in shown["opening"] and "Seren" in shown["opening"]
    assert len(client.get("/api/adventures").json()) == before  # a preview makes nothing

    made = client.post(
        "/api/adventures/from-file",
        params={"filename": "seren.json", "greeting": 1},
        content=data,
        headers=OCTETS,
    )
    assert made.status_code == 201, made.text
    body = made.json()
    assert body["title"] == shown["title"] and body["report"]["totals"]["cards"] >= 1
    first = client.get(f"/api/adventures/{body['id']}/actions").json()
    texts = json.dumps(first)
    assert shown["alternate_greetings"][0] in texts  # the chosen greeting opens the story
    assert {c["name"] for c in cards_of(client, body["id"])} >= {"Seren Ashdown"}

    wrong = client.post(
        "/api/adventures/from-file",
        params={"filename": "seren.json", "greeting": 9},
        content=data,
        headers=OCTETS,
    )
    assert wrong.status_code == 400 and "greeting" in wrong.json()["error"]["message"]


def test_a_lore_only_file_cannot_start_an_adventure(client: TestClient) -> None:
    answer = client.post(
        "/api/adventures/from-file",
        params={"filename": "wi.json"},
        content=fixture("sillytavern_world_info.json"),
        headers=OCTETS,
    )
    assert answer.status_code == 400
    assert "import" in answer.json()["error"]["message"].lower()


def test_every_export_reads_back_as_the_same_cards(client: TestClient) -> None:
    aid = adventure(client, "Export me")
    assert import_lore(client, aid, fixture("sillytavern_world_info.json"), "w.json").is_success
    stored = cards_of(client, aid)
    for fmt in ("aidungeon", "sillytavern", "ccv3", "novelai"):
        exported = client.get(f"/api/adventures/{aid}/lore/export", params={"format": fmt})
        assert exported.status_code == 200, (fmt, exported.text)
        assert "attachment" in exported.headers["content-disposition"]
        assert "export-me" in exported.headers["content-disposition"]
        back = import_lore(client, aid, exported.content, f"back.{fmt}", dry_run="true")
        assert back.status_code == 200, (fmt, back.text)
        assert same(back.json()["cards"]) == same(stored), fmt
    bad = client.get(f"/api/adventures/{aid}/lore/export", params={"format": "docx"})
    assert 400 <= bad.status_code < 500


def test_an_import_past_the_card_limit_adds_none_of_its_cards(client: TestClient) -> None:
    aid = adventure(client)
    assert client.post(f"/api/adventures/{aid}/cards", json={"name": "Mine"}).status_code == 201
    many = [
        {"title": f"Card {i}", "keys": f"key{i}", "value": f"Entry {i}.", "type": "lore"}
        for i in range(limits.MAX_CARDS)
    ]
    answer = import_lore(client, aid, json.dumps(many).encode(), "many.json")
    assert answer.status_code == 409, answer.text
    assert f"{limits.MAX_CARDS:,}" in answer.json()["error"]["message"]
    assert [c["name"] for c in cards_of(client, aid)] == ["Mine"]  # nothing half imported


def test_a_preview_card_shows_a_draft_s_fields_but_its_order() -> None:
    """``LoreCard``: a draft's fields (its place is the list's order), and the id once made."""
    draft = [f.name for f in fields(CardDraft) if f.name != "order"]
    card = list(model.CARD_FIELDS)
    assert list(LoreCard.model_fields) == [*card, "id", *draft[len(card) :]]
    assert list(LoreCard.model_fields) == PREVIEW_CARD_KEYS
