"""A PNG's text chunks are judged by their keyword before anything else of them: only the
card chunk that wins is unpacked, so junk chunks (compressed comments, bombs, broken
streams, later copies of a card) cost nothing, and all of a file's unpacking stays within
``MAX_INFLATED_BYTES``."""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import pytest
from tests.services.lore.builders import (
    chunk,
    fixture_json,
    junk_chunks,
    messages,
    png,
    refusal,
    text_chunk,
    ztxt_chunk,
)

from talekeeper.services.lore import LoreFormat, containers, read_lore
from talekeeper.services.lore.fields import MAX_FILE_BYTES

pytestmark = pytest.mark.no_database

V2 = fixture_json("character_card_v2.json")
V3 = fixture_json("character_card_v3.json")
PAST_THE_CAP = containers.MAX_INFLATED_BYTES + 1024 * 1024


@pytest.fixture
def unpacked(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Where each unpacking the reader does is of (the real ``_inflate``, counted)."""
    seen: list[str] = []
    real = containers._inflate

    def counted(body: bytes, where: str) -> bytes:
        seen.append(where)
        return real(body, where)

    monkeypatch.setattr(containers, "_inflate", counted)
    yield seen


def test_junk_chunks_that_would_unpack_past_the_cap_are_passed_by_unopened(
    unpacked: list[str],
) -> None:
    data = png(junk_chunks(40, PAST_THE_CAP), ztxt_chunk("chara", V2), junk_chunks(3, 10))
    result = read_lore(data, "seren.png")
    assert result.format is LoreFormat.CHARACTER_CARD_V2
    assert result.cards[0].name == "Seren Ashdown"
    assert len(unpacked) == 1 and "'chara'" in unpacked[0]  # the card alone


def test_a_junk_chunk_of_broken_compressed_data_is_not_looked_into() -> None:
    broken = chunk(b"zTXt", b"Comment\0\0not a zlib stream")
    itxt = chunk(b"iTXt", b"XML:com.adobe.xmp\0\1\0en\0\0also not zlib")
    result = read_lore(png(broken, itxt, text_chunk("chara", V2)), "seren.png")
    assert result.cards[0].name == "Seren Ashdown"


def test_only_the_winning_card_chunk_is_unpacked(unpacked: list[str]) -> None:
    bomb = chunk(b"zTXt", b"chara\0\0" + zlib.compress(b"\0" * PAST_THE_CAP, 9))
    result = read_lore(png(bomb, text_chunk("ccv3", V3)), "corvina.png")
    assert result.format is LoreFormat.CHARACTER_CARD_V3  # the older copy is never opened
    assert any("older 'chara' copy" in m for m in messages(result, "info"))
    assert unpacked == []
    twice = png(ztxt_chunk("chara", V2), ztxt_chunk("chara", V3))
    assert read_lore(twice, "seren.png").cards[0].name == "Seren Ashdown"  # the first wins
    assert len(unpacked) == 1


def test_card_keywords_are_read_whatever_their_case() -> None:
    result = read_lore(png(ztxt_chunk("Chara", V2)), "seren.png")
    assert result.cards[0].name == "Seren Ashdown"


def test_all_of_a_files_unpacking_is_held_to_the_per_file_cap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert containers.MAX_INFLATED_BYTES <= MAX_FILE_BYTES
    card = ztxt_chunk("chara", V2)
    monkeypatch.setattr(containers, "MAX_INFLATED_BYTES", 100)
    message = refusal(png(card), "seren.png")
    assert message.endswith("unpacks to more than 100 bytes; refused.")
    assert "zTXt chunk 'chara'" in message
