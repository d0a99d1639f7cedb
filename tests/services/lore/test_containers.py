"""PNG and CHARX character cards, built here from JSON cards: which chunk wins, the
warnings, and every refusal with its byte offset."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

import pytest
from tests.services.lore.builders import (
    charx,
    chunk,
    fixture_json,
    itxt_chunk,
    messages,
    png,
    refusal,
    text_chunk,
    ztxt_chunk,
)

from talekeeper.services.lore import LoreFormat, read_lore, read_scenario
from talekeeper.services.lore.fields import MAX_FILE_BYTES

pytestmark = pytest.mark.no_database

V2 = fixture_json("character_card_v2.json")
V3 = fixture_json("character_card_v3.json")
V1 = fixture_json("character_card_v1.json")
NAI = fixture_json("novelai_lorebook.json")
CHUNK_AT = len(png()) - 12  # where a chunk added before IEND starts


def test_a_chara_chunk_is_read_as_the_card_it_holds() -> None:
    result = read_lore(png(text_chunk("chara", V2)), "Seren.png")
    assert result.format is LoreFormat.CHARACTER_CARD_V2
    assert result.cards[0].name == "Seren Ashdown"
    assert f"Read from the PNG's tEXt chunk 'chara' at byte {CHUNK_AT}." in messages(result, "info")
    v1 = read_scenario(png(text_chunk("chara", V1)), "Ysolde.png")
    assert v1.format is LoreFormat.CHARACTER_CARD_V1


def test_ccv3_wins_over_chara_whichever_comes_first() -> None:
    for chunks in (
        (text_chunk("chara", V2), text_chunk("ccv3", V3)),
        (text_chunk("ccv3", V3), text_chunk("chara", V2)),
    ):
        result = read_lore(png(*chunks), "card.png")
        assert result.format is LoreFormat.CHARACTER_CARD_V3
        assert result.cards[0].name == "Lady Corvina Vey"
        assert any("older 'chara' copy" in m for m in messages(result, "info"))


def test_naidata_is_a_novelai_lorebook() -> None:
    result = read_lore(png(text_chunk("naidata", NAI)), "book.png")
    assert result.format is LoreFormat.NOVELAI_LOREBOOK
    assert [c.name for c in result.cards] == ["Sir Kell", "Aurelia", "Style"]


def test_other_text_chunks_are_passed_by() -> None:
    comment = chunk(b"tEXt", b"Comment\0made with a paint program")
    result = read_lore(png(comment, chunk(b"pHYs", b"\0" * 9), text_chunk("chara", V2)), "a.png")
    assert result.cards[0].name == "Seren Ashdown"


def test_ztxt_and_itxt_chunks_are_accepted_with_a_warning() -> None:
    for card_chunk, kind in (
        (ztxt_chunk("chara", V2), "zTXt"),
        (itxt_chunk("chara", V2, compressed=True), "iTXt"),
        (itxt_chunk("chara", V2, compressed=False), "iTXt"),
    ):
        result = read_lore(png(card_chunk), "card.png")
        assert result.cards[0].name == "Seren Ashdown"
        warning = f"The card was in a {kind} chunk, where tools write tEXt; read it."
        assert warning in messages(result, "info")


def test_a_truncated_chunk_is_refused_with_its_offset() -> None:
    whole = png(text_chunk("chara", V2))
    message = refusal(whole[: CHUNK_AT + 40], "card.png")
    assert message == (
        f"The PNG is truncated: the chunk at byte {CHUNK_AT} runs past the end of the file."
    )
    assert refusal(whole[: CHUNK_AT + 5], "card.png") == (
        f"The PNG is truncated: the chunk at byte {CHUNK_AT} is cut off."
    )


def test_a_png_without_iend_is_refused() -> None:
    assert refusal(png(text_chunk("chara", V2), end=False)) == (
        "The PNG has no IEND chunk: the file is truncated."
    )


def test_bad_base64_is_refused_naming_the_chunk_and_offset() -> None:
    bad = chunk(b"tEXt", b"chara\0not base64 at all!")
    assert refusal(png(bad)) == f"Bad base64 in the PNG's tEXt chunk 'chara' at byte {CHUNK_AT}."


def test_bad_json_inside_a_chunk_is_refused_with_line_and_column() -> None:
    import base64

    bad = chunk(b"tEXt", b"chara\0" + base64.b64encode(b'{"spec": "chara_card_v2",}'))
    assert refusal(png(bad)) == (
        f"The PNG's tEXt chunk 'chara' at byte {CHUNK_AT} is not valid JSON: Expecting "
        "property name enclosed in double quotes at line 1, column 26."
    )


def test_a_png_without_a_card_chunk_is_refused() -> None:
    assert refusal(png(chunk(b"tEXt", b"Title\0A picture"))) == (
        "The PNG holds no character card or lorebook: it has no text chunk named ccv3, chara, "
        "naidata."
    )


def test_a_compressed_chunk_that_unpacks_past_the_cap_is_refused() -> None:
    bomb = zlib.compress(b"A" * (MAX_FILE_BYTES + 10), 9)
    message = refusal(png(chunk(b"zTXt", b"chara\0\0" + bomb)))
    assert message.endswith(f"unpacks to more than {MAX_FILE_BYTES:,} bytes; refused.")
    assert "Bad compressed data" in refusal(png(chunk(b"zTXt", b"chara\0\0garbage")))


def test_a_charx_card_is_read_from_card_json_alone() -> None:
    data = charx(V3, **{"assets/icon/main.png": png(), "module.risum": b"\0\1"})
    result = read_scenario(data, "Corvina.charx", persona_name="Ada")
    assert result.format is LoreFormat.CHARACTER_CARD_V3
    assert result.opening == '"Welcome, Ada," says Corvina.'
    info = messages(result, "info")
    assert "Read card.json from a CHARX archive." in info
    assert "2 other files in the archive (assets) not imported." in info


def _patched(data: bytes, signature: bytes, offset: int, value: bytes) -> bytes:
    """``data`` with ``value`` written ``offset`` bytes into each header with ``signature``."""
    out = bytearray(data)
    at = out.find(signature)
    while at != -1:
        out[at + offset : at + offset + len(value)] = value
        at = out.find(signature, at + 4)
    return bytes(out)


def test_a_charx_with_a_path_leaving_its_folder_is_refused() -> None:
    for name in ("../evil.sh", "assets/../../evil.sh", "/etc/passwd", "C:/evil.bat"):
        message = refusal(charx(V3, **{name: b"x"}))
        assert message == f"The ZIP holds a path that leaves its folder ({name!r}); refused."


def test_an_encrypted_charx_is_refused() -> None:
    central = b"PK\x01\x02"  # the general-purpose flags are 8 bytes into a central header
    data = _patched(charx(V3), central, 8, struct.pack("<H", 1))
    assert refusal(data) == "The ZIP's member 'card.json' is encrypted; refused."


def test_a_card_json_over_the_cap_is_refused_by_its_declared_size() -> None:
    # the uncompressed size is 24 bytes into a central header: claim 30 MB
    data = _patched(charx(V3), b"PK\x01\x02", 24, struct.pack("<I", 30_000_000))
    assert refusal(data) == f"card.json unpacks to 30,000,000 bytes; the cap is {MAX_FILE_BYTES:,}."


def test_a_zip_bomb_card_json_is_refused() -> None:
    data = charx(b" " * (MAX_FILE_BYTES + 1))
    assert len(data) < 100_000
    assert "the cap is" in refusal(data)


def test_a_card_json_that_lies_about_its_size_is_never_read_past_it() -> None:
    # declared 10 bytes, really a whole card: reading stops at the declaration (a bad CRC)
    data = _patched(charx(V3), b"PK\x01\x02", 24, struct.pack("<I", 10))
    assert "card.json" in refusal(data)


def test_a_zip_without_card_json_at_its_root_is_refused() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("cards/card.json", b"{}")
    assert refusal(buffer.getvalue()) == (
        "The ZIP has no card.json at its root: it is not a CHARX card."
    )


def test_a_broken_zip_is_refused() -> None:
    assert refusal(b"PK\x03\x04" + b"\0" * 40).startswith("The ZIP cannot be read:")
    assert "not valid JSON" in refusal(charx(b"{not json"))
