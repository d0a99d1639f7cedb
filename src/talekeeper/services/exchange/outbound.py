"""Export: a whole adventure as one JSON document in Talekeeper's own format (see the
package's invariants). The file is version 2 unless sources are attached to the adventure:
then it is version 3 and lists them by reference in ``knowledge``."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy.orm import Session

from talekeeper.services.adventures import COMPONENTS, TOGGLES
from talekeeper.services.exchange.fileformat import (
    FORMAT,
    KNOWLEDGE_VERSION,
    VERSION,
    SourceRef,
    time_text,
)
from talekeeper.services.library import store as library
from talekeeper.services.memory.manage import EVERY_STATUS
from talekeeper.services.tree import load_adventure
from talekeeper.storage.repositories import memory as memories
from talekeeper.storage.repositories.story import StoryRepository


def export(session: Session, adventure_id: int, user_id: int) -> dict[str, Any]:
    adventure = load_adventure(session, adventure_id, user_id)
    repo = StoryRepository(session)
    branches = list(repo.branches(adventure.id))
    actions = list(repo.all_actions(adventure.id))
    branch_key = {b.id: i for i, b in enumerate(branches, 1)}
    action_key = {a.id: i for i, a in enumerate(actions, 1)}
    snapshots = repo.insights_for([a.id for a in actions])
    snapshots = sorted(snapshots, key=lambda s: action_key[s.action_id])
    exported: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "adventure": {
            "title": adventure.title,
            "scenario": adventure.scenario_id,
            "persona": {
                "name": adventure.persona_name,
                "pronouns": adventure.persona_pronouns,
                "description": adventure.persona_description,
            },
            **{key: getattr(adventure, key) for key in (*COMPONENTS, *TOGGLES)},
            "scene": {
                "location": adventure.scene_location,
                "present": json.loads(adventure.scene_present or "[]"),
                "summary": adventure.scene_summary,
                "by_player": adventure.scene_by_player,
            },
            "current_branch": branch_key.get(adventure.current_branch_id or -1),
            "created_at": time_text(adventure.created_at),
            "updated_at": time_text(adventure.updated_at),
        },
        "branches": [
            {
                "key": branch_key[b.id],
                "parent": branch_key.get(b.parent_id) if b.parent_id else None,
                "fork_depth": b.fork_depth,
                "forked_from_action": action_key.get(b.forked_from_action_id or -1),
                "name": b.name,
                "created_at": time_text(b.created_at),
            }
            for b in branches
        ],
        "actions": [
            {
                "key": action_key[a.id],
                "branch": branch_key[a.branch_id],
                "depth": a.depth,
                "type": a.type,
                "text": a.text,
                "state": a.state,
                "take": a.take,
                "created_at": time_text(a.created_at),
                "edited_at": time_text(a.edited_at),
            }
            for a in actions
        ],
        "cards": [
            {
                "name": c.name,
                "type": c.type,
                "keywords": json.loads(c.keywords),
                "entry": c.entry,
                "notes": c.notes,
                "always_on": c.always_on,
                "secondary_keywords": json.loads(c.secondary_keywords),
                "secondary_rule": c.secondary_rule,
                "created_at": time_text(c.created_at),
                "updated_at": time_text(c.updated_at),
            }
            for c in repo.cards(adventure.id)
        ],
        "insights": [
            {
                "action": action_key[s.action_id],
                "data": json.loads(s.data),
                "created_at": time_text(s.created_at),
            }
            for s in snapshots
        ],
        "memories": _export_memories(session, adventure.id, branch_key, action_key),
        "summaries": _export_summaries(session, adventure.id, branch_key, action_key),
    }
    knowledge = [SourceRef.of(s).public() for s in library.attached(session, adventure.id)]
    if knowledge:  # without it the file stays version 2, which older versions read
        exported["version"] = KNOWLEDGE_VERSION
        exported["knowledge"] = knowledge
    return exported


def _export_memories(
    session: Session, adventure_id: int, branch_key: dict[int, int], action_key: dict[int, int]
) -> list[dict[str, Any]]:
    repo = memories.MemoryRepository(session)
    rows = sorted(repo.memories(adventure_id, None, EVERY_STATUS), key=lambda m: m.id)
    uses = repo.uses([m.id for m in rows])
    return [
        {
            "key": key,
            "branch": branch_key[m.branch_id],
            "depth": m.depth,
            "action": action_key.get(m.action_id) if m.action_id else None,
            "source_start": m.source_start,
            "source_end": m.source_end,
            "text": m.text,
            "authority": m.authority,
            "origin": m.origin,
            "writer": m.writer,
            "status": m.status,
            "pinned": m.pinned,
            "stale": m.stale,
            "use_count": m.use_count,
            "last_used_at": time_text(m.last_used_at),
            "created_at": time_text(m.created_at),
            "updated_at": time_text(m.updated_at),
            "used_by": sorted(action_key[a] for a in uses.get(m.id, [])),
        }
        for key, m in enumerate(rows, 1)
    ]


def _export_summaries(
    session: Session, adventure_id: int, branch_key: dict[int, int], action_key: dict[int, int]
) -> list[dict[str, Any]]:
    rows = memories.MemoryRepository(session).summary_versions(adventure_id)
    summary_key = {v.id: i for i, v in enumerate(rows, 1)}
    return [
        {
            "key": summary_key[v.id],
            "branch": branch_key[v.branch_id],
            "depth": v.depth,
            "action": action_key.get(v.action_id) if v.action_id else None,
            "covers_to": v.covers_to,
            "text": v.text,
            "trigger": v.trigger,
            "writer": v.writer,
            "base": summary_key.get(v.base_id) if v.base_id else None,
            "refreshes": summary_key.get(v.refreshes_id) if v.refreshes_id else None,
            "stale": v.stale,
            "created_at": time_text(v.created_at),
        }
        for v in rows
    ]
