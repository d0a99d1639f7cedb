"""Browser tests: the real app served by uvicorn on loopback, the model double behind it, and
Debian's Chromium driven by Playwright.

- ``live``: a running server for one test (its own database and model double), with ``url``,
  ``double``, ``api`` (an httpx client for setting things up through the JSON API) and
  ``idle()`` (waits until the background memory work has run, on the server's own loop).
- ``admin_live``: the same in accounts mode, with the administrator's routes included; the
  modules about the admin page take it as their ``live``.
- ``page``: a fresh browser context and page; an uncaught error in the page fails the test.
- ``shoot(page, name)``: saves ``docs/screenshots/<name>.png`` (the README and docs show them).

Chromium is launched with ``executable_path`` (never a Playwright download); without it the
browser tests are skipped with a message that says what to install, and CI installs it.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from tests.conftest import double_settings
from tests.kit.web import with_admin

from talekeeper.settings import Settings
from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble
from talekeeper_testkit.live import serving

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
TIMEOUT_MS = 10_000


@dataclass
class Live:
    url: str
    double: ModelDouble
    app: FastAPI
    loop: asyncio.AbstractEventLoop
    api: httpx.Client = field(repr=False)

    def idle(self, timeout: float = 20.0) -> None:
        """Wait until every queued background pass (memories, summary, embeddings) has run."""
        runtime = self.app.state.runtime
        future = asyncio.run_coroutine_threadsafe(runtime.memory.idle(), self.loop)
        future.result(timeout)

    def adventure(self, **body: Any) -> dict[str, Any]:
        """Create an adventure through the API (default: the first shipped scenario)."""
        if "scenario" not in body and "title" not in body:
            body["scenario"] = self.api.get("/api/scenarios").json()[0]["id"]
        response = self.api.post("/api/adventures", json=body)
        assert response.status_code == 201, response.text
        created: dict[str, Any] = response.json()
        return created

    def turn(self, adventure_id: int, text: str, kind: str = "do") -> dict[str, Any]:
        response = self.api.post(
            f"/api/adventures/{adventure_id}/actions", json={"type": kind, "text": text}
        )
        assert response.status_code == 200, response.text
        reply: dict[str, Any] = response.json()
        return reply


@pytest.fixture
def live_settings(endpoint_settings: Settings) -> Settings:
    """The settings the live server runs with; a test module may override this fixture."""
    return endpoint_settings


@pytest.fixture
def live(live_settings: Settings, double: ModelDouble) -> Iterator[Live]:
    app = create_app(live_settings)
    with serving(app) as (url, loop), httpx.Client(base_url=url, timeout=30) as api:
        yield Live(url=url, double=double, app=app, loop=loop, api=api)


@pytest.fixture
def admin_live(tmp_path: Path, double: ModelDouble) -> Iterator[Live]:
    """A running server in accounts mode with the administrator's routes included
    (``with_admin``)."""
    app = with_admin(create_app(double_settings(tmp_path, double, auth="accounts")))
    with serving(app) as (url, loop), httpx.Client(base_url=url, timeout=30) as api:
        yield Live(url=url, double=double, app=app, loop=loop, api=api)


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """One Chromium for the browser tests (a launch costs about a second). Closed when they
    end, not kept for the session: Playwright's sync API keeps an event loop running in
    this thread while it is open, and later tests that call asyncio.run would find it (no
    browser test does)."""
    executable = shutil.which("chromium")
    if executable is None:
        pytest.skip("Chromium is not installed: apt-get install -y chromium (.ci/run does).")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert not errors, f"uncaught errors in the page: {errors}"


def shoot(page: Any, name: str) -> Path:
    """Save a screenshot of the page as docs/screenshots/<name>.png."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    assert path.stat().st_size > 1000, f"the screenshot {path} is empty"
    return path
