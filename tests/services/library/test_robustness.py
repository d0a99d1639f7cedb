"""Whatever the bytes, read_document returns a Document or raises InvalidInput."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.services.library import builders

from talekeeper.core.errors import InvalidInput
from talekeeper.services.library import Document, read_document

pytestmark = pytest.mark.no_database

PDF = builders.pdf([("Book One", 0, ["Hello there. " * 20]), ("Two", 1, ["More text."])])
EPUB = builders.ebook(
    [
        builders.chapter("a.xhtml", "A", "<h1>A</h1><p>Alpha text.</p>"),
        builders.chapter("b.xhtml", "B", "<p>Beta text.</p>"),
    ]
)
HTML = b"<html><head><title>T</title></head><body><h1>A</h1><p>x</p></body></html>"


def read_or_refuse(data: bytes, filename: str) -> None:
    try:
        assert isinstance(read_document(data, filename), Document)
    except InvalidInput as refused:
        assert refused.message


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.binary(max_size=2000),
        st.binary(max_size=2000).map(lambda b: b"%PDF-1.7\n" + b),
        st.binary(max_size=2000).map(lambda b: b"PK\x03\x04" + b),
        st.binary(max_size=500).map(lambda b: b"<html><body><p>" + b),
    ),
    st.sampled_from(["a.txt", "a.md", "a.pdf", "a.epub", "a.html", "", "../x"]),
)
def test_random_bytes(data: bytes, filename: str) -> None:
    read_or_refuse(data, filename)


@pytest.mark.parametrize("original", [PDF, EPUB, HTML], ids=["pdf", "epub", "html"])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_corrupted_real_files(original: bytes, data: st.DataObject) -> None:
    corrupted = bytearray(original)
    for _ in range(data.draw(st.integers(1, 20))):
        at = data.draw(st.integers(0, len(corrupted) - 1))
        corrupted[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(1, len(corrupted)))
    read_or_refuse(bytes(corrupted[:cut]), "corrupted")


def test_real_files_read() -> None:
    for data in (PDF, EPUB, HTML):
        assert read_document(data, "x").sections
