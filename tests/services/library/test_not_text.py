"""Binary files under a text name are refused, naming what they look like; odd but real
text (UTF-16 without its mark, a stray NUL) is still read."""

from __future__ import annotations

import gzip

import pytest
from tests.kit.library import card_png

from talekeeper.core.errors import InvalidInput
from talekeeper.core.tokens import BpeCounter
from talekeeper.services.library import read_document, store

pytestmark = pytest.mark.no_database

JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01" + b"pixels " * 300


@pytest.mark.parametrize(
    "name, data, looks",
    [
        ("card.txt", card_png(), "it looks like a PNG image"),
        ("photo.md", JPEG, "it looks like a JPEG image"),
        ("notes.txt", gzip.compress(b"words " * 1000), "it looks like a gzip archive"),
        ("tool.txt", b"\x7fELF\x02\x01\x01" + b"text " * 400, "it looks like a program (ELF)"),
        ("tool.txt", b"MZ\x90\x00\x03" + b"This program " * 40, "it looks like a Windows program"),
        (
            "data.txt",
            (b"\x00\x00\x01\x00record\x00" * 200),
            "it holds NUL bytes (800 in its first 2,200 bytes)",
        ),
    ],
)
def test_a_binary_file_under_a_text_name_is_refused(name: str, data: bytes, looks: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        store.prepare(name, data, BpeCounter())
    message = refused.value.message
    assert message.startswith(f"{name} is not a text document: {looks}"), message
    assert "Upload a .txt, .md, .html, .pdf or .epub file" in message


@pytest.mark.parametrize(
    "data, text",
    [
        ("No mark.".encode("utf-16-le"), "No mark."),
        ("Big end.".encode("utf-16-be"), "Big end."),
        (b"A log cut short.\x00\x00", "A log cut short."),
        (b"MZ is how the ledger marks the Mazeway.", "MZ is how the ledger marks the Mazeway."),
    ],
)
def test_odd_but_real_text_is_still_read(data: bytes, text: str) -> None:
    assert read_document(data, "a.txt").text == text
