"""Golden previews: what each fixture file reads as (cards and report), as readable JSON.

A change to a mapping rule, a message or the report's order shows up as a diff of
``tests/golden/lore/``. To accept an intended change: ``UPDATE_GOLDEN=1 pytest
tests/services/lore/test_golden.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from tests.services.lore.builders import FIXTURES, charx, fixture_json, png, text_chunk

from talekeeper.core.errors import InvalidInput
from talekeeper.services.lore import read_lore, read_scenario

pytestmark = pytest.mark.no_database

GOLDEN = Path(__file__).resolve().parents[2] / "golden" / "lore"
CASES = sorted(FIXTURES.glob("*.json"))


def preview(data: bytes, filename: str) -> str:
    shown: dict[str, Any] = {"lore": read_lore(data, filename).to_json()}
    try:
        shown["scenario"] = read_scenario(data, filename, persona_name="Ada").to_json()
    except InvalidInput as refused:
        shown["scenario"] = {"refused": refused.message}
    return json.dumps(shown, indent=2, ensure_ascii=False) + "\n"


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1" or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} changed; see the module docstring"


def test_every_fixture_has_a_golden_preview() -> None:
    assert len(CASES) >= 20
    assert {p.stem for p in CASES} <= {p.stem for p in GOLDEN.glob("*.json")}


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_fixture_preview_matches_its_golden_file(path: Path) -> None:
    check_golden(path.name, preview(path.read_bytes(), path.name))


def test_png_card_preview_matches_its_golden_file() -> None:
    card = png(text_chunk("chara", fixture_json("character_card_v2.json")))
    check_golden("png_character_card_v2.json", preview(card, "Seren.png"))


def test_charx_card_preview_matches_its_golden_file() -> None:
    card = charx(fixture_json("character_card_v3.json"), **{"assets/icon/main.png": png()})
    check_golden("charx_character_card_v3.json", preview(card, "Corvina.charx"))
