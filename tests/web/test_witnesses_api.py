"""Who saw what, through the Memory Bank's listing (``GET /api/adventures/{id}/memories``):
each memory of the current path's story carries ``witnesses``, the people present at
every action of its source stretch, derived from the world's events each time it is read.

The double's summary model writes a memory of each block of six actions (0-5, 6-11); the
rules read who arrives and leaves from the replies.
"""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from tests.kit.memory import memories, new_adventure, settle, write

from talekeeper_testkit.double import ModelDouble

# One reply a turn (depths 2, 4, …, 12): Tobin comes in the first block, Maren leaves in
# the second.
REPLIES = (
    "The tide turns. Gulls cry over the harbour.",
    "Tobin arrives.",
    "The tide turns again.",
    "Maren leaves.",
    "The fog thickens.",
    "The bells are still.",
)


def play(client: TestClient, double: ModelDouble, aid: int, replies: tuple[str, ...]) -> None:
    for i, text in enumerate(replies):
        double.script(text)
        response = client.post(
            f"/api/adventures/{aid}/actions", json={"type": "do", "text": f"wait ({i + 1})"}
        )
        assert response.status_code == 200, response.text


def event(client: TestClient, aid: int, **body: str) -> None:
    response = client.post(f"/api/adventures/{aid}/world/events", json=body)
    assert response.status_code == 201, response.text


def by_stretch(listed: list[dict[str, Any]]) -> dict[tuple[int, int], list[str] | None]:
    return {
        (m["source_start"], m["source_end"]): m.get("witnesses")
        for m in listed
        if m["source_start"] is not None
    }


def started(client: TestClient, double: ModelDouble) -> int:
    """An adventure whose opening sets the player at the Salt Market with Maren."""
    aid: int = new_adventure(client)["id"]
    event(client, aid, kind="moved", object="the Salt Market")
    event(client, aid, kind="arrived", subject="Maren")
    play(client, double, aid, REPLIES)
    settle(client, aid)
    return aid


def test_each_memory_lists_who_was_there_throughout_its_stretch(
    client: TestClient, double: ModelDouble
) -> None:
    aid = started(client, double)
    present = client.get(f"/api/adventures/{aid}/world").json()["present"]
    assert [p["name"] for p in present] == ["Tobin"]
    # Tobin came at 4, in the middle of the first block; Maren left at 8, in the second.
    assert by_stretch(memories(client, aid)) == {(0, 5): ["Maren"], (6, 11): ["Tobin"]}

    # A memory written by hand has no stretch: none are derived, and the key is left out.
    mine = write(client, aid, "Tamsin keeps a spare flint in her boot.")
    listed = {m["id"]: m for m in memories(client, aid)}
    assert "witnesses" not in listed[mine["id"]]
    assert all("witnesses" in m for m in listed.values() if m["source_start"] is not None)


def test_an_edit_undo_and_fork_change_the_witnesses_by_construction(
    client: TestClient, double: ModelDouble
) -> None:
    aid = started(client, double)
    actions = client.get(f"/api/adventures/{aid}/actions").json()["actions"]
    # The reply at 4 no longer brings Tobin: nobody was there throughout the second block.
    edited = client.patch(f"/api/actions/{actions[4]['id']}", json={"text": "The wind drops."})
    assert edited.status_code == 200, edited.text
    assert by_stretch(memories(client, aid)) == {(0, 5): ["Maren"], (6, 11): []}

    # Undo down to 10: the second block's memory is withdrawn, and has no witnesses.
    for _ in range(3):
        assert client.post(f"/api/adventures/{aid}/undo").status_code == 200
    everything = memories(client, aid, include="all")
    withdrawn = [m for m in everything if m["status"] == "withdrawn"]
    assert withdrawn and all("witnesses" not in m for m in withdrawn)

    # A fork at 2 leaves both memories off its path: listed with include=all, none derived.
    fork = client.post(f"/api/actions/{actions[2]['id']}/fork", json={"name": "Elsewhere"})
    assert fork.status_code == 201, fork.text
    assert memories(client, aid) == []
    off = memories(client, aid, include="all")
    assert off and all(m["on_path"] is False and "witnesses" not in m for m in off)
