"""``talekeeper play`` names the memories a small context had no room for: ``/dry`` lists
them apart, marked as left out, while those that went in are listed as before; each
section with a budget of its own shows its tokens against it."""

from __future__ import annotations

import time
from typing import Any

from tests.kit.cli import Cli, Terminal, api

FACTS = [
    f"Keeper {name} hid the brass key under the {place} stone."
    for name, place in (
        ("Maren", "third"),
        ("Odo", "fourth"),
        ("Tamsin", "fifth"),
        ("Ilse", "sixth"),
    )
]
QUESTION = "where did the keepers hide the brass key under the stone"


def test_dry_marks_the_memories_left_out_for_room(cli: Cli) -> None:
    found: dict[str, Any] = {}
    sections: list[dict[str, Any]] = []
    with api(cli) as client:
        essentials = " ".join(["The lighthouse keeper guards the coast."] * 40)
        made = client.post("/api/adventures", json={"title": "Salt", "plot_essentials": essentials})
        adventure = made.json()["id"]
        for fact in FACTS:
            written = client.post(f"/api/adventures/{adventure}/memories", json={"text": fact})
            assert written.status_code == 201, written.text
        dry = {"type": "do", "text": QUESTION}
        assert client.patch("/api/settings", json={"reply_tokens": 100}).is_success
        deadline = time.monotonic() + 30
        while not found:
            assert time.monotonic() < deadline, "no context size left memories out"
            for tokens in range(400, 1200, 25):
                assert client.patch("/api/settings", json={"context_tokens": tokens}).is_success
                shown = client.post(f"/api/adventures/{adventure}/insights/dry-run", json=dry)
                assert shown.status_code == 200, shown.text
                memories = shown.json()["memories"]
                if memories["used"] and memories["left_for_room"]:
                    found = memories
                    sections = shown.json()["sections"]
                    break
            else:
                time.sleep(0.1)  # the memories are still being embedded
    with Terminal(cli, str(adventure)) as terminal:
        terminal.send([f"/dry {QUESTION}", "/quit"])
        assert terminal.finish() == 0, terminal.stderr
        out = terminal.stdout
    for memory in found["left_for_room"]:
        assert f"memory #{memory['id']} " in out
        line = next(x for x in out.splitlines() if f"memory #{memory['id']} " in x)
        assert "[left out: no room in the context]" in line
    for memory in found["used"]:
        line = next(x for x in out.splitlines() if f"memory #{memory['id']} " in x)
        assert "left out" not in line
    section = next(s for s in sections if s["name"] == "memories")
    line = next(x for x in out.splitlines() if x.startswith("  Memories "))
    assert f" {section['tokens']}/{section['budget']} " in line
