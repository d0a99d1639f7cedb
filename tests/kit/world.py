"""A world of real rows in the app (an adventure with a reply, a card, a memory, a library
source, a world event and a card proposal, its background work done) and the valid value
of every route's inputs that refers to it: what a sweep of requests over every route
starts from (``test_bad_input``, ``test_isolation``), so that only what a test makes wrong
is wrong."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi.testclient import TestClient
from tests.kit.web import Key, library_source, settled

from talekeeper_testkit.double import ModelDouble


@dataclass
class World:
    """Real rows, so every valid id exists and every refusal is about the bad part only."""

    adventure: int
    branch: int  # the adventure's current branch
    reply: int  # a generated narration (it has Insights)
    card: int
    export: dict[str, Any]
    memory: int  # a memory the player wrote
    source: int  # a knowledge library source
    event: int  # a world event the player added
    proposal: int  # an open card proposal (for "Tobin", named in four actions)


PATH_VALUES: dict[str, Callable[[World], str]] = {
    "adventure_id": lambda w: str(w.adventure),
    "action_id": lambda w: str(w.reply),
    "card_id": lambda w: str(w.card),
    "memory_id": lambda w: str(w.memory),
    "source_id": lambda w: str(w.source),
    "event_id": lambda w: str(w.event),
    "proposal_id": lambda w: str(w.proposal),
    "scenario_id": lambda w: "lantern-coast",
    "token_id": lambda w: "1",
    "secret": lambda w: "x" * 43,  # local mode has no tokens: a valid id that is not found
    "user_id": lambda w: "1",  # local mode has no accounts: a valid id that is not found
    "invite_id": lambda w: "1",  # local mode has no sharing (test_isolation makes one)
    "code": lambda w: "x" * 24,  # an invite code no invite has
}

# Valid values of the query parameters some routes require, so that only what a test makes
# wrong is wrong.
QUERY_VALUES = {
    "filename": "lore.json",
    "format": "sillytavern",
    "q": "lantern",
    "follow": "false",  # a feed that ends: a sweep reads what there is
}

VALID_BODIES: dict[Key, Callable[[World], Any]] = {
    ("POST", "/api/adventures"): lambda w: {"title": "A new tale"},
    ("PATCH", "/api/adventures/{adventure_id}"): lambda w: {"title": "Renamed"},
    ("POST", "/api/adventures/import"): lambda w: copy.deepcopy(w.export),
    ("POST", "/api/adventures/{adventure_id}/cards"): lambda w: {"name": "Lamp"},
    ("PATCH", "/api/cards/{card_id}"): lambda w: {"name": "Lamp"},
    ("POST", "/api/adventures/{adventure_id}/actions"): lambda w: {"type": "do", "text": "look"},
    ("POST", "/api/adventures/{adventure_id}/insights/dry-run"): lambda w: {
        "type": "do",
        "text": "look",
    },
    ("POST", "/api/adventures/{adventure_id}/switch-take"): lambda w: {"take": 1},
    ("PATCH", "/api/actions/{action_id}"): lambda w: {"text": "The sea is calm."},
    ("POST", "/api/actions/{action_id}/fork"): lambda w: {"name": "Elsewhere"},
    ("POST", "/api/adventures/{adventure_id}/switch-branch"): lambda w: {"branch_id": w.branch},
    ("PATCH", "/api/settings"): lambda w: {"reply_tokens": 120},
    ("POST", "/api/settings/test-connection"): lambda w: {"reply_tokens": 120},
    ("POST", "/api/settings/models"): lambda w: {"timeout": 5},
    ("POST", "/api/adventures/{adventure_id}/memories"): lambda w: {"text": "Maren lost an eye."},
    ("PATCH", "/api/memories/{memory_id}"): lambda w: {"text": "Maren lost her left eye."},
    ("PUT", "/api/adventures/{adventure_id}/summary"): lambda w: {"text": "Tamsin came home."},
    ("POST", "/api/adventures/{adventure_id}/world/events"): lambda w: {
        "kind": "took",
        "object": "a lantern",
    },
    ("PATCH", "/api/world/events/{event_id}"): lambda w: {"known_by": ["Maren"]},
    ("POST", "/api/card-proposals/{proposal_id}/accept"): lambda w: {"entry": "A ferryman."},
    ("POST", "/api/auth/login"): lambda w: {"username": "mara", "password": "x" * 12},
    ("POST", "/api/auth/setup"): lambda w: {
        "secret": "x" * 43,
        "username": "mara",
        "password": "x" * 12,
    },
    ("POST", "/api/auth/password"): lambda w: {"current": "x" * 12, "new": "y" * 12},
    ("POST", "/api/tokens"): lambda w: {"name": "script", "scopes": ["read"]},
    ("POST", "/api/admin/users"): lambda w: {"name": "tove", "password": "x" * 12, "admin": False},
    ("PATCH", "/api/admin/users/{user_id}"): lambda w: {"disabled": False, "password": "y" * 12},
    ("POST", "/api/adventures/{adventure_id}/invites"): lambda w: {"role": "viewer"},
    ("POST", "/api/invites/{code}/join"): lambda w: {"persona": {"name": "Tove"}},
    ("PATCH", "/api/adventures/{adventure_id}/members/{user_id}"): lambda w: {"role": "viewer"},
    ("POST", "/api/adventures/{adventure_id}/presence"): lambda w: {"writing": True},
    ("PUT", "/api/adventures/{adventure_id}/knowledge"): lambda w: {"source_ids": [w.source]},
    ("PUT", "/api/adventures/{adventure_id}/scene"): lambda w: {
        "location": "The Great Lantern",
        "present": ["Old Maren"],
        "summary": "Night falls.",
    },
}


def state(client: TestClient, world: World) -> dict[str, Any]:
    """What a refused request must leave as it was."""
    return {
        "adventures": client.get("/api/adventures").json(),
        "export": client.get(f"/api/adventures/{world.adventure}/export").json(),
        "settings": client.get("/api/settings").json()["values"],
        "calls": client.get("/api/ai-calls", params={"limit": 500}).json(),
        "memories": client.get(f"/api/adventures/{world.adventure}/memories?include=all").json(),
        "summary": client.get(f"/api/adventures/{world.adventure}/summary").json(),
        "scene": client.get(f"/api/adventures/{world.adventure}/scene").json(),
        "world": client.get(f"/api/adventures/{world.adventure}/world/events").json(),
        "proposals": client.get(f"/api/adventures/{world.adventure}/card-proposals").json(),
    }


def make_world(client: TestClient, double: ModelDouble) -> World:
    """An adventure with a reply, a card and a memory, its background work done."""
    adventure = client.post("/api/adventures", json={"scenario": "lantern-coast"})
    assert adventure.status_code == 201, adventure.text
    aid = adventure.json()["id"]
    double.script("Old Maren nods at the tower.")
    turn = client.post(f"/api/adventures/{aid}/actions", json={"type": "do", "text": "wave"})
    assert turn.status_code == 200, turn.text
    double.script("Tobin rows past the tower.", "Tobin ties his boat to the quay.")
    for text in ("wave at Tobin", "call Tobin"):
        more = client.post(f"/api/adventures/{aid}/actions", json={"type": "do", "text": text})
        assert more.status_code == 200, more.text
    card = client.post(f"/api/adventures/{aid}/cards", json={"name": "Brass Key"})
    assert card.status_code == 201, card.text
    memory = client.post(f"/api/adventures/{aid}/memories", json={"text": "Maren is wary."})
    assert memory.status_code == 201, memory.text
    settled(client, aid)  # the memory is embedded in the background: let that land first
    source = library_source(client)
    took = client.post(
        f"/api/adventures/{aid}/world/events", json={"kind": "took", "object": "a rope"}
    )
    assert took.status_code == 201, took.text
    settled(client, aid)  # the lore clerk proposes a card for Tobin
    [proposal] = client.get(f"/api/adventures/{aid}/card-proposals").json()
    return World(
        adventure=aid,
        branch=adventure.json()["current_branch_id"],
        reply=turn.json()["reply"]["id"],
        card=card.json()["id"],
        export=client.get(f"/api/adventures/{aid}/export").json(),
        memory=memory.json()["id"],
        source=source,
        event=took.json()["id"],
        proposal=proposal["id"],
    )
