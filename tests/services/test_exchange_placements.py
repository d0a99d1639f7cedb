"""How an import reads a reply's placement record from its Insights snapshot
(``services.exchange.placements``): only a ``cache`` placement gives one, in the record's
current form, and the cards it held are found again among the file's cards by the name and
type the snapshot gives them, or left unknown, never a wrong card."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import JsonValue

from talekeeper.services.exchange.fileformat import CardEntry, InsightEntry
from talekeeper.services.exchange.placements import PlannedPlacement, card_keys, planned
from talekeeper.services.prompt.placement import PLACEMENT_VERSION

pytestmark = pytest.mark.no_database

T = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def card(name: str, kind: str = "lore") -> CardEntry:
    return CardEntry(name=name, type=kind, created_at=T, updated_at=T)


def snapshot(held: JsonValue = None, cards: JsonValue = None, **layout: JsonValue) -> InsightEntry:
    shown: dict[str, JsonValue] = {
        "name": "cache",
        "top_digest": "ef56",
        "history_start_depth": 4,
        "floating": {"story_cards": {"at_depth": 4, "digest": "cd34", "actions_before_end": 7}},
    }
    if held is not None:
        shown["cards_held"] = held
    data: dict[str, JsonValue] = {"layout": shown | layout}
    if cards is not None:
        data["cards"] = cards
    return InsightEntry(action=3, data=data, created_at=T)


def part(card_id: int, name: str, kind: str = "lore") -> dict[str, JsonValue]:
    return {"id": card_id, "name": name, "type": kind, "keyword": None, "where": "earlier"}


def read(snap: InsightEntry, *cards: CardEntry) -> PlannedPlacement:
    rows = planned([snap], card_keys(cards))
    assert len(rows) == 1
    return rows[0]


def test_a_cache_placement_gives_the_record_in_its_current_form() -> None:
    row = read(
        snapshot([12, 7], [part(7, "Harbour"), part(12, "Lantern")]),
        card("Harbour"),
        card("Lantern"),
    )
    assert row.action == 3
    assert row.values == {
        "version": PLACEMENT_VERSION,
        "history_start": 4,
        "top_digest": "ef56",
        "floating": json.dumps({"story_cards": [4, "cd34"]}, separators=(",", ":")),
    }
    assert row.cards == (2, 1)  # by the file's card keys, in the order held


def test_only_a_cache_placement_that_parses_gives_a_record() -> None:
    others: list[dict[str, Any]] = [
        {"layout": {"name": "classic"}},
        {"sections": []},
        {"layout": {"name": "cache", "history_start_depth": "4", "floating": {}}},
        {"layout": {"name": "cache", "history_start_depth": True, "floating": {}}},
        {"layout": {"name": "cache", "history_start_depth": -1, "floating": {}}},
        {"layout": {"name": "cache", "history_start_depth": 2**31, "floating": {}}},
        {"layout": {"name": "cache", "history_start_depth": 1, "floating": []}},
        {"layout": ["cache"]},
    ]
    snaps = [InsightEntry(action=n, data=data, created_at=T) for n, data in enumerate(others, 1)]
    assert planned(snaps, {}) == []


def test_odd_entries_are_left_out_as_the_migration_leaves_them() -> None:
    floating: JsonValue = {
        "memories": {"at_depth": "9", "digest": "ab12"},
        "scene": {"at_depth": 9},
        "authors_note": {"at_depth": 2, "digest": "x"},
        "knowledge": [2, "y"],
    }
    row = read(
        snapshot(None, None, floating=floating, top_digest="f" * 65, history_start_depth=None)
    )
    assert row.values["history_start"] is None
    assert row.values["top_digest"] == ""  # longer than a digest: none
    assert row.values["floating"] == '{"authors_note":[2,"x"]}'
    assert row.cards is None  # the snapshot listed no held cards


def test_a_held_card_is_found_by_its_name_and_type_or_left_unknown() -> None:
    described = [part(7, "Harbour"), part(12, "Lantern"), part(15, "Gone")]
    harbour, lantern = card("Harbour"), card("Lantern")
    # One card the file lacks: it was gone when the file was written, and is dropped.
    assert read(snapshot([12, 15], described), harbour, lantern).cards == (2,)
    # A held id the snapshot does not describe, or a name and type two cards share: unknown.
    assert read(snapshot([12, 99], described), harbour, lantern).cards is None
    assert read(snapshot([12], described), harbour, lantern, card("Lantern")).cards is None
    # Another type is another card.
    assert read(snapshot([12], described), harbour, card("Lantern", "location")).cards == ()
    # Ids that are not whole numbers are left out, as the migration leaves them.
    assert read(snapshot([12, "7", True], described), harbour, lantern).cards == (2,)
    assert read(snapshot([], described), harbour).cards == ()
