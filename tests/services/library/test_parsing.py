"""An upload read in a bounded child: the same result as in-process; the reader's own
refusals; the CPU, memory and wall bounds, each a refusal that says what to do; one file
per user at a time. The hostile files are built by ``builders``."""

from __future__ import annotations

import multiprocessing
import time

import pytest
from tests.services.library import builders

from talekeeper.core.errors import InvalidInput
from talekeeper.core.tokens import BpeCounter
from talekeeper.services.library import parsing, store

pytestmark = pytest.mark.no_database

BIBLE = b"# The Salt Coast\n\n## Places\n\nGullhaven is a fishing town of slate roofs.\n\n" * 20
QUICK = parsing.Bounds(cpu_seconds=2, wall_seconds=60)


def refusal(name: str, data: bytes, bounds: parsing.Bounds) -> tuple[str, float]:
    began = time.monotonic()
    with pytest.raises(InvalidInput) as refused:
        parsing.prepare(name, data, bounds=bounds)
    return refused.value.message, time.monotonic() - began


def no_reader_left() -> bool:
    return not [p for p in multiprocessing.active_children() if "library-reader" in p.name]


def test_a_file_read_in_the_child_is_the_file_read_in_process() -> None:
    assert parsing.prepare("bible.md", BIBLE) == store.prepare("bible.md", BIBLE, BpeCounter())
    assert no_reader_left()


@pytest.mark.parametrize(
    "name, data, words",
    [
        ("manual.pdf", b"no pdf here", ["not a PDF"]),
        ("photo.txt", b"\x89PNG\r\n\x1a\n" + b"word " * 100, ["a PNG image"]),
        ("bad\x07.txt", b"words", ["control characters"]),  # refused before any child
    ],
)
def test_the_readers_refusals_come_back_as_they_are(
    name: str, data: bytes, words: list[str]
) -> None:
    message, _ = refusal(name, data, parsing.BOUNDS)
    for word in words:
        assert word in message, message


def test_a_pdf_of_pages_sharing_one_stream_is_stopped_at_the_cpu_bound() -> None:
    data = builders.shared_stream_pdf(5000, 20_000)  # about 700 KB; minutes to read
    assert len(data) < 800_000
    message, took = refusal("shared.pdf", data, QUICK)
    assert message == (
        "'shared.pdf' took more than 2 seconds of work to read; split it into smaller files "
        "or convert it to .txt."
    )
    assert took < 30  # 2 s of CPU, on a machine that may be busy
    assert no_reader_left()


def test_an_epub_of_empty_tags_within_the_packing_limit_is_bounded_too() -> None:
    # 23 MB of markup, 17 to 1: past the archive checks, about 20 s of CPU to read whole.
    slow = builders.empty_tags_epub(3_000_000, words_every=50)
    message, took = refusal("tags.epub", slow, QUICK)
    assert "took more than 2 seconds of work to read" in message and took < 30
    # A tenth of it is read, within the bounds.
    prepared = parsing.prepare("tags.epub", builders.empty_tags_epub(300_000, words_every=50))
    assert prepared.kind == "epub" and prepared.passages


def test_a_file_that_needs_more_memory_than_the_bound_is_refused() -> None:
    data = b"word and more words. " * 200_000  # one 4 MB paragraph
    message, _ = refusal("flat.txt", data, parsing.Bounds(memory_bytes=16 * 1024 * 1024))
    assert message == (
        "'flat.txt' needs more than 16 MB of memory to read; split it into smaller files."
    )
    assert parsing.prepare("flat.txt", data).kind == "txt"  # the real bound takes it


def test_a_read_past_the_wall_time_is_killed() -> None:
    data = builders.shared_stream_pdf(5000, 20_000)
    message, took = refusal("shared.pdf", data, parsing.Bounds(wall_seconds=1))
    assert "'shared.pdf' took more than 1 seconds to read" in message
    assert "try again when the server is less busy" in message
    assert took < 10 and no_reader_left()


def test_one_file_per_user_at_a_time_and_others_go_on() -> None:
    readers = parsing.Readers()
    with readers.claim(1, "big.pdf"):
        with pytest.raises(parsing.OneAtATime) as busy, readers.claim(1, "next.txt"):
            pass
        assert busy.value.status == 429 and busy.value.retry_after > 0
        assert busy.value.message == (
            "'big.pdf' is still being read: the library reads one file of yours at a time. "
            "Send 'next.txt' again when it is done."
        )
        with readers.claim(2, "theirs.txt"):  # another user is not held up
            pass
    with readers.claim(1, "next.txt"):  # the first one done, the next is taken
        pass
    with pytest.raises(RuntimeError), readers.claim(1, "boom.txt"):
        raise RuntimeError("a failed read")
    with readers.claim(1, "after.txt"):  # a failed read gives the place back
        pass
