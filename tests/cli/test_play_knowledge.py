"""``talekeeper play`` shows the knowledge library in Insights: ``/dry`` on an adventure
with a source attached lists the passage that would go in, with its source, place and
scores."""

from __future__ import annotations

import re
import time

from tests.kit.cli import Cli, Terminal, api


def test_dry_lists_the_library_passage_with_its_source_place_and_scores(cli: Cli) -> None:
    with api(cli) as client:
        made = client.post(
            "/api/library",
            params={"filename": "coast.md"},
            content=b"# Coast\n\n## Vessmoor\n\nThe abbey of Vessmoor stands on a tidal island.",
            headers={"Content-Type": "application/octet-stream"},
        )
        assert made.status_code == 201, made.text
        source = made.json()["id"]
        deadline = time.monotonic() + 30
        while client.get(f"/api/library/{source}").json()["state"] == "indexing":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        adventure = client.post("/api/adventures", json={"title": "Salt"}).json()["id"]
        put = client.put(f"/api/adventures/{adventure}/knowledge", json={"source_ids": [source]})
        assert put.status_code == 200, put.text
    with Terminal(cli, str(adventure)) as terminal:
        terminal.send(["/dry where is the abbey of Vessmoor", "/quit"])
        assert terminal.finish() == 0, terminal.stderr
        out = terminal.stdout
    line = next(x for x in out.splitlines() if "library Coast" in x)
    assert "Coast › Vessmoor" in line and "meaning " in line and "words " in line
    assert "tidal island" in line
    assert "Knowledge" in out and "1 of 1 library passages considered" in out
    # The first prompt this process sends the narrator: nothing kept from a previous one.
    assert re.search(r"prompt evaluated [\d,]+ \(0 kept from the previous prompt\)", out)
    # The layout in use: the knowledge floats just before the player's action.
    assert "context layout cache (knowledge 0 back)" in out
