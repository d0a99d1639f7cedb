"""The lore clerk over JSON (docs/world.md, "The lore clerk"): a name the story uses in three
actions becomes one card proposal made of the story's own sentences; the player accepts
it (edited or not) into an ordinary card, or dismisses it for good; undo, retry and fork
keep proposals on their own path; no card the player wrote is changed; every refusal is
a 4xx that says what to fix, and another player's proposal is not found.

Real parts: the app on a migrated database (SQLite, or PostgreSQL with ``--db=postgresql``),
turns against the loopback model double, in local mode and signed in.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.conftest import MODES, each_mode
from tests.kit.accounts import As
from tests.kit.memory import idle, new_adventure, refused, settle
from tests.kit.world_api import turn

from talekeeper_testkit.double import ModelDouble

PROPOSAL_KEYS = ["id", "kind", "name", "type", "keys", "entry", "card_id", "evidence", "state"]
RHYS = (
    "Captain Rhys steps off the ferry with a sea chest.",
    "The gulls scatter. Rhys wears a coat of oiled blue wool.",
    "Rhys owes the harbourmaster forty crowns. You nod.",
)


@pytest.fixture(params=MODES)
def client(
    request: pytest.FixtureRequest, tmp_path: Path, double: ModelDouble
) -> Iterator[TestClient]:
    yield from each_mode(request.param, tmp_path, double)


def proposals(client: TestClient, aid: int) -> list[dict[str, Any]]:
    """The open proposals, once the background work after the last turn has run."""
    settle(client, aid)
    response = client.get(f"/api/adventures/{aid}/card-proposals")
    assert response.status_code == 200, response.text
    body: list[dict[str, Any]] = response.json()
    return body


def play(client: TestClient, double: ModelDouble, aid: int, *replies: str) -> list[int]:
    """One turn per reply: the replies' action ids."""
    ids = []
    for reply in replies:
        double.script(reply)
        ids.append(int(turn(client, aid, "look around")["reply"]["id"]))
    return ids


def test_a_name_in_three_actions_is_proposed_from_the_storys_own_sentences(
    client: TestClient, double: ModelDouble
) -> None:
    aid = int(new_adventure(client)["id"])
    ids = play(client, double, aid, *RHYS[:2])
    assert [p["name"] for p in proposals(client, aid)] == []  # two actions: not yet
    ids += play(client, double, aid, RHYS[2])
    listed = proposals(client, aid)
    assert len(listed) == 1, listed
    rhys = listed[0]
    assert list(rhys) == PROPOSAL_KEYS
    assert (rhys["kind"], rhys["state"], rhys["type"], rhys["card_id"]) == (
        "new",
        "open",
        "character",
        None,
    )
    assert rhys["name"] in ("Rhys", "Captain Rhys") and "Rhys" in rhys["keys"]
    # Every line is a sentence of the story, with the action it comes from; "You nod." and
    # "The gulls scatter." name no Rhys and are not used.
    assert rhys["evidence"] == [
        {"action_id": ids[0], "text": RHYS[0]},
        {"action_id": ids[1], "text": "Rhys wears a coat of oiled blue wool."},
        {"action_id": ids[2], "text": "Rhys owes the harbourmaster forty crowns."},
    ]
    assert rhys["entry"] == " ".join(e["text"] for e in rhys["evidence"])
    assert proposals(client, aid) == listed  # listing again changes nothing


def test_a_name_with_a_card_gets_no_new_card_but_lines_to_add_shown_as_such(
    client: TestClient, double: ModelDouble
) -> None:
    aid = int(new_adventure(client)["id"])
    cards_before = client.get(f"/api/adventures/{aid}/cards").json()
    assert {"Old Maren", "Gullreach"} <= {c["name"] for c in cards_before}
    # "Maren" is "Old Maren" told shorter; "GULLREACH" is the card's name in capitals.
    ids = play(
        client,
        double,
        aid,
        "Maren mends a net on the quay of GULLREACH.",
        "Maren hums an old song. Gullreach sleeps.",
        "Maren points at the lighthouse above Gullreach.",
    )
    assert client.get(f"/api/adventures/{aid}/cards").json() == cards_before  # untouched
    [update] = proposals(client, aid)  # no new card: lines for the card there is
    maren = next(c for c in cards_before if c["name"] == "Old Maren")
    assert (update["kind"], update["card_id"], update["name"]) == (
        "update",
        maren["id"],
        "Old Maren",
    )
    assert update["evidence"] == [
        {"action_id": ids[0], "text": "Maren mends a net on the quay of GULLREACH."},
        {"action_id": ids[1], "text": "Maren hums an old song."},
        {"action_id": ids[2], "text": "Maren points at the lighthouse above Gullreach."},
    ]
    refused(
        client.post(f"/api/card-proposals/{update['id']}/accept", json={"name": "Maren"}),
        400,
        "only 'entry'",
    )
    added = client.post(
        f"/api/card-proposals/{update['id']}/accept",
        json={"entry": "Maren mends nets and hums old songs."},
    )
    assert added.status_code == 201, added.text
    # The player's text stays, character for character; the lines come after it.
    assert added.json()["entry"] == maren["entry"] + "\nMaren mends nets and hums old songs."
    assert added.json()["id"] == maren["id"]
    assert proposals(client, aid) == []


def test_a_dismissed_update_does_not_come_back_with_the_same_lines(
    client: TestClient, double: ModelDouble
) -> None:
    aid = int(new_adventure(client)["id"])
    play(client, double, aid, "Maren mends a net by the boats.", "Maren hums an old song.")
    [update] = proposals(client, aid)
    assert client.post(f"/api/card-proposals/{update['id']}/dismiss").status_code == 200
    play(client, double, aid, "Maren lights a lamp in her window.")
    assert proposals(client, aid) == []  # one new line is not enough
    play(client, double, aid, "Maren counts the boats coming home.")
    [again] = proposals(client, aid)
    assert again["id"] != update["id"]
    assert [e["text"] for e in again["evidence"]] == [
        "Maren lights a lamp in her window.",
        "Maren counts the boats coming home.",
    ]


def test_accepting_makes_an_ordinary_card_and_dismissing_keeps_a_name_away(
    client: TestClient, double: ModelDouble
) -> None:
    aid = int(new_adventure(client)["id"])
    play(client, double, aid, *RHYS)
    play(
        client,
        double,
        aid,
        "A bell rings in Saltmarsh Abbey.",
        "The monks of Saltmarsh Abbey sing at dusk.",
        "Saltmarsh Abbey stands dark against the sky.",
    )
    listed = {p["name"]: p for p in proposals(client, aid)}
    abbey = listed["Saltmarsh Abbey"]
    assert abbey["type"] == "location"
    rhys = next(p for name, p in listed.items() if "Rhys" in name)
    card = client.post(
        f"/api/card-proposals/{rhys['id']}/accept", json={"entry": "A captain who owes money."}
    )
    assert card.status_code == 201, card.text
    made = card.json()
    assert (made["name"], made["type"], made["entry"]) == (
        rhys["name"],
        "character",
        "A captain who owes money.",  # the player's edit, not the draft
    )
    assert made["keywords"] == rhys["keys"]
    cards = client.get(f"/api/adventures/{aid}/cards").json()
    assert made["id"] in [c["id"] for c in cards]
    gone = client.post(f"/api/card-proposals/{abbey['id']}/dismiss")
    assert gone.status_code == 200, gone.text
    assert gone.json()["state"] == "dismissed"
    play(client, double, aid, "Rhys and the abbot of Saltmarsh Abbey argue about money.")
    assert proposals(client, aid) == []  # one accepted, one dismissed: neither again
    again = client.post(f"/api/card-proposals/{abbey['id']}/reopen")
    assert again.status_code == 200 and again.json()["state"] == "open"
    [reopened] = proposals(client, aid)
    assert reopened["id"] == abbey["id"]
    assert reopened["entry"].endswith(" Rhys and the abbot of Saltmarsh Abbey argue about money.")
    plain = client.post(f"/api/card-proposals/{abbey['id']}/accept")  # no body: the draft
    assert plain.status_code == 201, plain.text
    assert plain.json()["entry"] == reopened["entry"]


def test_undo_withdraws_a_proposal_a_fork_keeps_its_own_and_redo_brings_it_back(
    client: TestClient, double: ModelDouble
) -> None:
    aid = int(new_adventure(client)["id"])
    ids = play(client, double, aid, *RHYS)
    [rhys] = proposals(client, aid)
    assert client.post(f"/api/adventures/{aid}/undo").status_code == 200  # the reply
    assert proposals(client, aid) == []  # two actions name him now
    stale = client.post(f"/api/card-proposals/{rhys['id']}/accept")
    refused(stale, 409, "no longer supported")
    assert client.post(f"/api/adventures/{aid}/redo").status_code == 200
    assert [p["id"] for p in proposals(client, aid)] == [rhys["id"]]  # the same proposal
    fork = client.post(f"/api/actions/{ids[1]}/fork", json={"name": "Other"})
    assert fork.status_code == 201, fork.text
    assert proposals(client, aid) == []  # the fork's path names him twice
    play(client, double, aid, "Rhys counts his coins twice over.")
    [again] = proposals(client, aid)
    assert again["id"] == rhys["id"]  # one entity, one proposal, with the fork's evidence
    assert again["evidence"][-1] == {
        "action_id": again["evidence"][-1]["action_id"],
        "text": "Rhys counts his coins twice over.",
    }
    assert again["evidence"][-1]["action_id"] not in ids


def test_a_retry_that_drops_the_name_withdraws_the_proposal(
    client: TestClient, double: ModelDouble
) -> None:
    aid = int(new_adventure(client)["id"])
    play(client, double, aid, *RHYS)
    assert len(proposals(client, aid)) == 1
    double.script("The harbour is quiet tonight.")
    assert client.post(f"/api/adventures/{aid}/retry").status_code == 200
    assert proposals(client, aid) == []


def test_refusals_say_what_to_fix(client: TestClient, double: ModelDouble) -> None:
    aid = int(new_adventure(client)["id"])
    play(client, double, aid, *RHYS)
    [rhys] = proposals(client, aid)
    pid = rhys["id"]
    bad_type = client.post(f"/api/card-proposals/{pid}/accept", json={"type": "dragon"})
    refused(bad_type, 400, "type")
    refused(client.post(f"/api/card-proposals/{pid}/accept", json={"keys": "Rhys"}), 400, "keys")
    too_long = {"keys": ["x" * 500]}
    refused(client.post(f"/api/card-proposals/{pid}/accept", json=too_long), 400, "'keys'")
    unknown = client.post(f"/api/card-proposals/{pid}/accept", json={"colour": "blue"})
    assert 400 <= unknown.status_code < 500
    empty_name = client.post(f"/api/card-proposals/{pid}/accept", json={"name": "  "})
    refused(empty_name, 400, "name")
    assert client.get(f"/api/adventures/{aid}/cards").json()[-1]["name"] != rhys["name"]
    for path in ("accept", "dismiss", "reopen"):
        missing = client.post(f"/api/card-proposals/999999/{path}")
        refused(missing, 404, "999999")
        huge = client.post(f"/api/card-proposals/{10**30}/{path}")
        assert 400 <= huge.status_code < 500
    not_dismissed = client.post(f"/api/card-proposals/{pid}/reopen")
    refused(not_dismissed, 409, "open")
    keyed = client.post(
        f"/api/card-proposals/{pid}/accept", json={"keys": ["Rhys", "rhys", "the captain"]}
    )
    assert keyed.status_code == 201, keyed.text
    assert keyed.json()["keywords"] == ["Rhys", "the captain"]  # repeats dropped, as on any card
    twice = client.post(f"/api/card-proposals/{pid}/accept")
    refused(twice, 409, "accepted")
    assert client.post(f"/api/card-proposals/{pid}/dismiss").status_code == 409


def test_another_players_proposals_are_not_found(accounts: TestClient, double: ModelDouble) -> None:
    mara, tal = As(accounts, "mara"), As(accounts, "tal")
    aid = mara.post("/api/adventures", json={"scenario": "lantern-coast"}).json()["id"]
    for reply in RHYS:
        double.script(reply)
        answer = mara.post(f"/api/adventures/{aid}/actions", json={"type": "do", "text": "wait"})
        assert answer.status_code == 200, answer.text
    idle(accounts)
    [rhys] = mara.get(f"/api/adventures/{aid}/card-proposals").json()
    assert tal.get(f"/api/adventures/{aid}/card-proposals").status_code == 404
    for path in ("accept", "dismiss", "reopen"):
        refused(tal.post(f"/api/card-proposals/{rhys['id']}/{path}"), 404, str(rhys["id"]))
    assert [p["state"] for p in mara.get(f"/api/adventures/{aid}/card-proposals").json()] == [
        "open"
    ]


def test_an_adventure_that_accepts_proposals_without_asking_gets_the_cards(
    client: TestClient, double: ModelDouble
) -> None:
    aid = int(new_adventure(client)["id"])
    assert client.get(f"/api/adventures/{aid}").json()["auto_accept_cards"] is False
    refused(client.patch(f"/api/adventures/{aid}", json={"auto_accept_cards": "maybe"}), 400)
    on = client.patch(f"/api/adventures/{aid}", json={"auto_accept_cards": True})
    assert on.status_code == 200 and on.json()["auto_accept_cards"] is True
    before = client.get(f"/api/adventures/{aid}/cards").json()
    play(client, double, aid, *RHYS)
    assert proposals(client, aid) == []  # accepted, so none waits
    cards = client.get(f"/api/adventures/{aid}/cards").json()
    assert cards[: len(before)] == before  # the cards there were, untouched
    [made] = cards[len(before) :]
    assert made["name"] == "Captain Rhys" and made["entry"].startswith(RHYS[0])
    exported = client.get(f"/api/adventures/{aid}/export").json()
    assert exported["adventure"]["auto_accept_cards"] is True
    copy = client.post("/api/adventures/import", json=exported)
    assert copy.status_code == 201, copy.text
    assert client.get(f"/api/adventures/{copy.json()['id']}").json()["auto_accept_cards"] is True


def test_proposals_travel_in_the_export_and_a_dismissed_name_stays_away_in_the_copy(
    client: TestClient, double: ModelDouble
) -> None:
    aid = int(new_adventure(client)["id"])
    abbey = (
        "A bell rings in Saltmarsh Abbey.",
        "The monks of Saltmarsh Abbey sing at dusk.",
        "Saltmarsh Abbey stands dark against the sky.",
    )
    play(client, double, aid, *RHYS, *abbey, "Mara Vell mends a net.", "Mara Vell sings.")
    play(client, double, aid, "Mara Vell rows out to the reef.")
    listed = {p["name"]: p for p in proposals(client, aid)}
    rhys = next(p for name, p in listed.items() if "Rhys" in name)
    card = client.post(f"/api/card-proposals/{rhys['id']}/accept")
    assert card.status_code == 201, card.text
    dismissed = client.post(f"/api/card-proposals/{listed['Saltmarsh Abbey']['id']}/dismiss")
    assert dismissed.status_code == 200, dismissed.text
    waiting = listed["Mara Vell"]
    exported = client.get(f"/api/adventures/{aid}/export").json()
    assert exported["version"] == 5
    offered = {p["name"]: p for p in exported["card_proposals"]}
    assert {p["state"] for p in offered.values()} == {"accepted", "dismissed", "open"}
    assert offered[rhys["name"]]["card"] is not None  # the card it became, by its file key
    copy = client.post("/api/adventures/import", json=exported)
    assert copy.status_code == 201, copy.text
    cid = int(copy.json()["id"])
    assert client.get(f"/api/adventures/{cid}/export").json() == exported  # whole, unchanged
    [mara] = proposals(client, cid)  # the open one waits again; the others stay decided
    assert (mara["name"], mara["entry"]) == ("Mara Vell", waiting["entry"])
    story = {
        a["id"]: a["text"] for a in client.get(f"/api/adventures/{cid}/actions").json()["actions"]
    }
    for line in mara["evidence"]:  # each on the copy's own action that says it
        assert line["text"] in story[line["action_id"]]
    play(client, double, cid, "The bells of Saltmarsh Abbey ring for Rhys.")
    assert [p["name"] for p in proposals(client, cid)] == ["Mara Vell"]
