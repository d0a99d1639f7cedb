"""Uploads that would exhaust or freeze the server, through the API: each refused with a 4xx
that says what is wrong and what to do, nothing written; one upload per user at a time,
while another user's goes on.

Real parts: the app on a migrated database (either pass), the bounded reader's child
process; the hostile files are built by ``tests.services.library.builders``."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.kit.accounts import As
from tests.kit.library import BIBLE, card_png, listed, refused, upload
from tests.kit.web import OCTETS
from tests.services.library import builders

from talekeeper.services.library import parsing

_MB = 1024 * 1024


@pytest.mark.parametrize(
    "name, build, words",
    [
        ("lying.epub", lambda: builders.lying_epub(2048), ["more than the 100 bytes"]),
        ("tags.epub", lambda: builders.empty_tags_epub(60 * _MB // 7), ["at most 100 to 1"]),
        ("card.txt", card_png, ["not a text document", "looks like a PNG image"]),
    ],
    ids=["2MB-lying-epub", "93KB-empty-tags-epub", "png-named-txt"],
)
def test_a_hostile_file_is_refused_with_what_is_wrong(
    client: TestClient, name: str, build: Callable[[], bytes], words: list[str]
) -> None:
    refused(upload(client, build(), name), 400, "invalid_input", name, *words)
    assert listed(client) == []


def test_a_file_past_the_cpu_bound_is_refused_and_leaves_nothing(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parsing, "BOUNDS", parsing.Bounds(cpu_seconds=2, wall_seconds=60))
    data = builders.shared_stream_pdf(5000, 20_000)
    answer = upload(client, data, "shared.pdf")
    refused(answer, 400, "invalid_input", "took more than 2 seconds of work", "convert it to .txt")
    assert listed(client) == []
    made = upload(client, BIBLE, "bible.md")  # the next file is read as ever
    assert made.status_code == 201, made.text


def test_one_upload_per_user_at_a_time_and_another_user_goes_on(
    accounts: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    mara, tal = As(accounts, "mara"), As(accounts, "tal")
    reading, release = threading.Event(), threading.Event()
    real = parsing.prepare

    def held(filename: str, data: bytes, **kwargs: Any) -> Any:
        if filename == "slow.md":  # holds its reader until the test lets it go
            reading.set()
            assert release.wait(30)
        return real(filename, data, **kwargs)

    monkeypatch.setattr(parsing, "prepare", held)
    first: list[Any] = []

    def send(who: As, name: str) -> Any:
        return who.post("/api/library", params={"filename": name}, content=BIBLE, headers=OCTETS)

    thread = threading.Thread(target=lambda: first.append(send(mara, "slow.md")))
    thread.start()
    try:
        assert reading.wait(30)
        second = send(mara, "second.md")
        message = refused(second, 429, "one_upload_at_a_time", "'slow.md' is still being read")
        assert "Send 'second.md' again when it is done" in message
        assert int(second.headers["Retry-After"]) > 0
        theirs = send(tal, "theirs.md")  # another user is not held up
        assert theirs.status_code == 201, theirs.text
    finally:
        release.set()
        thread.join(60)
    assert first[0].status_code == 201, first[0].text
    assert [s["filename"] for s in listed(mara)] == ["slow.md"]
    again = send(mara, "second.md")  # the first one read, the next is taken
    assert again.status_code == 201, again.text
