"""The settings and debug pages in a real browser, against the app and the model double."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import expect
from tests.browser.conftest import Live, shoot

from talekeeper_testkit.double import closed_port_url

SECRET = "sk-never-shown-7f3a9c"


def open_settings(live: Live, page: Any) -> None:
    page.goto(live.url + "/settings")
    expect(page.get_by_label("Reply length (tokens)", exact=True)).to_be_visible()


def settings(live: Live) -> dict[str, Any]:
    values: dict[str, Any] = live.api.get("/api/settings").json()["values"]
    return values


# -- settings -------------------------------------------------------------------------------


def test_settings_show_the_current_values_and_their_help(live: Live, page: Any) -> None:
    live.api.patch("/api/settings", json={"bank_capacity": 150})
    open_settings(live, page)
    expect(page.get_by_label("Endpoint URL", exact=True)).to_have_value(live.double.url)
    expect(page.get_by_label("Narrator model", exact=True)).to_have_value("double-narrator")
    expect(page.get_by_label("Memories and summary model", exact=True)).to_have_value(
        "double-summary"
    )
    expect(page.get_by_label("Embedding model", exact=True)).to_have_value("double-embed")
    expect(page.get_by_label("API mode", exact=True)).to_have_value("chat")
    expect(page.get_by_label("Temperature", exact=True)).to_have_value("0.8")
    expect(page.get_by_label("Memory Bank capacity", exact=True)).to_have_value("150")
    main = page.locator("main")
    expect(main).to_contain_text("Sampling temperature for the narrator.")
    expect(main).to_contain_text("How many memories are retrieved into each turn's context.")
    capacity = page.locator('.setting[data-key="bank_capacity"]')
    expect(capacity).to_contain_text("yours")
    expect(capacity).to_contain_text("Server default: 200.")
    expect(page.locator('.setting[data-key="temperature"]')).to_contain_text("server default")


def test_the_api_key_is_write_only(live: Live, page: Any) -> None:
    assert live.api.patch("/api/settings", json={"api_key": SECRET}).status_code == 200
    open_settings(live, page)
    key = page.get_by_label("API key", exact=True)
    expect(key).to_have_value("")
    expect(key).to_have_attribute("type", "password")
    expect(page.locator('.setting[data-key="api_key"]')).to_contain_text("A key is set.")
    assert SECRET not in page.content()
    assert SECRET not in live.api.get("/api/settings").text
    # Removing it sends null: the key is gone, and still never shown.
    page.get_by_role("button", name="Remove the key").click()
    expect(page.locator(".key-status")).to_have_text("Your key will be removed when you save.")
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator(".form-message")).to_contain_text("Saved 1 setting.")
    expect(page.locator(".key-status")).to_have_text("No key is set.")
    assert settings(live)["api_key_set"] is False


def test_credentials_in_the_endpoint_url_are_never_shown_and_survive_a_save(
    live: Live, page: Any
) -> None:
    with_credentials = live.double.url.replace("http://", f"http://player:{SECRET}@")
    saved = live.api.patch("/api/settings", json={"endpoint_url": with_credentials})
    assert saved.status_code == 200, saved.text
    open_settings(live, page)
    expect(page.get_by_label("Endpoint URL", exact=True)).to_have_value(live.double.url)
    expect(page.locator('.setting[data-key="endpoint_url"]')).to_contain_text(
        "A user name and password are set in this URL"
    )
    assert SECRET not in page.content() and "player:" not in page.content()
    # Saving another field leaves the URL (and its credentials) as they were.
    page.get_by_label("Temperature", exact=True).fill("1.1")
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator(".form-message")).to_contain_text("Saved 1 setting.")
    values = settings(live)
    assert values["endpoint_credentials_set"] is True and values["temperature"] == 1.1


def test_changed_values_are_saved_and_survive_a_reload(live: Live, page: Any) -> None:
    open_settings(live, page)
    page.get_by_label("Temperature", exact=True).fill("1.3")
    page.get_by_label("Reply length (tokens)", exact=True).fill("321")
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator(".form-message")).to_contain_text("Saved 2 settings.")
    values = settings(live)
    assert values["temperature"] == 1.3 and values["reply_tokens"] == 321
    assert values["top_p"] == 0.95  # untouched
    assert live.api.get("/api/settings").json()["overridden"] == ["reply_tokens", "temperature"]
    page.reload()
    expect(page.get_by_label("Temperature", exact=True)).to_have_value("1.3")
    expect(page.get_by_label("Reply length (tokens)", exact=True)).to_have_value("321")
    # Back to the server default: null is sent, the override is gone, other edits stay.
    page.get_by_label("Top-p", exact=True).fill("0.5")
    page.get_by_role("button", name="Use the server default for Temperature").click()
    expect(page.get_by_label("Temperature", exact=True)).to_have_value("0.8")
    expect(page.get_by_label("Top-p", exact=True)).to_have_value("0.5")
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator(".form-message")).to_contain_text("Saved 2 settings.")
    assert live.api.get("/api/settings").json()["overridden"] == ["reply_tokens", "top_p"]
    assert settings(live)["temperature"] == 0.8 and settings(live)["top_p"] == 0.5


def test_an_invalid_value_shows_the_servers_message_and_saves_nothing(
    live: Live, page: Any
) -> None:
    open_settings(live, page)
    page.get_by_label("Reply length (tokens)", exact=True).fill("99")
    page.get_by_label("Temperature", exact=True).fill("9")
    page.get_by_role("button", name="Save settings").click()
    message = page.locator(".form-message")
    expect(message).to_contain_text("Nothing was saved")
    expect(message).to_contain_text("TALEKEEPER_TEMPERATURE=9")
    expect(message).to_contain_text("a number from 0 to 2")
    field = page.locator('.setting[data-key="temperature"]')
    expect(field.locator(".field-error")).to_contain_text("a number from 0 to 2")
    expect(page.get_by_label("Temperature", exact=True)).to_have_attribute("aria-invalid", "true")
    values = settings(live)
    assert values["temperature"] == 0.8 and values["reply_tokens"] == 200


def test_the_model_pickers_list_the_endpoints_models(live: Live, page: Any) -> None:
    open_settings(live, page)
    expect(page.locator(".models-status")).to_contain_text("offers 3 models")
    assert any(r.path == "/v1/models" for r in live.double.requests)
    picker = page.get_by_label("Choose the narrator model from the list")
    expect(picker.locator("optgroup[label='Offered by the endpoint'] option")).to_have_text(
        ["double-embed", "double-narrator", "double-summary"]
    )
    expect(picker.locator("option[value='embedded']")).to_have_count(1)
    embed = page.get_by_label("Choose the embedding model from the list")
    expect(embed.locator("option[value='none']")).to_contain_text("Memory Bank is off")
    picker.select_option("double-summary")
    expect(page.get_by_label("Narrator model", exact=True)).to_have_value("double-summary")
    page.get_by_label("Narrator model", exact=True).fill(
        "a-model-typed-by-hand"
    )  # free text is fine
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator(".form-message")).to_contain_text("Saved 1 setting.")
    assert settings(live)["model"] == "a-model-typed-by-hand"
    expect(page.locator(".topbar .models")).to_contain_text("a-model-typed-by-hand")


def test_test_connection_reports_what_works(live: Live, page: Any) -> None:
    live.double.script("The gulls wheel over the drowned bell.")
    open_settings(live, page)
    page.get_by_role("button", name="Test connection").click()
    report = page.locator(".connection-report")
    expect(report).to_contain_text("Everything works.")
    narrator = report.locator('[data-check="Narrator"]')
    expect(narrator).to_contain_text("double-narrator")
    expect(narrator).to_contain_text("works")
    expect(narrator).to_contain_text("The gulls wheel over the drowned bell.")
    expect(narrator).to_contain_text(re.compile(r"Answered in \d+ ms"))
    embeddings = report.locator('[data-check="Embeddings"]')
    expect(embeddings).to_contain_text("double-embed")
    expect(embeddings).to_contain_text("64 dimensions")
    expect(report).not_to_contain_text("{")  # sentences, not JSON
    shoot(page, "settings")


def test_test_connection_reports_an_unreachable_endpoint(live: Live, page: Any) -> None:
    closed = closed_port_url()
    open_settings(live, page)
    page.get_by_label("Endpoint URL", exact=True).fill(closed)
    page.get_by_label("Endpoint URL", exact=True).press(
        "Tab"
    )  # the model list follows the unsaved URL
    expect(page.locator(".models-status")).to_contain_text("could not be read")
    expect(page.locator(".models-status")).to_contain_text(f"Is the server running at {closed}?")
    page.get_by_role("button", name="Test connection").click()
    report = page.locator(".connection-report")
    expect(report).to_contain_text("Something does not work")
    narrator = report.locator('[data-check="Narrator"]')
    expect(narrator).to_contain_text("does not work")
    expect(narrator).to_contain_text(f"Could not connect to {closed}")
    expect(report.locator('[data-check="Embeddings"]')).to_contain_text("does not work")
    assert settings(live)["endpoint_url"] == live.double.url  # tested, not saved


# -- debug ----------------------------------------------------------------------------------


def test_debug_lists_ai_calls_with_a_failed_ones_error(live: Live, page: Any) -> None:
    adventure = live.adventure()
    memory = {"text": "Maren keeps the brass key."}  # embedded in the background
    assert live.api.post(f"/api/adventures/{adventure['id']}/memories", json=memory).is_success
    live.double.script("Maren lights the lamp.", "The tide turns.")
    live.turn(adventure["id"], "look at the sea")
    live.turn(adventure["id"], "climb the tower")
    live.double.fail_next("500", model="double-narrator")
    failed = live.api.post(
        f"/api/adventures/{adventure['id']}/actions", json={"type": "do", "text": "wait"}
    )
    assert failed.status_code >= 500, failed.text
    live.idle()
    page.goto(live.url + "/debug")
    rows = page.locator(".calls-table tbody tr")
    expect(rows.first).to_be_visible()
    expect(page.locator('.calls-table tr[data-kind="narration"]')).to_have_count(3)
    expect(page.locator('.calls-table tr[data-kind="embedding"]').first).to_be_visible()
    error_row = page.locator(".calls-table tr.status-error")
    expect(error_row).to_have_count(1)
    expect(error_row).to_contain_text("double-narrator")
    expect(error_row).to_contain_text("injected server error")
    expect(error_row).to_contain_text(adventure["title"])
    newest = live.api.get("/api/ai-calls").json()[0]
    assert rows.first.get_attribute("data-call-id") == str(newest["id"])  # newest first
    page.get_by_label("Status").select_option("error")
    expect(rows).to_have_count(1)
    page.get_by_label("Status").select_option("")
    page.get_by_label("Kind").select_option("narration")
    expect(rows).to_have_count(3)
    page.get_by_label("Kind").select_option("")
    live.api.post("/api/settings/test-connection")  # calls of no adventure
    page.get_by_role("button", name="Refresh").click()
    expect(page.locator('.calls-table tr[data-kind="test"]')).to_have_count(2)
    page.get_by_label("Adventure").select_option(str(adventure["id"]))
    mine = live.api.get("/api/ai-calls", params={"adventure_id": adventure["id"]}).json()
    expect(rows).to_have_count(len(mine))
    expect(page.locator('.calls-table tr[data-kind="test"]')).to_have_count(0)


def test_debug_cuts_a_long_error_short_and_shows_all_of_it_on_demand(live: Live, page: Any) -> None:
    live.api.post("/api/settings/test-connection", json={"model": "no-such-model"})
    error = live.api.get("/api/ai-calls", params={"status": "error"}).json()[0]["error"]
    assert len(error) > 160 and error.endswith("(or pull the model on the server first).")
    page.goto(live.url + "/debug")
    row = page.locator(".calls-table tr.status-error")
    expect(row).to_contain_text("test")
    expect(row).to_contain_text("no model named 'no-such-model'")
    full = row.locator(".error-full")
    expect(full).to_be_hidden()
    row.get_by_label("Show the full error").click()
    expect(full).to_be_visible()
    expect(full).to_have_text(error)


def test_debug_shows_background_work_and_a_failed_pass(live: Live, page: Any) -> None:
    adventure = live.adventure()
    quiet = live.adventure(title="A quiet tale")
    live.double.fail_next("500", model="double-summary")  # the first memory pass's request
    for n in range(6):  # the 12th action starts the first memory
        live.turn(adventure["id"], f"walk on, step {n}")
        live.idle()  # one background run per turn: none retries the failed pass unasked
    derived = live.api.get(f"/api/adventures/{adventure['id']}/derived").json()
    assert derived["memory"]["state"] == "failed", derived
    page.goto(live.url + "/debug")
    card = page.locator(f'.work-adventure[data-adventure-id="{adventure["id"]}"]')
    memory = card.locator('.work-kind[data-kind="memory"]')
    expect(memory.locator(".state-badge")).to_have_text("failed")
    expect(memory).to_contain_text("injected server error")
    expect(memory).to_contain_text("Failed 1 time in a row")
    expect(card.locator('.work-kind[data-kind="embedding"] .state-badge')).to_have_text("idle")
    expect(card).to_contain_text("1 pass failed")
    other = page.locator(f'.work-adventure[data-adventure-id="{quiet["id"]}"]')
    expect(other).to_contain_text("A quiet tale")
    expect(other.locator(".state-failed")).to_have_count(0)
    expect(page.locator(".calls-table tr.status-error")).to_contain_text("double-summary")
    shoot(page, "debug")
    # The next turn retries the pass; Refresh shows it recovered.
    live.turn(adventure["id"], "rest")
    live.idle()
    page.get_by_role("button", name="Refresh").click()
    expect(memory.locator(".state-badge")).to_have_text("idle")
    expect(memory).to_contain_text("Recovered from an earlier error")
