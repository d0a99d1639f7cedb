"""A newcomer who already runs a model server: the first page says the built-in narrator is
a placeholder, finds the server on 127.0.0.1:11434 (Ollama's port) and switches to it in one
click; the settings page offers the same."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from tests.browser.conftest import Live, shoot
from tests.conftest import make_settings

from talekeeper.settings import Settings
from talekeeper_testkit.double import ModelDouble

OLLAMA_PORT = 11434


@pytest.fixture
def live_settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)  # a fresh install: the embedded defaults, the usual ports


@pytest.fixture
def ollama() -> Iterator[ModelDouble]:
    """A fake Ollama: an OpenAI-compatible server on Ollama's own port."""
    with ModelDouble(models=("llama3.2", "qwen2.5:7b"), port=OLLAMA_PORT) as server:
        yield server


def test_the_first_page_finds_a_local_server_and_switches_in_one_click(
    live: Live, page: Any, ollama: ModelDouble
) -> None:
    page.goto(live.url + "/")
    notice = page.locator("#first-run")
    expect(notice).to_contain_text("placeholder")
    expect(notice.get_by_role("link", name="open Settings")).to_have_attribute("href", "/settings")
    expect(notice).to_contain_text(f"Ollama at http://127.0.0.1:{OLLAMA_PORT}/v1")
    shoot(page, "first-run-local-server")

    notice.get_by_role("button", name="Use qwen2.5:7b from Ollama").click()

    expect(page.locator(".topbar .models")).to_contain_text("qwen2.5:7b")
    expect(page.locator("#first-run")).to_have_count(0)  # no longer on the placeholder
    values = live.api.get("/api/settings").json()["values"]
    assert values["endpoint_url"] == ollama.url and values["model"] == "qwen2.5:7b"
    assert values["api_key_set"] is False

    # And the story is told by it.
    ollama.script("Lanterns sway along the quay as the tide comes in.")
    page.get_by_role("button", name="Start “The Lantern Coast”").click()
    box = page.get_by_label("Your action")
    box.fill("walk to the quay")
    box.press("Enter")
    expect(page.locator("#story .entry-narration .entry-text").last).to_have_text(
        "Lanterns sway along the quay as the tide comes in.", timeout=30_000
    )
    asked = [r for r in ollama.requests if r.path == "/v1/chat/completions"]
    assert asked[0].body["model"] == "qwen2.5:7b"


def test_the_settings_page_lists_it_and_fills_the_form(
    live: Live, page: Any, ollama: ModelDouble
) -> None:
    page.goto(live.url + "/settings")
    side = page.locator(".settings-side")
    expect(side).to_contain_text(f"Ollama at http://127.0.0.1:{OLLAMA_PORT}/v1")
    side.get_by_role("button", name="Use llama3.2 from Ollama").click()
    expect(page.get_by_label("Endpoint URL", exact=True)).to_have_value(ollama.url)
    expect(page.get_by_label("Narrator model", exact=True)).to_have_value("llama3.2")
    expect(side.get_by_role("button", name="Use llama3.2 from Ollama")).to_be_disabled()
    expect(side).to_contain_text("Now narrating with llama3.2")


def test_with_nothing_running_the_page_says_where_it_looked(live: Live, page: Any) -> None:
    page.goto(live.url + "/")
    expect(page.locator("#first-run")).to_contain_text("No model server answered")
    expect(page.locator("#first-run")).to_contain_text("Ollama 11434")


def test_a_servers_model_names_are_shown_as_text(live: Live, page: Any) -> None:
    hostile = '<img src=x onerror="document.title=1">'
    with ModelDouble(models=(hostile,), port=OLLAMA_PORT):
        page.goto(live.url + "/")
        expect(page.locator("#first-run")).to_contain_text(f"Use {hostile}")
    assert page.locator("#first-run img").count() == 0
    assert page.title() != "1"
