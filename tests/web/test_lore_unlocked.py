"""A lore file is read with no transaction open, so however slow or hostile it is, nobody
else waits for it.

- An 8 MB PNG padded with 400 compressed junk chunks (each would unpack past the cap)
  around one card: the preview answers at once with the card, because the junk is never
  unpacked (before, the first junk chunk refused the file, and junk just under the cap
  held the database's writer lock for half a minute).
- A preview takes no writer lock at all: held by another connection, the previews of
  both ways in still answer 200.
- While an import's reading is held in progress (the real route, paused inside the
  reader), another account's edit answers 200 at once, on a preview and a confirm alike.
- Another account's adventure is a 404 before its file is looked at.

The database URL sets a short busy timeout, so a write that had to wait for a held lock
would end in a 503 within ``WINDOW_S``, not fifteen seconds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from tests.conftest import LOCAL, database_url, double_settings
from tests.kit.accounts import CHEAP, PASSWORD, As
from tests.kit.lore import adventure, cards_of, import_lore
from tests.kit.web import OCTETS
from tests.kit.writer_lock import OutsideLock
from tests.services.lore.builders import fixture, fixture_json, junk_chunks, png, ztxt_chunk

from talekeeper.services.accounts import create_user
from talekeeper.services.lore import containers, read_lore
from talekeeper.services.story import lore_apply
from talekeeper.storage.db import LOCK_ATTEMPTS, session_scope
from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble
from talekeeper_testkit.live import serving

WAIT_S = 1.0  # each try's busy timeout, as the database URL sets it
WINDOW_S = WAIT_S * LOCK_ATTEMPTS  # a write that waits for a held lock is a 503 by then
JUNK = 400
CARD = fixture_json("character_card_v2.json")  # Seren Ashdown
SEREN = fixture("character_card_v2.json")
LORE = fixture("sillytavern_world_info.json")


@cache
def junk_png() -> bytes:
    """About 8 MB: junk chunks that would each unpack past the cap, the card among them."""
    past = containers.MAX_INFLATED_BYTES + 1024 * 1024
    half = junk_chunks(JUNK // 2, past)
    return png(half, ztxt_chunk("chara", CARD), half)


def short_timeout(tmp_path: Path) -> str:
    """The app's database URL, with the short busy timeout."""
    url = database_url(tmp_path / "data" / "talekeeper.db")
    return f"{url}{'&' if '?' in url else '?'}timeout={WAIT_S}"


def test_an_8_mb_png_of_junk_chunks_is_previewed_at_once_and_the_junk_never_unpacked(
    client: TestClient,
) -> None:
    data = junk_png()
    assert 7_500_000 < len(data) < containers.MAX_INFLATED_BYTES
    aid = adventure(client)
    began = time.monotonic()
    preview = import_lore(client, aid, data, "seren.png", dry_run="true")
    took = time.monotonic() - began
    assert preview.status_code == 200, preview.text
    body = preview.json()
    assert body["format"] == "character_card_v2"
    assert [c["name"] for c in body["cards"]][:1] == ["Seren Ashdown"]
    assert took < 5.0, took  # unpacking 400 chunks of 21 MB each took about a minute
    made = import_lore(client, aid, data, "seren.png")
    assert made.status_code == 200, made.text
    assert [c["name"] for c in cards_of(client, aid)] == [c["name"] for c in body["cards"]]


def test_previews_take_no_writer_lock(tmp_path: Path, double: ModelDouble) -> None:
    url = short_timeout(tmp_path)
    settings = double_settings(tmp_path, double, database_url=url)
    with TestClient(create_app(settings), base_url=LOCAL) as client:
        aid = adventure(client)
        before = client.get("/api/adventures").json()
        outside = OutsideLock(url)
        outside.take()
        try:
            lore = import_lore(client, aid, LORE, "w.json", dry_run="true")
            scenario = client.post(
                "/api/adventures/from-file",
                params={"filename": "seren.json", "dry_run": "true"},
                content=SEREN,
                headers=OCTETS,
            )
        finally:
            outside.release()
            outside.close()
        assert lore.status_code == 200, lore.text  # it waited for no lock: no 503
        assert scenario.status_code == 200, scenario.text
        assert cards_of(client, aid) == [] and client.get("/api/adventures").json() == before


class HeldReading:
    """The reader a route calls (``lore_apply.<name>``), paused at its start until released:
    the real route and the real reader, with the reading in progress as long as a test
    needs."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        real: Callable[..., Any] = getattr(lore_apply, name)

        def held(*args: Any, **kwargs: Any) -> Any:
            self.started.set()
            if not self.release.wait(60):
                raise AssertionError("the held reading was never released")
            return real(*args, **kwargs)

        monkeypatch.setattr(lore_apply, name, held)


def signed_in(url: str, name: str) -> httpx.Client:
    """A client of the live server acting as ``name`` (its session cookie sent by hand)."""
    with httpx.Client(base_url=url, timeout=60) as login:
        answer = login.post("/api/auth/login", json={"username": name, "password": PASSWORD})
        assert answer.status_code == 200, answer.text
        cookie = answer.cookies["tk_session"]
    return httpx.Client(base_url=url, timeout=60, headers={"Cookie": f"tk_session={cookie}"})


# (the route, the reader it calls, the file, and what a success answers)
WAYS_IN = {
    "lore preview": ("/api/adventures/{aid}/lore/import", "read_lore", LORE, True, 200),
    "lore import": ("/api/adventures/{aid}/lore/import", "read_lore", LORE, False, 200),
    "card preview": ("/api/adventures/from-file", "read_scenario", SEREN, True, 200),
    "card adventure": ("/api/adventures/from-file", "read_scenario", SEREN, False, 201),
}


@pytest.mark.parametrize("way", WAYS_IN)
def test_another_accounts_edit_answers_at_once_while_a_file_is_being_read(
    tmp_path: Path, double: ModelDouble, monkeypatch: pytest.MonkeyPatch, way: str
) -> None:
    route, reader, data, dry_run, success = WAYS_IN[way]
    url = short_timeout(tmp_path)
    app = create_app(double_settings(tmp_path, double, database_url=url, auth="accounts"))
    with serving(app) as (base, _loop):
        with session_scope(app.state.runtime.sessions) as session:
            for name in ("mara", "tal"):
                create_user(session, name, PASSWORD, hasher=CHEAP)
        with signed_in(base, "mara") as mara, signed_in(base, "tal") as tal:
            hers = mara.post("/api/adventures", json={"title": "Hers"}).json()["id"]
            his = tal.post("/api/adventures", json={"title": "His"}).json()["id"]
            held = HeldReading(monkeypatch, reader)
            answers: list[httpx.Response] = []
            params = {"filename": "file.json", "dry_run": str(dry_run).lower()}
            upload = threading.Thread(
                target=lambda: answers.append(
                    mara.post(route.format(aid=hers), params=params, content=data, headers=OCTETS)
                )
            )
            upload.start()
            try:
                assert held.started.wait(30), "the reading never began"
                began = time.monotonic()
                edit = tal.patch(f"/api/adventures/{his}", json={"title": "Edited"})
                took = time.monotonic() - began
            finally:
                held.release.set()
                upload.join(60)
            # Had the reading held the writer lock, the edit would be a 503 after WINDOW_S.
            assert edit.status_code == 200, edit.text
            assert edit.json()["title"] == "Edited" and took < WINDOW_S, took
            assert answers[0].status_code == success, answers[0].text


def test_another_accounts_adventure_is_a_404_before_its_file_is_read(
    accounts: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    mara, tal = As(accounts, "mara"), As(accounts, "tal")
    hers = mara.post("/api/adventures", json={"title": "Hers"}).json()["id"]
    assert mara.post(f"/api/adventures/{hers}/cards", json={"name": "Mine"}).status_code == 201
    read: list[bytes] = []

    def reading(data: bytes, *args: Any, **kwargs: Any) -> Any:
        read.append(data)
        return read_lore(data, *args, **kwargs)

    monkeypatch.setattr(lore_apply, "read_lore", reading)
    for data in (b"\x00not a lore file", junk_png(), LORE):
        for dry_run in ("true", "false"):
            answer = tal.post(
                f"/api/adventures/{hers}/lore/import",
                params={"filename": "x.json", "dry_run": dry_run},
                content=data,
                headers=OCTETS,
            )
            assert answer.status_code == 404, answer.text
            assert answer.json()["error"]["code"] == "not_found"
    assert read == []  # none of the files was looked at
    assert [c["name"] for c in cards_of(mara, hers)] == ["Mine"]  # type: ignore[arg-type]
    bad = b"\x00not a lore file"
    own = mara.post(
        f"/api/adventures/{hers}/lore/import",
        params={"filename": "x.json", "dry_run": "true"},
        content=bad,
        headers=OCTETS,
    )
    assert own.status_code == 400 and "not a lore file" in own.json()["error"]["message"]
    assert read == [bad]  # the owner's file is read, and refused with what to fix
