"""The memory system in the export format (version 2), through the import and export routes.

A hand-written version 2 file comes back byte for byte; a version 1 file's Story Summary
becomes the player's version; a bad memory or summary entry is refused with its JSON path
and nothing is written.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, text
from tests.kit.exchange import T1, counts, version_2_file
from tests.kit.memory import settle

from talekeeper.services import exchange
from talekeeper.services.exchange.fileformat import SECTIONS, AdventureMeta, LegacyAdventureMeta
from talekeeper.services.memory.base import NullMemory
from talekeeper.services.story.adventures import COMPONENTS, SUMMARY, TOGGLES
from talekeeper.storage.db import session_scope
from talekeeper.storage.models import User
from talekeeper.storage.repositories.memory import MemoryRepository


def version_1_file() -> dict[str, Any]:
    """What a version 1 export held: the Story Summary in the adventure, no memory rows."""
    old = version_2_file()
    del old["memories"], old["summaries"], old["adventure"]["scene"]
    old["version"] = 1
    old["adventure"]["story_summary"] = "Mara lost her brother to the sea."
    return old


def quietly_imported(client: TestClient, data: dict[str, Any]) -> int:
    """Imported as the route does it, but asking for no background work: the export then
    reads exactly what the import wrote (the work the route asks for may otherwise run
    first and write the memories a stretch of the story is due)."""
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    with session_scope(runtime.sessions) as session:
        uid = session.scalars(select(User.id)).one()
        return exchange.import_adventure(session, uid, data, NullMemory()).id


def imported(client: TestClient, data: dict[str, Any]) -> int:
    response = client.post("/api/adventures/import", json=data)
    assert response.status_code == 201, response.text
    adventure: int = response.json()["id"]
    return adventure


def exported(client: TestClient, adventure: int) -> dict[str, Any]:
    response = client.get(f"/api/adventures/{adventure}/export")
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def as_text(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1)  # what ``talekeeper export`` writes


def test_a_version_2_file_comes_back_byte_for_byte(client: TestClient) -> None:
    written = version_2_file()
    adventure = quietly_imported(client, written)
    assert as_text(exported(client, adventure)) == as_text(written)
    view = client.get(f"/api/adventures/{adventure}").json()
    assert view["story_summary"] == "Mine."  # the player's version on the current branch
    assert view["scene"] == {
        "location": "The Pier",
        "present": ["Old Maren", "Pip"],
        "summary": "The tide is turning.",
        "source": "player",
    }
    again = quietly_imported(client, exported(client, adventure))  # again: nothing drifts
    assert as_text(exported(client, again)) == as_text(written)


def test_imported_memories_come_without_vectors_and_with_fresh_terms(client: TestClient) -> None:
    """What the import itself writes (no background work asked for here, so nothing has
    run yet): the file's memories, no vector, terms made from their text, revisions in
    order and the counter going on from the last."""
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    adventure = quietly_imported(client, version_2_file())
    rows = memory_rows(client, adventure)
    assert [r.revision for r in rows] == [1, 2, 3, 4, 5]
    with session_scope(runtime.sessions) as session:  # the counter goes on from the last
        assert MemoryRepository(session).next_revision(adventure) == 6
    assert all(r.vector is None and r.vector_model is None for r in rows)
    assert rows[0].terms == "brass found key mara pier"
    assert rows[4].terms == "afraid deep pip water"


def test_an_imported_adventure_gets_its_background_work_without_a_turn(
    client: TestClient,
) -> None:
    """The import asks for the adventure's background work in its own transaction, through
    the memory system, so the queue the database has (the outbox on SQLite, the job queue
    on PostgreSQL) runs it at once: the memories are embedded before any turn."""
    adventure = imported(client, version_2_file())
    derived = settle(client, adventure)
    assert derived["embedding"]["last_success_at"] is not None, derived
    rows = memory_rows(client, adventure)
    active = [r for r in rows if r.status == "active"]
    assert active and all(r.vector_model == "double-embed" for r in active), rows


def memory_rows(client: TestClient, adventure: int) -> list[Any]:
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    with session_scope(runtime.sessions) as session:
        return list(
            session.execute(
                text(
                    "SELECT vector, vector_model, terms, revision, status FROM memories "
                    "WHERE adventure_id = :a ORDER BY id"
                ),
                {"a": adventure},
            ).all()
        )


def test_a_version_1_story_summary_becomes_the_players_version(client: TestClient) -> None:
    adventure = quietly_imported(client, version_1_file())
    view = client.get(f"/api/adventures/{adventure}").json()
    assert view["story_summary"] == "Mara lost her brother to the sea."
    new = exported(client, adventure)
    assert new["version"] == 2 and "story_summary" not in new["adventure"]
    assert new["memories"] == []
    assert new["summaries"] == [
        {
            "key": 1,
            "branch": 1,
            "depth": -1,
            "action": None,
            "covers_to": -1,
            "text": "Mara lost her brother to the sea.",
            "trigger": "user",
            "writer": "",
            "base": None,
            "refreshes": None,
            "stale": False,
            "created_at": T1,
        }
    ]
    assert new["adventure"]["scene"]["by_player"] is False


def test_a_version_1_file_without_a_summary_has_no_version(client: TestClient) -> None:
    old = version_1_file()
    old["adventure"]["story_summary"] = ""
    adventure = quietly_imported(client, old)
    assert exported(client, adventure)["summaries"] == []
    assert client.get(f"/api/adventures/{adventure}").json()["story_summary"] == ""


Damage = Callable[[dict[str, Any]], Any]

# Each damages one entry of the version 2 file; the refusal must name this path.
BAD_ENTRIES: dict[str, tuple[Damage, str]] = {
    "status": (lambda f: f["memories"][1].update(status="lost"), "file.memories[1].status"),
    "authority": (lambda f: f["memories"][0].update(authority="gossip"), "memories[0].authority"),
    "origin": (lambda f: f["memories"][4].update(origin="ai"), "file.memories[4].origin"),
    "memory text": (lambda f: f["memories"][2].update(text="x" * 2001), "memories[2].text"),
    "memory branch": (lambda f: f["memories"][3].update(branch=9), "memories[3].branch"),
    "memory action": (lambda f: f["memories"][0].update(action=99), "memories[0].action"),
    "memory depth": (lambda f: f["memories"][0].update(depth=-2), "memories[0].depth"),
    "half a source": (lambda f: f["memories"][0].update(source_end=None), "source_start"),
    "source backwards": (lambda f: f["memories"][2].update(source_start=4), "source_start"),
    "pinned": (lambda f: f["memories"][0].update(pinned="yes"), "memories[0].pinned"),
    "use count": (lambda f: f["memories"][0].update(use_count=-1), "memories[0].use_count"),
    "used by": (lambda f: f["memories"][1]["used_by"].append(42), "memories[1].used_by[1]"),
    "used twice": (lambda f: f["memories"][0]["used_by"].append(3), "memories[0].used_by[2]"),
    "used_by shape": (lambda f: f["memories"][0].update(used_by=3), "memories[0].used_by"),
    "memory time": (lambda f: f["memories"][0].update(created_at="soon"), "created_at"),
    "memory key": (lambda f: f["memories"][1].update(key=1), "file.memories[1].key"),
    "memories shape": (lambda f: f.update(memories={}), "file.memories"),
    "trigger": (lambda f: f["summaries"][0].update(trigger="cron"), "summaries[0].trigger"),
    "summary text": (lambda f: f["summaries"][3].update(text="x" * 20001), "summaries[3].text"),
    "summary base": (lambda f: f["summaries"][1].update(base=7), "summaries[1].base"),
    "self refresh": (lambda f: f["summaries"][2].update(refreshes=3), "summaries[2].refreshes"),
    "summary action": (lambda f: f["summaries"][0].update(action=0), "summaries[0].action"),
    "covers_to": (lambda f: f["summaries"][0].update(covers_to=2**31), "summaries[0].covers_to"),
    "summary branch": (lambda f: f["summaries"][0].update(branch=None), "summaries[0].branch"),
    "summary stale": (lambda f: f["summaries"][0].update(stale=1), "summaries[0].stale"),
    "scene present": (
        lambda f: f["adventure"]["scene"].update(present=["Pip"] * 9),
        "file.adventure.scene.present",
    ),
    "scene location": (
        lambda f: f["adventure"]["scene"].update(location=5),
        "file.adventure.scene.location",
    ),
    "unknown field": (
        lambda f: f["memories"][0].update(mood="calm"),
        "file.memories[0].mood is not a field of a version 2 export",
    ),
    "story_summary in version 2": (
        lambda f: f["adventure"].update(story_summary="Mine."),
        "file.adventure.story_summary is not a field",
    ),
    "memories in version 1": (
        lambda f: f.update(version=1),
        "unknown section 'memories'",
    ),
}


@pytest.mark.parametrize("name", list(BAD_ENTRIES))
def test_a_bad_memory_or_summary_entry_is_refused_and_nothing_is_written(
    client: TestClient, name: str
) -> None:
    damage, path = BAD_ENTRIES[name]
    data = copy.deepcopy(version_2_file())
    damage(data)
    before = counts(client)
    response = client.post("/api/adventures/import", json=data)
    assert response.status_code == 400, response.text
    message = response.json()["error"]["message"]
    assert "Not a valid Talekeeper export" in message and path in message, message
    assert counts(client) == before


def test_each_version_holds_its_sections_and_the_adventure_every_plot_component() -> None:
    first = {"format", "version", "adventure", "branches", "actions", "cards", "insights"}
    memory = first | {"memories", "summaries"}
    world = {"world_entities", "world_events"}
    assert {
        1: first,
        2: memory,
        3: memory | {"knowledge"},
        4: memory | {"knowledge"} | world,
        5: memory | {"knowledge"} | world | {"card_proposals"},
    } == SECTIONS
    assert set(COMPONENTS) | set(TOGGLES) <= set(AdventureMeta.model_fields)
    assert SUMMARY not in AdventureMeta.model_fields  # a version 1 file's alone
    assert SUMMARY in LegacyAdventureMeta.model_fields


def test_the_import_answers_the_adventure_as_its_own_route_does(client: TestClient) -> None:
    made = client.post("/api/adventures/import", json=version_2_file())
    assert made.status_code == 201, made.text
    answer = made.json()
    view = client.get(f"/api/adventures/{answer['id']}").json()
    assert set(answer) == set(view) | {"attached_sources", "unmatched_sources", "warnings"}
    stable = ("id", "title", "scenario", "persona", "created_at", "current_branch_id")
    assert {k: answer[k] for k in stable} == {k: view[k] for k in stable}
    assert [answer[k] for k in ("attached_sources", "unmatched_sources", "warnings")] == [[]] * 3
