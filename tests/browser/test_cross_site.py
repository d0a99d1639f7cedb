"""A page on another origin attacks the app through a real Chromium: it posts a form to
undo the player's newest turn and fires a fetch() with a JSON body sent as text/plain
(neither needs a CORS preflight). The browser sends both; the app must refuse both and
the story must stay as it was.

The attacker's page comes from a second server on loopback: on 127.0.0.1 with another
port, the browser calls it ``same-site``; on ``localhost``, ``cross-site``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from tests.browser.conftest import Live

ATTACK = """<!doctype html>
<html><body>
<h1>Free lanterns</h1>
<form id="undo" method="post" action="{app}/api/adventures/{aid}/undo">
  <input type="hidden" name="confirm" value="1">
</form>
<script>
  fetch("{app}/api/adventures", {{
    method: "POST",
    mode: "no-cors",
    headers: {{"Content-Type": "text/plain"}},
    body: JSON.stringify({{title: "Planted"}}),
  }}).finally(() => document.getElementById("undo").submit());
</script>
</body></html>
"""


@contextmanager
def attacker(host: str, html: str) -> Iterator[str]:
    """A second loopback server (another origin) serving ``html`` at ``/``."""
    page = html.encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("host, site", [("127.0.0.1", "same-site"), ("localhost", "cross-site")])
def test_another_origins_page_can_neither_undo_nor_create(
    live: Live, page: Any, host: str, site: str
) -> None:
    aid = live.adventure()["id"]
    live.double.script("Old Maren nods at the tower.")
    live.turn(aid, "wave to Maren")
    live.idle()
    before = live.api.get(f"/api/adventures/{aid}/export").json()
    adventures = live.api.get("/api/adventures").json()

    seen: list[Any] = []
    page.on("response", lambda r: seen.append(r) if r.url.startswith(live.url) else None)
    with attacker(host, ATTACK.format(app=live.url, aid=aid)) as url:
        undo = f"{live.url}/api/adventures/{aid}/undo"
        with page.expect_response(undo) as landed:
            page.goto(url)
        # The form's answer replaces the attacker's page: wait until the browser is there
        # (the fetch's 403 can land first, while the navigation is still under way).
        page.wait_for_url(undo)

    answers = {(r.request.method, r.url): r for r in seen}
    form, created = landed.value, answers[("POST", f"{live.url}/api/adventures")]
    for response in (form, created):  # the browser did send both, from the attacker's page
        assert response.request.all_headers()["referer"] == url
        assert response.status == 403, response.text()
    # Playwright shows the fetch's headers only as the page asked for them, not the Sec-*
    # ones the browser added; the form's navigation shows them all.
    assert form.request.all_headers()["sec-fetch-site"] == site
    assert "Talekeeper takes changes only from its own pages" in form.text()
    assert "Talekeeper takes changes only from its own pages" in page.content()
    live.idle()
    assert live.api.get(f"/api/adventures/{aid}/export").json() == before
    assert live.api.get("/api/adventures").json() == adventures
