"""Who knows what, in play, through the app (docs/world.md, "Who knows what"): a turn
whose input addresses a character labels, withholds or leaves alone the memories that
character did not witness, by the adventure's ``witness_mode``; Insights' ``witness`` says
who was addressed and which memories, and why.

The double's summary model writes a memory of each block of six actions (0-5, 6-11,
12-17); the rules read who arrives and leaves from the replies.
"""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from tests.kit.memory import memories, new_adventure, settle
from tests.kit.world_api import dry_run as ask

from talekeeper.services.world.knowing import summary_note
from talekeeper_testkit.double import ModelDouble

# One reply a turn (depths 2, 4, …): Tobin is there for the first block, leaves as the
# second opens (the key is hidden then) and is back as the third opens; Maren is there
# throughout.
REPLIES = (
    "The tide turns.",
    "Gulls cry over the harbour.",
    "Tobin leaves.",
    "Maren hides the brass key under the third piling.",
    "The fog thickens over the key and the piling.",
    "Tobin arrives.",
    "The bells are still.",
    "The lamps are lit along the quay.",
)


def started(client: TestClient, double: ModelDouble) -> tuple[int, int]:
    """The adventure, and the id of the memory of the block Tobin missed (6-11)."""
    aid: int = new_adventure(client)["id"]
    for body in (
        {"kind": "moved", "object": "the Salt Market"},
        {"kind": "arrived", "subject": "Maren"},
        {"kind": "arrived", "subject": "Tobin"},
    ):
        response = client.post(f"/api/adventures/{aid}/world/events", json=body)
        assert response.status_code == 201, response.text
    for i, text in enumerate(REPLIES):
        double.script(text)
        response = client.post(
            f"/api/adventures/{aid}/actions", json={"type": "do", "text": f"wait ({i + 1})"}
        )
        assert response.status_code == 200, response.text
    settle(client, aid)
    missed = {(m["source_start"], m["source_end"]): m for m in memories(client, aid)}[(6, 11)]
    assert missed["witnesses"] == ["Maren"]
    others = [m for m in memories(client, aid) if m["id"] != missed["id"]]
    assert others and all(m["witnesses"] == ["Maren", "Tobin"] for m in others)
    return aid, missed["id"]


def memories_text(insights: dict[str, Any]) -> str:
    return next(s["text"] for s in insights["sections"] if s["name"] == "memories")


def test_a_memory_tobin_missed_is_labelled_for_him_and_not_for_maren(
    client: TestClient, double: ModelDouble
) -> None:
    aid, missed = started(client, double)
    tobin = ask(client, aid, "say", "Tobin, where is the brass key?")
    witness = tobin["witness"]
    assert witness["addressed"] == "Tobin" and witness["mode"] == "label"
    assert witness["labelled"] == [missed] and witness["withheld"] == []
    assert witness["reasons"] == [{"memory_id": missed, "why": "absent at actions 6–11"}]
    assert "— Tobin was not there" in memories_text(tobin)
    used = {m["id"]: m for m in tobin["memories"]["used"]}
    assert used[missed]["witness_label"] == "— Tobin was not there"

    maren = ask(client, aid, "say", "Maren, where is the brass key?")
    assert maren["witness"]["addressed"] == "Maren"
    assert maren["witness"]["labelled"] == [] and "was not there" not in memories_text(maren)

    # Narration that addresses no one: the narrator's knowledge is whole, no label.
    story = ask(client, aid, "story", "Tobin wonders where the brass key is.")
    assert story["witness"]["addressed"] is None
    assert "was not there" not in memories_text(story)
    note = summary_note("Maren")
    assert maren["witness"]["summary"] == "labelled" and story["witness"]["summary"] is None
    assert memories_text(maren).startswith(f"[Memories]\n{note}\n")
    assert memories_text(story) == memories_text(maren).replace(f"{note}\n", "")


def test_strict_leaves_the_memory_out_and_off_leaves_it_alone(
    client: TestClient, double: ModelDouble
) -> None:
    aid, missed = started(client, double)
    labelled = ask(client, aid, "say", "Tobin, where is the brass key?")
    assert (
        client.patch(f"/api/adventures/{aid}", json={"witness_mode": "strict"}).status_code == 200
    )
    assert client.get(f"/api/adventures/{aid}").json()["witness_mode"] == "strict"
    strict = ask(client, aid, "say", "Tobin, where is the brass key?")
    assert strict["witness"]["withheld"] == [missed] and strict["witness"]["labelled"] == []
    # The Story Summary tells everything: a strict turn addressing someone leaves it out.
    assert strict["witness"]["summary"] == "withheld"

    def summary(insights: dict[str, Any]) -> str:
        return str(next(s["text"] for s in insights["sections"] if s["name"] == "story_summary"))

    assert client.get(f"/api/adventures/{aid}/summary").json()["text"]  # one is in force
    assert summary(strict) == "" and labelled["witness"]["summary"] == "labelled"
    left = next(s for s in strict["sections"] if s["name"] == "story_summary")
    assert left["reason"].startswith("left out: the input addresses Tobin")
    assert missed not in [m["id"] for m in strict["memories"]["used"]]
    # (the double's memory of a block is its first reply)
    assert "- (established) Tobin leaves. — Tobin was not there" in memories_text(labelled)
    assert "Tobin leaves." not in memories_text(strict)

    assert client.patch(f"/api/adventures/{aid}", json={"witness_mode": "off"}).status_code == 200
    off = ask(client, aid, "say", "Tobin, where is the brass key?")
    assert off["witness"]["addressed"] == "Tobin" and off["witness"]["mode"] == "off"
    assert off["witness"]["labelled"] == off["witness"]["withheld"] == []
    assert "was not there" not in memories_text(off)


def test_a_bad_witness_mode_is_refused_naming_the_choices(client: TestClient) -> None:
    aid: int = new_adventure(client)["id"]
    for bad in ("loose", "", 3, None, ["label"]):
        response = client.patch(f"/api/adventures/{aid}", json={"witness_mode": bad})
        if bad is None:  # not given: nothing changes
            assert response.status_code == 200
            continue
        assert response.status_code in (400, 422), response.text
        message = response.json()["error"]["message"]
        assert "witness_mode" in message
        if isinstance(bad, str):
            assert "label, strict, off" in message
    assert client.get(f"/api/adventures/{aid}").json()["witness_mode"] == "label"


def test_the_witness_mode_travels_in_an_export_and_a_strange_one_is_refused(
    client: TestClient,
) -> None:
    aid: int = new_adventure(client)["id"]
    plain = client.get(f"/api/adventures/{aid}/export").json()
    assert "witness_mode" not in plain["adventure"]  # the default is not written
    assert (
        client.patch(f"/api/adventures/{aid}", json={"witness_mode": "strict"}).status_code == 200
    )
    exported = client.get(f"/api/adventures/{aid}/export").json()
    assert exported["adventure"]["witness_mode"] == "strict"
    imported = client.post("/api/adventures/import", json=exported)
    assert imported.status_code == 201, imported.text
    copy = client.get(f"/api/adventures/{imported.json()['id']}").json()
    assert copy["witness_mode"] == "strict"

    older = {
        **exported,
        "adventure": {k: v for k, v in exported["adventure"].items() if k != "witness_mode"},
    }
    imported = client.post("/api/adventures/import", json=older)  # a file from before the mode
    assert imported.status_code == 201, imported.text
    assert client.get(f"/api/adventures/{imported.json()['id']}").json()["witness_mode"] == "label"

    before = len(client.get("/api/adventures").json())
    strange = {**exported, "adventure": {**exported["adventure"], "witness_mode": "sideways"}}
    refused = client.post("/api/adventures/import", json=strange)
    assert refused.status_code == 400
    assert "witness_mode" in refused.json()["error"]["message"]
    assert len(client.get("/api/adventures").json()) == before


def test_once_the_story_tells_tobin_the_label_goes_and_undoing_the_telling_brings_it_back(
    client: TestClient, double: ModelDouble
) -> None:
    aid, missed = started(client, double)
    question = ("say", "Tobin, where is the brass key?")
    assert ask(client, aid, *question)["witness"]["labelled"] == [missed]

    double.script("Tobin nods slowly and looks toward the piling.")
    told = client.post(
        f"/api/adventures/{aid}/actions",
        json={"type": "do", "text": "tell Tobin about the brass key"},
    )
    assert told.status_code == 200, told.text
    events = client.get(f"/api/adventures/{aid}/world/events").json()
    learned = [e for e in events if e["kind"] == "learned"]
    assert [(e["subject"], e["value"]) for e in learned] == [("Tobin", "the brass key")]

    now = ask(client, aid, *question)
    assert now["witness"]["labelled"] == [] and now["witness"]["told"] == [missed]
    assert "was not there" not in memories_text(now)
    # Maren was told nothing, and was there anyway; a stranger's telling tells Tobin nothing.
    assert ask(client, aid, "say", "Maren, where is the brass key?")["witness"]["told"] == []

    for _ in range(2):  # the reply, then the telling itself
        assert client.post(f"/api/adventures/{aid}/undo").status_code == 200
    again = ask(client, aid, *question)
    assert again["witness"]["labelled"] == [missed] and again["witness"]["told"] == []


def test_a_secret_is_labelled_for_whoever_is_not_in_on_it_whoever_saw_it(
    client: TestClient, double: ModelDouble
) -> None:
    aid, missed = started(client, double)
    seen = next(m for m in memories(client, aid) if m["id"] != missed)  # all three saw it
    assert seen["known_by"] is None and seen["witnesses"] == ["Maren", "Tobin"]
    marked = client.patch(f"/api/memories/{seen['id']}", json={"known_by": ["maren", "Maren"]})
    assert marked.status_code == 200, marked.text
    assert marked.json()["known_by"] == ["maren"]
    assert {m["id"]: m["known_by"] for m in memories(client, aid)}[seen["id"]] == ["maren"]

    tobin = ask(client, aid, "say", "Tobin, where is the brass key?")["witness"]
    assert seen["id"] in tobin["labelled"] and missed in tobin["labelled"]
    reasons = {r["memory_id"]: r["why"] for r in tobin["reasons"]}
    assert reasons[seen["id"]] == "a secret: known only to maren and you"
    text = memories_text(ask(client, aid, "say", "Tobin, where is the brass key?"))
    assert "— a secret Tobin was not told" in text
    maren = ask(client, aid, "say", "Maren, where is the brass key?")["witness"]
    assert maren["labelled"] == []

    # The player keeps one alone; then none is a secret again.
    alone = client.patch(f"/api/memories/{missed}", json={"known_by": []})
    assert alone.status_code == 200 and alone.json()["known_by"] == []
    maren = ask(client, aid, "say", "Maren, where is the brass key?")["witness"]
    assert maren["labelled"] == [missed]
    assert maren["reasons"] == [{"memory_id": missed, "why": "a secret: known only to you"}]
    for one in (seen["id"], missed):
        cleared = client.patch(f"/api/memories/{one}", json={"known_by": None})
        assert cleared.status_code == 200 and cleared.json()["known_by"] is None
    assert ask(client, aid, "say", "Maren, where is the brass key?")["witness"]["labelled"] == []


def test_a_bad_known_by_is_refused_and_changes_nothing(
    client: TestClient, double: ModelDouble
) -> None:
    aid, missed = started(client, double)
    url = f"/api/memories/{missed}"
    for bad in ("Maren", [1], ["  "], ["x" * 300], [f"N{i}" for i in range(21)], {"a": 1}):
        response = client.patch(url, json={"known_by": bad, "pinned": True})
        assert response.status_code in (400, 422), response.text
        assert (
            "known_by" in response.json()["error"]["message"]
            or "name" in response.json()["error"]["message"]
        )
    listed = {m["id"]: m for m in memories(client, aid)}[missed]
    assert listed["known_by"] is None and listed["pinned"] is False  # nothing changed

    deleted = client.delete(url)
    assert deleted.status_code == 204
    refused = client.patch(url, json={"known_by": ["Maren"]})
    assert refused.status_code == 409 and "mark as a secret" in refused.json()["error"]["message"]


def test_a_secret_travels_in_an_export(client: TestClient, double: ModelDouble) -> None:
    aid, missed = started(client, double)
    assert client.patch(f"/api/memories/{missed}", json={"known_by": ["Maren"]}).status_code == 200
    exported = client.get(f"/api/adventures/{aid}/export").json()
    # Written only for a secret: a file without one reads as before there were any.
    assert [m.get("known_by") for m in exported["memories"] if "known_by" in m] == [["Maren"]]
    imported = client.post("/api/adventures/import", json=exported)
    assert imported.status_code == 201, imported.text
    copied = memories(client, imported.json()["id"])
    assert sorted(str(m["known_by"]) for m in copied) == sorted(
        str(m["known_by"]) for m in memories(client, aid)
    )
    for m in exported["memories"]:
        m["known_by"] = ["   "]
    refused = client.post("/api/adventures/import", json=exported)
    assert refused.status_code == 400, refused.text


def test_a_retry_does_not_count_the_telling_of_the_reply_it_replaces(
    client: TestClient, double: ModelDouble
) -> None:
    aid, missed = started(client, double)
    double.script("You tell Tobin about the brass key, and he nods.")
    asked = client.post(
        f"/api/adventures/{aid}/actions",
        json={"type": "say", "text": "Tobin, where is the brass key?"},
    )
    assert asked.status_code == 200, asked.text
    # The reply told him; the next turn counts it.
    assert ask(client, aid, "say", "Tobin, where is the brass key?")["witness"]["told"] == [missed]
    # Its retry is read against the story before that reply: not told, so labelled.
    double.script("Tobin shrugs.")
    retried = client.post(f"/api/adventures/{aid}/retry")
    assert retried.status_code == 200, retried.text
    witness = retried.json()["insights"]["witness"]
    assert witness["addressed"] == "Tobin"
    assert witness["told"] == [] and witness["labelled"] == [missed]
