"""Export: a whole adventure as one file of Talekeeper's own format (see the package's
invariants), built as the model of its version: the lowest that holds what the adventure
has. Version 5 when it has card proposals (``card_proposals``, in every state); else
version 4 when its world has entities or events (``world_entities``,
``world_events``: every event, on any branch, dismissed ones too); else version 3 when
sources are attached to the adventure (listed by reference in ``knowledge``); else
version 2."""

from __future__ import annotations

import json
from dataclasses import dataclass

from sqlalchemy.orm import Session

from talekeeper.services.exchange import proposals
from talekeeper.services.exchange.fileformat import (
    FORMAT,
    KNOWLEDGE_VERSION,
    PROPOSALS_VERSION,
    VERSION,
    WORLD_VERSION,
    ActionEntry,
    AdventureFileV2,
    AdventureFileV3,
    AdventureFileV4,
    AdventureFileV5,
    AdventureMeta,
    BranchEntry,
    CardEntry,
    EntityEntry,
    EventEntry,
    InsightEntry,
    MemoryEntry,
    Persona,
    Scene,
    SourceRef,
    SummaryEntry,
)
from talekeeper.services.library import store as library
from talekeeper.services.memory.manage import EVERY_STATUS
from talekeeper.services.prompt import budgets
from talekeeper.services.story.access import load_adventure
from talekeeper.storage.models import Action, Adventure, Branch, StoryCard, WorldEvent
from talekeeper.storage.repositories import memory as memories
from talekeeper.storage.repositories.proposals import ProposalRepository
from talekeeper.storage.repositories.story import StoryRepository
from talekeeper.storage.repositories.world import WorldRepository


def export(session: Session, adventure_id: int, user_id: int) -> dict[str, object]:
    """The file as JSON values, in the order its fields are written."""
    exported: dict[str, object] = export_file(session, adventure_id, user_id).model_dump(
        mode="json"
    )
    return exported


def export_file(
    session: Session, adventure_id: int, user_id: int
) -> AdventureFileV2 | AdventureFileV3 | AdventureFileV4 | AdventureFileV5:
    adventure = load_adventure(session, adventure_id, user_id)
    repo = StoryRepository(session)
    tree = story_entries(repo, adventure.id)
    branch_key, action_key = tree.branch_key, tree.action_key
    meta = _meta(adventure, branch_key)
    stored_cards = repo.cards(adventure.id)
    cards = [_card(c) for c in stored_cards]
    card_key = {c.id: key for key, c in enumerate(stored_cards, 1)}  # as an import keys them
    snapshots = sorted(repo.insights_for(list(action_key)), key=lambda s: action_key[s.action_id])
    insights = [
        InsightEntry(
            action=action_key[s.action_id], data=json.loads(s.data), created_at=s.created_at
        )
        for s in snapshots
    ]
    memory = _memories(session, adventure.id, branch_key, action_key)
    versions = _summaries(session, adventure.id, branch_key, action_key)
    knowledge = [SourceRef.of(s) for s in library.attached(session, adventure.id)]
    common = {
        "format": FORMAT,
        "adventure": meta,
        "branches": tree.branches,
        "actions": tree.actions,
        "cards": cards,
        "insights": insights,
        "memories": memory,
        "summaries": versions,
    }
    entities, events = _world(session, adventure.id, branch_key, action_key)
    offered = ProposalRepository(session).proposals(adventure.id)
    if offered:
        return AdventureFileV5.model_validate(
            common
            | {"version": PROPOSALS_VERSION, "knowledge": knowledge}
            | {"world_entities": entities, "world_events": events}
            | {"card_proposals": proposals.exported(offered, action_key, card_key)}
        )
    if entities or events:
        return AdventureFileV4.model_validate(
            common
            | {"version": WORLD_VERSION, "knowledge": knowledge}
            | {"world_entities": entities, "world_events": events}
        )
    if knowledge:
        return AdventureFileV3.model_validate(
            common | {"version": KNOWLEDGE_VERSION, "knowledge": knowledge}
        )
    # Nothing of a later version: the file stays version 2, which older versions read.
    return AdventureFileV2.model_validate(common | {"version": VERSION})


@dataclass(frozen=True)
class StoryEntries:
    """An adventure's branches and actions as its file lists them, and each row's file
    key by its id (keys number the rows from 1, in the order of their ids)."""

    branches: list[BranchEntry]
    actions: list[ActionEntry]
    branch_key: dict[int, int]
    action_key: dict[int, int]


def story_entries(repo: StoryRepository, adventure_id: int) -> StoryEntries:
    """The story tree of the adventure as the file writes it (what an import reads its
    world from, when the file predates the world)."""
    branches = list(repo.branches(adventure_id))
    actions = list(repo.all_actions(adventure_id))
    branch_key = {b.id: i for i, b in enumerate(branches, 1)}
    action_key = {a.id: i for i, a in enumerate(actions, 1)}
    return StoryEntries(
        [_branch(b, branch_key, action_key) for b in branches],
        [_action(a, branch_key, action_key) for a in actions],
        branch_key,
        action_key,
    )


def _world(
    session: Session, adventure_id: int, branch_key: dict[int, int], action_key: dict[int, int]
) -> tuple[list[EntityEntry], list[EventEntry]]:
    world = WorldRepository(session)
    rows = world.entities(adventure_id)
    entity_key = {e.id: i for i, e in enumerate(rows, 1)}
    entities = [
        EntityEntry(
            key=entity_key[e.id],
            kind=e.kind,
            name=e.name,
            aliases=json.loads(e.aliases or "[]"),
            created_at=e.created_at,
        )
        for e in rows
    ]
    events = [_event(e, branch_key, action_key, entity_key) for e in world.events(adventure_id)]
    return entities, events


def _event(
    e: WorldEvent,
    branch_key: dict[int, int],
    action_key: dict[int, int],
    entity_key: dict[int, int],
) -> EventEntry:
    def named(entity_id: int | None) -> int | None:
        return None if entity_id is None else entity_key[entity_id]

    return EventEntry(
        action=action_key[e.action_id],
        branch=branch_key[e.branch_id],
        depth=e.depth,
        kind=e.kind,
        subject=named(e.subject_id),
        object=named(e.object_id),
        target=named(e.target_id),
        value=e.value,
        origin=e.origin,
        evidence=e.evidence,
        dismissed=e.dismissed,
        known_by=_names(e.known_by),
        created_at=e.created_at,
    )


def _branch(b: Branch, branch_key: dict[int, int], action_key: dict[int, int]) -> BranchEntry:
    return BranchEntry(
        key=branch_key[b.id],
        parent=branch_key.get(b.parent_id) if b.parent_id else None,
        fork_depth=b.fork_depth,
        forked_from_action=action_key.get(b.forked_from_action_id or -1),
        name=b.name,
        created_at=b.created_at,
    )


def _action(a: Action, branch_key: dict[int, int], action_key: dict[int, int]) -> ActionEntry:
    return ActionEntry(
        key=action_key[a.id],
        branch=branch_key[a.branch_id],
        depth=a.depth,
        type=a.type,
        text=a.text,
        state=a.state,
        take=a.take,
        created_at=a.created_at,
        edited_at=a.edited_at,
        author=a.author_name,
    )


def _card(c: StoryCard) -> CardEntry:
    return CardEntry(
        name=c.name,
        type=c.type,
        keywords=json.loads(c.keywords),
        entry=c.entry,
        notes=c.notes,
        always_on=c.always_on,
        secondary_keywords=json.loads(c.secondary_keywords),
        secondary_rule=c.secondary_rule,
        known_by=_names(c.known_by),
        created_at=c.created_at,
        updated_at=c.updated_at,
    )


def _names(known_by: str | None) -> list[str] | None:
    """A secret's names as stored (JSON text), for the file."""
    return None if known_by is None else list(json.loads(known_by))


def _meta(adventure: Adventure, branch_key: dict[int, int]) -> AdventureMeta:
    return AdventureMeta(
        title=adventure.title,
        scenario=adventure.scenario_id,
        persona=Persona(
            name=adventure.persona_name,
            pronouns=adventure.persona_pronouns,
            description=adventure.persona_description,
        ),
        ai_instructions=adventure.ai_instructions,
        plot_essentials=adventure.plot_essentials,
        authors_note=adventure.authors_note,
        auto_summarize=adventure.auto_summarize,
        memory_bank=adventure.memory_bank,
        witness_mode=adventure.witness_mode,
        auto_accept_cards=adventure.auto_accept_cards,
        section_budgets=budgets.read_stored(adventure.section_budgets),
        scene=Scene(
            location=adventure.scene_location,
            present=json.loads(adventure.scene_present or "[]"),
            summary=adventure.scene_summary,
            by_player=adventure.scene_by_player,
        ),
        current_branch=branch_key.get(adventure.current_branch_id or -1),
        created_at=adventure.created_at,
        updated_at=adventure.updated_at,
    )


def _memories(
    session: Session, adventure_id: int, branch_key: dict[int, int], action_key: dict[int, int]
) -> list[MemoryEntry]:
    repo = memories.MemoryRepository(session)
    rows = sorted(repo.memories(adventure_id, None, EVERY_STATUS), key=lambda m: m.id)
    uses = repo.uses([m.id for m in rows])
    return [
        MemoryEntry(
            key=key,
            branch=branch_key[m.branch_id],
            depth=m.depth,
            action=action_key.get(m.action_id) if m.action_id else None,
            source_start=m.source_start,
            source_end=m.source_end,
            text=m.text,
            authority=m.authority,
            origin=m.origin,
            writer=m.writer,
            status=m.status,
            pinned=m.pinned,
            stale=m.stale,
            known_by=_names(m.known_by),
            use_count=m.use_count,
            last_used_at=m.last_used_at,
            created_at=m.created_at,
            updated_at=m.updated_at,
            used_by=sorted(action_key[a] for a in uses.get(m.id, [])),
        )
        for key, m in enumerate(rows, 1)
    ]


def _summaries(
    session: Session, adventure_id: int, branch_key: dict[int, int], action_key: dict[int, int]
) -> list[SummaryEntry]:
    rows = memories.MemoryRepository(session).summary_versions(adventure_id)
    summary_key = {v.id: i for i, v in enumerate(rows, 1)}
    return [
        SummaryEntry(
            key=summary_key[v.id],
            branch=branch_key[v.branch_id],
            depth=v.depth,
            action=action_key.get(v.action_id) if v.action_id else None,
            covers_to=v.covers_to,
            text=v.text,
            trigger=v.trigger,
            writer=v.writer,
            base=summary_key.get(v.base_id) if v.base_id else None,
            refreshes=summary_key.get(v.refreshes_id) if v.refreshes_id else None,
            stale=v.stale,
            created_at=v.created_at,
        )
        for v in rows
    ]
