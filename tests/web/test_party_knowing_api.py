"""Who knows what, per player character, through the app (docs/sharing.md, "Who knows
what, per character"): in a shared adventure several play, each action happens where its
author's character stands, the Memory Bank lists the host's character among the
witnesses where it was, and a turn that addresses no one is read as its actor's: what
they were not there for is labelled as unknown to them. One player's private scene is
not another's knowledge. Memories are written from the story in the third person.

The double's summary model writes a memory of each block of six actions (0-5, 6-11); its
memory of a block is the block's first reply.
"""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from tests.kit.accounts import As, played_by_two
from tests.kit.memory import memories, settle

from talekeeper_testkit.double import ModelDouble


def _shared(accounts: TestClient) -> tuple[As, As, int]:
    return played_by_two(accounts, "Harbour")


def _turn(
    who: As, aid: int, double: ModelDouble, text: str, reply: str, kind: str = "do"
) -> dict[str, Any]:
    """Act, and the Insights of the reply as the host reads them (Insights are the host's
    and co-hosts'; every test here is hosted by "mara")."""
    double.script(reply)
    answer = who.post(f"/api/adventures/{aid}/actions", json={"type": kind, "text": text})
    assert answer.status_code == 200, answer.text
    host = As(who.base, "mara")
    insights = host.get(f"/api/actions/{answer.json()['reply']['id']}/insights")
    assert insights.status_code == 200, insights.text
    body: dict[str, Any] = insights.json()
    return body


def _memories_text(insights: dict[str, Any]) -> str:
    return str(next(s["text"] for s in insights["sections"] if s["name"] == "memories"))


def test_one_players_private_scene_is_not_anothers_knowledge(
    accounts: TestClient, double: ModelDouble
) -> None:
    mara, tal, aid = _shared(accounts)
    _turn(mara, aid, double, "walk into the Lamp House", "Mara takes the lantern.")
    # Tal was never placed: Tal stands where Mara does. Mara named takes the lantern.
    world = mara.get(f"/api/adventures/{aid}/world").json()
    assert [p["name"] for p in world["present"]] == ["Tal"]
    assert world["present"][0]["entity_id"] is None  # the story has not named Tal yet
    assert world["lead"] == "Mara"
    assert world["players"] == [
        {
            "name": "Tal",
            "entity_id": None,
            "here": True,
            "location": world["location"],
            "inventory": [],
        }
    ]
    assert [i["name"] for i in world["inventory"]] == ["the lantern"]
    _turn(tal, aid, double, "look around", "Rain taps the shutters.")
    _turn(mara, aid, double, "sit by the fire", "The fire hisses.")
    # Tal's private scene, 6-11: Mara is not there.
    _turn(tal, aid, double, "walk into the Salt Market", "Gulls wheel over the empty stalls.")
    _turn(tal, aid, double, "hide the brass key under the third piling", "The key sinks in.")
    _turn(tal, aid, double, "wait", "Nobody comes.")
    _turn(tal, aid, double, "listen", "Only the sea.")  # (the memory of 6-11 waits for it)
    apart = mara.get(f"/api/adventures/{aid}/world").json()
    assert apart["location"]["name"] == "the Lamp House" and apart["present"] == []
    [tal_now] = apart["players"]
    assert (tal_now["here"], tal_now["location"]["name"]) == (False, "the Salt Market")
    assert isinstance(tal_now["entity_id"], int)  # named by the story now
    settle(mara, aid)
    seen = {(m["source_start"], m["source_end"]): m for m in memories(mara, aid)}
    assert seen[(0, 5)]["witnesses"] == ["Mara", "Tal"]
    private = seen[(6, 11)]
    assert private["witnesses"] == ["Tal"]
    # Memories are written from the story as it reads: in the third person, by name.
    assert seen[(0, 5)]["text"] == "Mara walks into the Lamp House."
    assert private["text"] == "Tal walks into the Salt Market."

    hers = _turn(mara, aid, double, "ask the innkeeper for soup", "Soup comes.")
    used = {m["id"]: m for m in hers["memories"]["used"]}
    said = [p["text"] for p in used[private["id"]]["passages"]]
    assert "> Tal hides the brass key under the third piling." in said  # its passages too
    witness = hers["witness"]
    assert (witness["addressed"], witness["how"], witness["words"]) == ("Mara", "acting", "")
    assert witness["labelled"] == [private["id"]]
    assert witness["reasons"] == [{"memory_id": private["id"], "why": "absent at actions 6–11"}]
    assert "Tal walks into the Salt Market. — Mara was not there" in _memories_text(hers)

    his = _turn(tal, aid, double, "wait some more", "Still nobody.")
    assert (his["witness"]["addressed"], his["witness"]["how"]) == ("Tal", "acting")
    assert his["witness"]["labelled"] == [] and "was not there" not in _memories_text(his)

    # Back with Mara, Tal speaks to her: the turn is read for Mara, who missed 6-11.
    _turn(tal, aid, double, "walk into the Lamp House", "Mara looks up from the fire.")
    asked = _turn(tal, aid, double, "Mara, where were you?", "Mara shrugs.", "say")
    assert (asked["witness"]["addressed"], asked["witness"]["how"]) == ("Mara", "vocative")
    assert private["id"] in asked["witness"]["labelled"]

    # Strict: Mara's turn leaves Tal's scene out of her context altogether.
    assert mara.patch(f"/api/adventures/{aid}", json={"witness_mode": "strict"}).status_code == 200
    strict = _turn(mara, aid, double, "finish the soup", "The bowl is empty.")
    assert private["id"] in strict["witness"]["withheld"]  # (and Tal's at 12-13)
    assert "Salt Market" not in _memories_text(strict)
    # A dry run is the host's turn, as it reads.
    dry = mara.post(
        f"/api/adventures/{aid}/insights/dry-run", json={"type": "do", "text": "yawn"}
    ).json()
    assert (dry["witness"]["addressed"], dry["witness"]["how"]) == ("Mara", "acting")


def test_one_player_alone_keeps_single_plays_knowledge(
    accounts: TestClient, double: ModelDouble
) -> None:
    """An adventure whose only other member is a viewer is single play: the input
    addresses no one, so nothing is labelled."""
    mara = As(accounts, "mara")
    made = mara.post("/api/adventures", json={"title": "Alone", "persona": {"name": "Mara"}})
    aid = int(made.json()["id"])
    code = mara.post(f"/api/adventures/{aid}/invites", json={"role": "viewer"}).json()["code"]
    tal = As(accounts, "tal")
    assert (
        tal.post(f"/api/invites/{code}/join", json={"persona": {"name": "Tal"}}).status_code == 200
    )
    insights = _turn(mara, aid, double, "walk into the Lamp House", "Mara takes the lantern.")
    assert insights["witness"]["addressed"] is None
    world = mara.get(f"/api/adventures/{aid}/world").json()
    assert world["present"] == []
    # Single play does not read the persona's name as the player's: Mara is a person.
    assert world["inventory"] == []


def test_the_story_summary_stays_for_an_actor_who_saw_everything(
    accounts: TestClient, double: ModelDouble
) -> None:
    """Strict mode leaves the Story Summary out of a turn read for someone who missed part
    of the story; an actor who was there for every action of it keeps it, and a turn
    with no label says nothing of it."""
    mara, tal, aid = _shared(accounts)
    assert mara.patch(f"/api/adventures/{aid}", json={"witness_mode": "strict"}).status_code == 200
    _turn(mara, aid, double, "walk into the Lamp House", "The fire hisses.")
    for i in range(8):  # together throughout: 18 actions, a summary written
        who = tal if i % 2 else mara
        _turn(who, aid, double, f"wait a while ({i})", f"Rain taps the shutters ({i}).")
    settle(mara, aid)
    assert mara.get(f"/api/adventures/{aid}/summary").json()["text"]
    together = _turn(tal, aid, double, "stretch", "The fire settles.")
    assert together["witness"]["addressed"] == "Tal" and together["witness"]["summary"] is None
    assert not _reason(together, "story_summary").startswith("left out")
    # Tal goes off alone; back at the Lamp House, Mara missed that: no summary for her.
    _turn(tal, aid, double, "walk into the Salt Market", "Gulls wheel over the stalls.")
    missed = _turn(mara, aid, double, "poke the fire", "Sparks rise.")
    assert missed["witness"]["summary"] == "withheld"
    assert _reason(missed, "story_summary").startswith(
        "left out: the turn is Mara's, who missed part of the story"
    )


def _reason(insights: dict[str, Any], name: str) -> str:
    return str(next(s["reason"] for s in insights["sections"] if s["name"] == name))
