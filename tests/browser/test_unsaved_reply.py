"""A reply that was written but could not be saved is still shown to the player.

The database is held busy from outside (a plain ``sqlite3`` connection holding the write
lock, as another process would) from the moment the reply starts streaming until the turn
gives up saving it. The page must show the error, the saved action, and the reply's text
(as text, where it can be read and copied); once the lock is gone, Retry writes a reply.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from tests.browser.conftest import Live
from tests.conftest import make_settings
from tests.kit.browser import open_play, state, story

from talekeeper.settings import Settings
from talekeeper_testkit.double import ModelDouble

REPLY = "The bell tower answers with three slow strokes, and the fog parts over the harbour."


@pytest.fixture
def live_settings(tmp_path: Path, double: ModelDouble) -> Settings:
    database = tmp_path / "data" / "talekeeper.db"
    return make_settings(
        tmp_path,
        # A short busy timeout: the save gives up after a second or so, not half a minute.
        database_url=f"sqlite:///{database}?timeout=0.2",
        endpoint_url=double.url,
        model="double-narrator",
        embedding_model="double-embed",
        summary_model="double-summary",
        timeout="10",
    )


def test_a_reply_that_could_not_be_saved_is_shown_and_retry_saves_one(
    live: Live, page: Any, live_settings: Settings
) -> None:
    aid = live.adventure()["id"]
    live.idle()
    live.double.script(REPLY)
    live.double.chunk_delay = 0.1  # the reply streams for about a second
    open_play(page, live, aid, 1)
    box = page.get_by_label("Your action")
    box.fill("I ring the harbour bell")
    box.press("Enter")
    expect(page.locator("#story .entry.streaming")).to_have_count(1)
    expect(page.locator("#story .entry.streaming")).to_contain_text("bell tower")
    outside = sqlite3.connect(
        Path(live_settings.data_dir) / "talekeeper.db", isolation_level=None, timeout=30
    )
    try:
        outside.execute("BEGIN IMMEDIATE")  # the action is saved; the reply's save will wait
        notice = page.locator(".turn-error")
        expect(notice).to_contain_text("could not be saved", timeout=20_000)
        expect(notice).to_contain_text("Your action is saved")
        expect(notice.locator(".turn-unsaved")).to_have_text(REPLY)
    finally:
        outside.execute("ROLLBACK")
        outside.close()
    live.double.chunk_delay = 0.0
    assert state(live, aid)["awaiting_reply"] is True
    live.double.script("The keeper climbs down at last.")
    page.locator(".turn-error").get_by_role("button", name="Retry").click()
    # The streamed text shows before it is saved: wait for the story reloaded from the
    # server (its entries carry their ids), which happens once the turn has ended.
    saved = page.locator("#story .entry-narration[data-id] .entry-text")
    expect(saved.last).to_have_text("The keeper climbs down at last.")
    expect(page.locator("#story .entry.streaming")).to_have_count(0)
    expect(page.locator(".turn-error")).to_have_count(0)
    assert [a["type"] for a in story(live, aid)] == ["narration", "do", "narration"]
    assert state(live, aid)["head"]["text"] == "The keeper climbs down at last."
