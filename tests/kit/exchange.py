"""An adventure in the export format (version 2), written by hand in the order and form
the export writes it (two branches, memories in every status, linked summary versions, the
player's scene), its rows built one by one, and the rows per table an import must leave as
they were when it is refused."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import text

from talekeeper.storage.db import session_scope

T0 = "2026-03-01T09:00:00+00:00"
T1 = "2026-03-01T09:05:30.250000+00:00"
TABLES = (
    "adventures",
    "branches",
    "actions",
    "story_cards",
    "insights",
    "memories",
    "memory_uses",
    "summary_versions",
    "world_entities",
    "world_events",
)


def action(key: int, branch: int, depth: int, type_: str, words: str) -> dict[str, Any]:
    return {
        "key": key,
        "branch": branch,
        "depth": depth,
        "type": type_,
        "text": words,
        "state": "active",
        "take": 1,
        "created_at": T0,
        "edited_at": None,
    }


def memory(
    key: int, branch: int, depth: int, action_key: int | None, **extra: Any
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "key": key,
        "branch": branch,
        "depth": depth,
        "action": action_key,
        "source_start": 0,
        "source_end": depth,
        "text": "Mara found the brass key under the pier.",
        "authority": "accepted_story",
        "origin": "auto",
        "writer": "extractive",
        "status": "active",
        "pinned": False,
        "stale": False,
        "use_count": 0,
        "last_used_at": None,
        "created_at": T0,
        "updated_at": T1,
        "used_by": [],
    }
    row.update(extra)
    return row


def summary(
    key: int, branch: int, depth: int, action_key: int | None, **extra: Any
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "key": key,
        "branch": branch,
        "depth": depth,
        "action": action_key,
        "covers_to": depth,
        "text": "Mara came to the harbour and found a key.",
        "trigger": "interval",
        "writer": "extractive",
        "base": None,
        "refreshes": None,
        "stale": False,
        "created_at": T1,
    }
    row.update(extra)
    return row


def version_2_file() -> dict[str, Any]:
    """Two branches, memories in every status, linked summary versions, the player's scene;
    in the order and form our export writes, so it must come back byte for byte."""
    return {
        "format": "talekeeper-adventure",
        "version": 2,
        "adventure": {
            "title": "The Quiet Harbour",
            "scenario": None,
            "persona": {"name": "Mara", "pronouns": "she/her", "description": "A diver."},
            "ai_instructions": "",
            "plot_essentials": "Mara dives for lost things.",
            "authors_note": "",
            "auto_summarize": True,
            "memory_bank": True,
            "scene": {
                "location": "The Pier",
                "present": ["Old Maren", "Pip"],
                "summary": "The tide is turning.",
                "by_player": True,
            },
            "current_branch": 2,
            "created_at": T0,
            "updated_at": T1,
        },
        "branches": [
            {
                "key": 1,
                "parent": None,
                "fork_depth": 0,
                "forked_from_action": None,
                "name": "Main",
                "created_at": T0,
            },
            {
                "key": 2,
                "parent": 1,
                "fork_depth": 3,
                "forked_from_action": 3,
                "name": "Deep water",
                "created_at": T1,
            },
        ],
        "actions": [
            action(1, 1, 0, "narration", "You stand on the pier."),
            action(2, 1, 1, "do", "dive under the pier"),
            action(3, 1, 2, "narration", "You find a brass key in the silt."),
            action(4, 1, 3, "do", "swim home"),
            action(5, 2, 3, "do", "swim deeper"),
            action(6, 2, 4, "narration", "The water turns cold and green."),
        ],
        "cards": [],
        "insights": [],
        "memories": [
            memory(1, 1, 2, 3, pinned=True, use_count=2, last_used_at=T1, used_by=[3, 6]),
            memory(
                2,
                1,
                2,
                3,
                text="The key perhaps opens the lighthouse.",
                authority="heuristic",
                status="forgotten",
                stale=True,
                use_count=1,
                last_used_at=T0,
                used_by=[6],
            ),
            memory(3, 1, 3, 4, source_start=3, status="withdrawn"),
            memory(4, 1, 2, 3, status="deleted", writer="double-summary"),
            memory(
                5,
                2,
                2,
                None,
                source_start=None,
                source_end=None,
                text="Pip is afraid of deep water.",
                origin="user",
                writer="player",
            ),
        ],
        "summaries": [
            summary(1, 1, 2, 3),
            summary(2, 1, 3, 4, base=1, stale=True, text="Mara found a key and swam."),
            summary(3, 1, 3, 4, base=1, refreshes=2, text="Mara found a key, swam home."),
            summary(4, 2, 4, None, covers_to=3, trigger="user", writer="", base=3, text="Mine."),
        ],
    }


def counts(client: TestClient) -> dict[str, int]:
    runtime = client.app.state.runtime  # type: ignore[attr-defined]
    with session_scope(runtime.sessions) as session:
        return {t: int(session.scalar(text(f"SELECT count(*) FROM {t}")) or 0) for t in TABLES}
