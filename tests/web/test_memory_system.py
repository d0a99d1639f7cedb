"""The memory system through the app, against the loopback double: the rules of docs/memory.md
§2 to §6 that need the whole machine (worker, passes, retrieval, tree changes)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from tests.conftest import LOCAL, make_settings
from tests.kit.memory import idle, memories

from talekeeper.services.memory.excerpt import MARKER
from talekeeper.storage.db import session_scope
from talekeeper.storage.models import BackgroundJob
from talekeeper.web.app import create_app
from talekeeper_testkit.double import ModelDouble, summarize


def new_game(client: TestClient) -> int:
    adventure: int = client.post("/api/adventures", json={"scenario": "lantern-coast"}).json()["id"]
    return adventure


def play(client: TestClient, adventure: int, turns: int, text: str = "look around") -> None:
    for i in range(turns):
        response = client.post(
            f"/api/adventures/{adventure}/actions", json={"type": "do", "text": f"{text} {i}"}
        )
        assert response.status_code == 200, response.text
        idle(client)


def settings_client(tmp_path: Path, double: ModelDouble, **env: str) -> TestClient:
    values = {
        "endpoint_url": double.url,
        "model": "double-narrator",
        "embedding_model": "double-embed",
        "summary_model": "double-summary",
        "timeout": "2",
    }
    values.update(env)
    return TestClient(create_app(make_settings(tmp_path, **values)), base_url=LOCAL)


@pytest.fixture
def extractive(tmp_path: Path, double: ModelDouble) -> Iterator[TestClient]:
    with settings_client(tmp_path, double, summary_model="extractive") as client:
        yield client


# -- writing memories ---------------------------------------------------------------------


def test_a_long_block_is_shown_as_its_opening_and_end(
    client: TestClient, double: ModelDouble
) -> None:
    adventure = new_game(client)
    long_action = " ".join(f"wade past rock {i}." for i in range(1600))[:7900]
    play(client, adventure, 6, text=long_action)  # three ~2,000-token actions a block
    asks = [r for r in double.requests if (r.body or {}).get("model") == "double-summary"]
    memory_asks = [r for r in asks if "[Passage]" in str(r.body)]
    assert memory_asks
    assert MARKER in str(memory_asks[0].body)
    for row in memories(client, adventure):
        assert MARKER not in row["text"] and "left out" not in row["text"]


def test_a_block_opening_on_a_reply_weighs_it_by_the_action_before_the_block(
    extractive: TestClient, double: ModelDouble
) -> None:
    # Depths: 0 the opening, then a turn per two. The block 6-11 opens on the reply (6) to
    # the action at 5, which lies in the block before: the writer is told that action.
    client = extractive
    adventure = new_game(client)
    bury = "You bury the brass astrolabe beneath the third piling of the pier."
    filler = "The wind drops for 2 minutes and rises again."
    turns = [
        ("I walk to the pier", "Rain drums on the roof of the net shed."),
        ("I look at the water", "Rain drums on the roof of the net shed."),
        ("I bury the brass astrolabe under the pier", bury),
        ("I wait by the door", filler),
        ("I wait by the door", filler),
        ("I wait by the door", "Rain drums on the roof of the net shed."),
    ]
    for text, reply in turns:
        double.script(reply)
        response = client.post(
            f"/api/adventures/{adventure}/actions", json={"type": "do", "text": text}
        )
        assert response.status_code == 200, response.text
        idle(client)
    rows = {(m["source_start"], m["source_end"]): m["text"] for m in memories(client, adventure)}
    assert rows[(6, 11)].startswith("Tamsin Reed buries the brass astrolabe")


def test_catch_up_writes_at_most_five_memories_a_run(
    extractive: TestClient, double: ModelDouble
) -> None:
    client = extractive
    adventure = new_game(client)
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    runtime_memory = runtime.memory
    # Play 40 actions with the worker unable to see the jobs, then let one run go.
    client.portal.call(runtime_memory.stop)
    for i in range(20):
        client.post(f"/api/adventures/{adventure}/actions", json={"type": "do", "text": f"row {i}"})
    assert memories(client, adventure) == []
    client.portal.call(runtime_memory.start)  # a restart: the waiting job is picked up
    idle(client)
    assert len(memories(client, adventure)) == 5  # 41 actions make 6 blocks due; 5 a run
    play(client, adventure, 1)  # 43 actions: 7 due, the next run writes the other two
    assert len(memories(client, adventure)) == 7


def test_failures_are_recorded_shown_and_retried(client: TestClient, double: ModelDouble) -> None:
    adventure = new_game(client)
    play(client, adventure, 5)  # 11 actions: nothing due yet
    double.fail_next("500", model="double-summary")
    play(client, adventure, 1)  # 13 actions: two blocks due, the summary model fails
    derived = client.get(f"/api/adventures/{adventure}/derived").json()
    assert derived["memory"]["state"] == "failed"
    assert "500" in derived["memory"]["last_error"]
    assert derived["embedding"]["state"] == "idle"  # one failing pass does not stop the others
    assert memories(client, adventure) == []  # the cursor did not move
    calls = client.get("/api/ai-calls", params={"kind": "memory"}).json()
    assert any(c["status"] == "error" for c in calls)
    play(client, adventure, 1)  # the next turn retries it
    derived = client.get(f"/api/adventures/{adventure}/derived").json()
    assert derived["memory"]["state"] == "idle" and derived["memory"]["last_success_at"]
    assert len(memories(client, adventure)) == 2


@pytest.mark.sqlite_only(
    "the outbox's claims; PostgreSQL's queue runs a killed worker's jobs again elsewhere "
    "(tests/services/memory/test_job_queue.py)"
)
def test_work_left_by_a_killed_process_is_picked_up_on_start(
    tmp_path: Path, double: ModelDouble
) -> None:
    with settings_client(tmp_path, double, summary_model="extractive") as client:
        adventure = new_game(client)
        runtime = client.app.state.runtime  # type: ignore[attr-defined]
        client.portal.call(runtime.memory.stop)
        for i in range(7):
            client.post(f"/api/adventures/{adventure}/actions", json={"type": "do", "text": f"{i}"})
        with session_scope(runtime.sessions) as session:
            job = session.get(BackgroundJob, ("adventure", adventure))
            assert job is not None
            from talekeeper.core.clock import utcnow

            job.claimed_at = utcnow()  # claimed by a run that died with its process
    with settings_client(tmp_path, double, summary_model="extractive") as client:
        idle(client)
        assert len(memories(client, adventure)) == 2
        assert client.get(f"/api/adventures/{adventure}/derived").json()["pending"] is False


# -- the Story Summary ------------------------------------------------------------------------


def test_the_players_summary_is_the_base_of_the_next_version(
    extractive: TestClient, double: ModelDouble
) -> None:
    client = extractive
    adventure = new_game(client)
    play(client, adventure, 7)  # 15 actions: the first automatic version
    view = client.get(f"/api/adventures/{adventure}/summary").json()
    assert [v["trigger"] for v in view["versions"]] == ["interval"]
    mine = "Tamsin carries the Guild's last lamp-key."
    assert (
        client.put(f"/api/adventures/{adventure}/summary", json={"text": mine}).status_code == 200
    )
    play(client, adventure, 8)  # 31 actions: the next automatic version
    view = client.get(f"/api/adventures/{adventure}/summary").json()
    triggers = [v["trigger"] for v in view["versions"]]
    assert triggers == ["interval", "user", "interval"]
    assert view["versions"][2]["base_id"] == view["versions"][1]["id"]
    assert view["text"].startswith(mine)  # the player's facts survive, first and whole
    assert view["versions"][1]["text"] == mine  # and their version stays in the history


def test_the_summary_model_is_told_the_player_wrote_the_base(
    client: TestClient, double: ModelDouble
) -> None:
    adventure = new_game(client)
    client.put(f"/api/adventures/{adventure}/summary", json={"text": "Pip is a spy."})
    play(client, adventure, 7)
    asks = [r for r in double.requests if "[New events]" in str(r.body)]
    assert (
        asks
        and "written by the player" in str(asks[-1].body)
        and "Pip is a spy." in str(asks[-1].body)
    )


def test_the_summary_falls_back_to_raw_text_when_memories_lag(
    client: TestClient, double: ModelDouble
) -> None:
    adventure = new_game(client)
    # The summary model writes summaries but no memories: memory writing falls behind.
    double.responders["double-summary"] = lambda body: (
        "" if "[Passage]" in str(body) else summarize(body)
    )
    double.script(*[f"The bell tolls {i} times." for i in range(20)])
    play(client, adventure, 7)  # 15 actions: a summary is due, no memory exists
    assert client.get(f"/api/adventures/{adventure}/derived").json()["memory"]["state"] == "failed"
    asks = [r for r in double.requests if "[New events]" in str(r.body)]
    assert len(asks) == 1
    told = str(asks[0].body)
    assert all(f"The bell tolls {i} times." in told for i in range(7))  # the raw actions
    summary = client.get(f"/api/adventures/{adventure}/summary").json()
    assert summary["covers_to"] == 14 and summary["text"]


# -- keeping memories true -----------------------------------------------------------------


def test_undo_withdraws_and_the_block_is_written_again(
    extractive: TestClient, double: ModelDouble
) -> None:
    client = extractive
    adventure = new_game(client)
    play(client, adventure, 9)  # 19 actions: blocks 0-5, 6-11, 12-17
    rows = memories(client, adventure)
    assert [(m["source_start"], m["source_end"]) for m in rows] == [(0, 5), (6, 11), (12, 17)]
    for _ in range(2):
        assert client.post(f"/api/adventures/{adventure}/undo").status_code == 200
    # Head at depth 16: the memory attached to 17 is withdrawn, the cursor is back at 11.
    rows = memories(client, adventure)
    assert [(m["source_start"], m["source_end"]) for m in rows] == [(0, 5), (6, 11)]
    withdrawn = [
        m for m in memories(client, adventure, include="all") if m["status"] == "withdrawn"
    ]
    assert [(m["source_start"], m["source_end"]) for m in withdrawn] == [(12, 17)]
    play(client, adventure, 1)  # 19 actions again: 12-17 is written again from the new story
    rows = memories(client, adventure)
    assert [(m["source_start"], m["source_end"]) for m in rows] == [(0, 5), (6, 11), (12, 17)]


def test_editing_covered_text_marks_it_stale_until_rewritten(
    extractive: TestClient, double: ModelDouble
) -> None:
    client = extractive
    adventure = new_game(client)
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    play(client, adventure, 7)  # 15 actions: two memories and a summary
    actions = client.get(f"/api/adventures/{adventure}/actions").json()["actions"]
    target = next(a for a in actions if a["depth"] == 2)
    client.portal.call(runtime.memory.stop)  # hold the worker: see the stale state
    edited = "Old Maren swears to Pip Haddow that 3 keys of the Drowned Charter lie under the pier."
    assert client.patch(f"/api/actions/{target['id']}", json={"text": edited}).status_code == 200
    first = memories(client, adventure)[0]
    assert first["stale"] is True
    assert client.get(f"/api/adventures/{adventure}/summary").json()["stale"] is True
    client.portal.call(runtime.memory.start)
    idle(client)
    first = memories(client, adventure)[0]
    assert first["stale"] is False and "Drowned Charter" in first["text"]
    summary = client.get(f"/api/adventures/{adventure}/summary").json()
    assert summary["stale"] is False and summary["versions"][-1]["refreshes_id"]


def test_a_fork_inherits_exactly_its_paths_memories(
    extractive: TestClient, double: ModelDouble
) -> None:
    client = extractive
    adventure = new_game(client)
    play(client, adventure, 6)  # 13 actions: 0-5, 6-11
    actions = client.get(f"/api/adventures/{adventure}/actions").json()["actions"]
    fork_from = next(a for a in actions if a["depth"] == 8)
    play(client, adventure, 6)  # main goes on: 12-17, 18-23
    assert len(memories(client, adventure)) == 4
    assert client.post(f"/api/actions/{fork_from['id']}/fork").status_code == 201
    rows = memories(client, adventure)  # the fork's path: depths 0..8
    assert [(m["source_start"], m["source_end"]) for m in rows] == [(0, 5)]
    retrieved = client.post(
        f"/api/adventures/{adventure}/insights/dry-run", json={"type": "do", "text": "look"}
    ).json()["memories"]
    assert {u["id"] for u in retrieved["used"]} <= {m["id"] for m in rows}


def test_the_source_block_is_read_along_its_own_branch(
    extractive: TestClient, double: ModelDouble
) -> None:
    client = extractive
    adventure = new_game(client)
    play(client, adventure, 6)
    actions = client.get(f"/api/adventures/{adventure}/actions").json()["actions"]
    second = memories(client, adventure)[1]
    client.post(f"/api/actions/{actions[3]['id']}/fork")  # a branch that does not hold it
    source = client.get(f"/api/memories/{second['id']}/source").json()
    assert [a["depth"] for a in source["actions"]] == list(range(6, 12))


# -- the bank ----------------------------------------------------------------------------------


def test_capacity_forgets_by_coverage_and_forgotten_memories_are_never_retrieved(
    tmp_path: Path, double: ModelDouble
) -> None:
    with settings_client(tmp_path, double, summary_model="extractive") as client:
        client.patch("/api/settings", json={"bank_capacity": 3})
        adventure = new_game(client)
        play(client, adventure, 15)  # 31 actions: 5 memories
        rows = memories(client, adventure)
        assert [m["status"] for m in rows].count("active") == 3
        forgotten = {m["id"] for m in rows if m["status"] == "forgotten"}
        assert len(forgotten) == 2
        # The earliest and the latest are protected.
        assert rows[0]["status"] == "active" and rows[-1]["status"] == "active"
        used = client.post(
            f"/api/adventures/{adventure}/insights/dry-run", json={"type": "do", "text": "x"}
        ).json()["memories"]
        assert not {u["id"] for u in used["used"]} & forgotten
        assert used["considered"] == 3


def test_use_counts_are_written_with_the_turn_and_never_for_a_dry_run(
    extractive: TestClient, double: ModelDouble
) -> None:
    client = extractive
    adventure = new_game(client)
    play(client, adventure, 7)
    before = {m["id"]: m["use_count"] for m in memories(client, adventure)}
    client.post(f"/api/adventures/{adventure}/insights/dry-run", json={"type": "do", "text": "x"})
    assert {m["id"]: m["use_count"] for m in memories(client, adventure)} == before
    body = client.post(
        f"/api/adventures/{adventure}/actions", json={"type": "do", "text": "look"}
    ).json()
    used = {u["id"] for u in body["insights"]["memories"]["used"]}
    assert used
    after = {m["id"]: m for m in memories(client, adventure)}
    for memory_id in used:
        assert after[memory_id]["use_count"] == before[memory_id] + 1
        assert body["reply"]["id"] in after[memory_id]["used_by"]


def test_changing_the_embedding_model_re_embeds_the_bank(tmp_path: Path) -> None:
    double = ModelDouble(models=("double-narrator", "embed-a", "embed-b"))
    with (
        double,
        settings_client(
            tmp_path, double, summary_model="extractive", embedding_model="embed-a"
        ) as client,
    ):
        adventure = new_game(client)
        play(client, adventure, 7)
        assert all(m["embedded"] for m in memories(client, adventure))
        client.patch("/api/settings", json={"embedding_model": "embed-b"})
        play(client, adventure, 1)
        embeds = [r for r in double.requests if r.path == "/v1/embeddings"]
        assert (embeds[-1].body or {}).get("model") == "embed-b"
        assert all(m["embedded"] for m in memories(client, adventure))
        asked = [len((r.body or {}).get("input", [])) for r in embeds[-2:]]
        assert sum(asked) >= len(memories(client, adventure))


def test_a_heuristic_memory_is_marked_as_an_inference(
    extractive: TestClient, double: ModelDouble
) -> None:
    client = extractive
    adventure = new_game(client)
    client.post(
        f"/api/adventures/{adventure}/memories",
        json={"text": "Maren probably lied about her eye.", "pinned": True},
    )
    idle(client)
    body = client.post(
        f"/api/adventures/{adventure}/actions", json={"type": "do", "text": "look"}
    ).json()
    section = next(s for s in body["insights"]["sections"] if s["name"] == "memories")
    assert "(inference) Maren probably lied" in section["text"]


# -- toggles and the scene ----------------------------------------------------------------------


def test_auto_summarize_off_writes_no_memory_and_no_summary(
    extractive: TestClient, double: ModelDouble
) -> None:
    client = extractive
    adventure = new_game(client)
    client.patch(f"/api/adventures/{adventure}", json={"auto_summarize": False})
    play(client, adventure, 8)
    assert memories(client, adventure) == []
    assert client.get(f"/api/adventures/{adventure}/summary").json()["versions"] == []


def test_the_bank_off_retrieves_and_embeds_nothing(
    extractive: TestClient, double: ModelDouble
) -> None:
    client = extractive
    adventure = new_game(client)
    client.patch(f"/api/adventures/{adventure}", json={"memory_bank": False})
    play(client, adventure, 8)
    assert memories(client, adventure) and not any(
        m["embedded"] for m in memories(client, adventure)
    )
    assert not [r for r in double.requests if r.path == "/v1/embeddings"]
    body = client.post(
        f"/api/adventures/{adventure}/actions", json={"type": "do", "text": "look"}
    ).json()
    assert body["insights"]["memories"]["used"] == []
    assert "off" in body["insights"]["memories"]["note"]


def test_the_scene_is_part_of_the_retrieval_query(
    extractive: TestClient, double: ModelDouble
) -> None:
    client = extractive
    adventure = new_game(client)
    play(client, adventure, 7)
    double.script("The lamp room is cold.")
    play(client, adventure, 1)
    scene = {"location": "the lamp room", "present": ["Old Maren", "Pip Haddow"]}
    client.put(f"/api/adventures/{adventure}/scene", json=scene)
    body = client.post(
        f"/api/adventures/{adventure}/actions", json={"type": "do", "text": "ask about the key"}
    ).json()
    query = body["insights"]["memories"]["query"]
    assert query["input"] == "ask about the key"
    context = query["context"]
    assert context.index("At the lamp room.") < context.index("Present: Old Maren, Pip Haddow.")
    assert context.endswith("The lamp room is cold.")  # then the end of the newest narration


def test_a_derived_scene_follows_the_cards_of_the_newest_actions(
    extractive: TestClient, double: ModelDouble
) -> None:
    client = extractive
    adventure = new_game(client)
    double.script("Old Maren and Pip Haddow wait by the breakwater of Gullreach.")
    play(client, adventure, 1)
    scene = client.get(f"/api/adventures/{adventure}/scene").json()
    assert scene["source"] == "story cards"
    assert scene["location"] == "Gullreach"
    assert set(scene["present"]) == {"Old Maren", "Pip Haddow"}


def test_an_edited_memory_is_retrieved_with_its_new_text(
    extractive: TestClient, double: ModelDouble
) -> None:
    client = extractive
    adventure = new_game(client)
    play(client, adventure, 7)

    def used() -> dict[int, str]:
        body = client.post(
            f"/api/adventures/{adventure}/insights/dry-run", json={"type": "do", "text": "look"}
        ).json()
        return {u["id"]: u["text"] for u in body["memories"]["used"]}

    first = used()
    assert first  # read once: the texts are now cached with the bank
    memory_id = next(iter(first))
    client.patch(
        f"/api/memories/{memory_id}", json={"text": "Pip hid the lamp-key.", "pinned": True}
    )
    idle(client)  # re-embedded
    assert used()[memory_id] == "Pip hid the lamp-key."
