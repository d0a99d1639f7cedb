"""The player's side of the Memory Bank: list, write, edit, pin, delete, show the source.

Invariants:

- Every change to a memory goes through ``bank`` (``set_text``, ``set_status``,
  ``set_pinned``), so the revision moves and no cached vector or term set
  outlives the row. Nothing here commits.
- A hand-written memory (``origin`` "user", ``writer`` "player") has no source
  range and is attached to the current branch at ``fork_depth - 1``: it is on
  this branch's path and on every branch forked from it, never on its parent's
  other paths, and no undo, retry or delete withdraws it (only automatic
  memories are withdrawn, ``changes``).
- A withdrawn or deleted memory is history: it is listed on request
  (``include=all``) and its source can be shown, but it cannot be edited or
  pinned. Deleting keeps the row (status ``deleted``), so its block stays
  covered and the memory pass never writes it again.
- When a memory's text changes (written or edited) background work is
  scheduled in the same transaction, so the embedding pass re-embeds it.
- A hand-written memory is refused, before it is written, once the adventure
  holds ``limits.MAX_MEMORIES`` memories of any status (one index read).
- The turns that used a memory are the replies ``memory_uses`` records (one row
  per reply that put it in its context), whatever became of those replies since.
- A memory belongs to an adventure of the requesting user; anyone else's is
  "not found", exactly like an unknown id.
- A memory's source view lists its evidence keys (the passages of its source block it
  is also retrieved by) in story order, each marked embedded or not; with none, an
  ``EvidenceState`` and a sentence say why (written by the player, not read yet, stale,
  out of the bank, or nothing its own text does not already state).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from sqlalchemy.orm import Session

from talekeeper.core.errors import Conflict, InvalidInput, NotFound
from talekeeper.core.lineage import on_lineage
from talekeeper.services.common import limits
from talekeeper.services.memory.bank import new_memory, set_pinned, set_status, set_text
from talekeeper.services.memory.base import MemoryService
from talekeeper.services.memory.cache import BankCache
from talekeeper.services.memory.source import source_rows
from talekeeper.services.story.access import owned
from talekeeper.services.story.tree import Story
from talekeeper.services.story.view import ActionText
from talekeeper.storage.models import Adventure, Memory
from talekeeper.storage.repositories.memory import LISTED, MemoryRepository, PathRow
from talekeeper.storage.repositories.memory_keys import KeyRepository
from talekeeper.storage.vocabulary import ActionState, MemoryOrigin, MemoryStatus

MEMORY_TEXT_MAX = 2_000  # a memory is a sentence or two; a page of background is a story card
PLAYER = "player"  # the writer of a hand-written (or hand-edited) memory
ALL = "all"  # ``include=all``: every status, every branch
EVERY_STATUS = tuple(MemoryStatus)
TEXT_HINT = " A memory is a sentence or two; put longer background in a story card."
NO_SOURCE = "written by the player; it has no source block"
SOURCE_GONE = "the actions it was written from are no longer in the story"


class EvidenceState(StrEnum):
    """Where a memory's evidence keys stand (``source_view``)."""

    READ = "read"  # read from its source as it stands: listed
    NO_WORDS = "no_words"  # read, but its source holds no word to be found by
    SOURCE_GONE = "source_gone"  # read, but its source actions left the story
    BY_PLAYER = "by_player"  # written by the player: no source to read
    STALE = "stale"  # its source was edited: read again once it is rewritten
    OUT_OF_BANK = "out_of_bank"  # forgotten, withdrawn or deleted before they were read
    BANK_OFF = "bank_off"  # the adventure's Memory Bank is off
    NO_EMBEDDER = "no_embedder"  # no embedding model: nothing is embedded, nor keyed
    PENDING = "pending"  # read by the next embedding pass


EVIDENCE_NOTES: dict[EvidenceState, str | None] = {
    EvidenceState.READ: None,
    EvidenceState.NO_WORDS: "Its source block holds no word to be found by, so it is found "
    "by its own text alone.",
    EvidenceState.SOURCE_GONE: "The actions it was written from are no longer in the story, "
    "so it has no passages to be found by.",
    EvidenceState.BY_PLAYER: "It was written by the player, so it has no passages of the "
    "story to be found by.",
    EvidenceState.STALE: "The story it was written from was edited: it is rewritten in the "
    "background, and its passages are read again then.",
    EvidenceState.OUT_OF_BANK: "It left the bank (forgotten, withdrawn or deleted) before "
    "its passages were read; a forgotten memory pinned back in has them read then.",
    EvidenceState.BANK_OFF: "The Memory Bank is off for this adventure; its passages are "
    "read once the bank is turned on and next embeds.",
    EvidenceState.NO_EMBEDDER: "No embedding model is set, so the Memory Bank is off and its "
    "passages are not read; they are read once an embedding model is chosen in Settings.",
    EvidenceState.PENDING: "Its passages are read from the story when the bank next embeds, "
    "in the background after a turn.",
}


def cache_of(memory: MemoryService) -> BankCache | None:
    """The memory service's bank cache, when it has one (``NullMemory`` has none)."""
    cache = getattr(memory, "cache", None)
    return cache if isinstance(cache, BankCache) else None


# -- reading ------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryView:
    """A memory as the Memory Bank shows it. ``on_path`` is known only in a listing of
    every status and branch (``include=all``); elsewhere it is ``None`` and not shown.
    ``witnesses`` (the names of those present throughout its source stretch) is filled in
    by the world (``services.world.witnessed``), which this layer does not read."""

    id: int
    text: str
    status: str  # a ``MemoryStatus``
    pinned: bool
    authority: str  # an ``Authority``
    source_start: int | None
    source_end: int | None
    use_count: int
    last_used_at: datetime | None
    embedded: bool  # has a vector
    stale: bool
    origin: str  # a ``MemoryOrigin``
    writer: str
    branch_id: int
    depth: int
    created_at: datetime
    updated_at: datetime
    used_by: tuple[int, ...]  # the ids of the replies that used it, oldest first
    known_by: tuple[str, ...] | None = None  # a secret of these characters (None: no secret)
    on_path: bool | None = None
    witnesses: tuple[str, ...] | None = None  # None: not derived (no stretch, off the path)


@dataclass(frozen=True)
class EvidencePassage:
    """A passage of the source block the memory is also retrieved by."""

    id: int
    depth: int  # the action it comes from
    text: str
    embedded: bool  # has a vector: retrieval can find the memory through it by meaning


@dataclass(frozen=True)
class MemorySource:
    """What a memory was written from and what it is retrieved by. ``note`` says why there
    are no actions, and is ``None`` when there are; ``evidence_note`` says why there is no
    evidence (``None`` when there is)."""

    memory: MemoryView
    branch_id: int  # the branch the source is read along
    actions: tuple[ActionText, ...]
    note: str | None
    evidence: tuple[EvidencePassage, ...]  # in story order
    evidence_state: EvidenceState
    evidence_note: str | None


@dataclass(frozen=True)
class MemoryUseView:
    """A reply that used a memory; ``on_path``: an active action of the current path."""

    id: int
    depth: int
    branch_id: int
    take: int
    state: str  # an ``ActionState``
    created_at: datetime
    on_path: bool


@dataclass(frozen=True)
class MemoryUses:
    memory_id: int
    use_count: int
    uses: tuple[MemoryUseView, ...]  # in story order


def memory_view(
    memory: Memory, used_by: list[int] | None = None, *, on_path: bool | None = None
) -> MemoryView:
    return MemoryView(
        id=memory.id,
        text=memory.text,
        status=memory.status,
        pinned=memory.pinned,
        authority=memory.authority,
        source_start=memory.source_start,
        source_end=memory.source_end,
        use_count=memory.use_count,
        last_used_at=memory.last_used_at,
        embedded=memory.vector is not None,
        stale=memory.stale,
        origin=memory.origin,
        writer=memory.writer,
        branch_id=memory.branch_id,
        depth=memory.depth,
        created_at=memory.created_at,
        updated_at=memory.updated_at,
        used_by=tuple(used_by or ()),
        on_path=on_path,
        known_by=tuple(json.loads(memory.known_by)) if memory.known_by is not None else None,
    )


def one_view(session: Session, memory: Memory) -> MemoryView:
    uses = MemoryRepository(session).uses([memory.id])
    return memory_view(memory, uses.get(memory.id, []))


def include_all(include: str) -> bool:
    """The ``include`` query parameter: empty (the current path's listed memories) or
    ``all``."""
    if include in ("", ALL):
        return include == ALL
    raise InvalidInput(
        f"'include' must be 'all' (every status and branch) or left out; "
        f"got {limits.quoted(include)}."
    )


def listing(story: Story, everything: bool = False) -> list[MemoryView]:
    """The memories on the current path (active and forgotten), in story order; with
    ``everything``, also withdrawn and deleted ones and other branches', each marked
    ``on_path``."""
    repo = MemoryRepository(story.session)
    lineage = story.lineage()
    if everything:
        rows = repo.memories(story.adventure.id, None, EVERY_STATUS)
    else:
        rows = repo.memories(story.adventure.id, lineage, LISTED)
    uses = repo.uses([m.id for m in rows])
    return [
        memory_view(
            m,
            uses.get(m.id, []),
            on_path=on_lineage(lineage, m.branch_id, m.depth) if everything else None,
        )
        for m in rows
    ]


def memory_row(session: Session, memory_id: int, user_id: int) -> Memory:
    """A memory of an adventure ``user_id`` may change (its host's or a co-host's);
    anyone else's is not found."""
    row = MemoryRepository(session).memory(memory_id)
    return owned(session, row, user_id, NotFound(f"There is no memory {memory_id}."))


def source_view(session: Session, memory: Memory, *, embeds: bool = True) -> MemorySource:
    """The actions a memory was written from, read along the branch it was written on, and
    its evidence (``embeds``: whether the player's settings name an embedding model, without
    which the bank reads no passages)."""
    actions: tuple[ActionText, ...] = ()
    if memory.source_start is None:
        note: str | None = NO_SOURCE
    else:
        actions = tuple(_source_action(r) for r in source_rows(session, memory))
        note = None if actions else SOURCE_GONE
    keys = KeyRepository(session).of(memory.id)
    state = _evidence_state(session, memory, bool(keys), bool(actions), embeds)
    return MemorySource(
        memory=one_view(session, memory),
        branch_id=memory.branch_id,
        actions=actions,
        note=note,
        evidence=tuple(
            EvidencePassage(id=k.id, depth=k.depth, text=k.text, embedded=k.vector is not None)
            for k in keys
        ),
        evidence_state=state,
        evidence_note=EVIDENCE_NOTES[state],
    )


def _evidence_state(
    session: Session, memory: Memory, keys: bool, source: bool, embeds: bool
) -> EvidenceState:
    """Why a memory has the evidence it has (the checks in the order the bank applies them:
    ``KeyRepository.unkeyed`` reads only active, fresh, automatic memories with a source)."""
    if keys:
        return EvidenceState.READ
    if memory.origin == MemoryOrigin.USER or memory.source_start is None:
        return EvidenceState.BY_PLAYER
    if memory.stale:
        return EvidenceState.STALE
    if memory.keyed:
        return EvidenceState.NO_WORDS if source else EvidenceState.SOURCE_GONE
    if memory.status != MemoryStatus.ACTIVE:
        return EvidenceState.OUT_OF_BANK
    adventure = session.get(Adventure, memory.adventure_id)
    if adventure is not None and not adventure.memory_bank:
        return EvidenceState.BANK_OFF
    return EvidenceState.PENDING if embeds else EvidenceState.NO_EMBEDDER


def uses_view(story: Story, memory: Memory) -> MemoryUses:
    """The replies that used a memory (the Memory Bank's "turns that used it"), in story
    order. Each is marked ``on_path`` when it is an active action of the current path: a
    use by a reply that was since retried, undone, deleted or left on another branch stays
    in the record (and in ``use_count``), but is no turn of the story the player sees."""
    lineage = story.lineage()
    uses = tuple(
        MemoryUseView(
            id=row.id,
            depth=row.depth,
            branch_id=row.branch_id,
            take=row.take,
            state=row.state,
            created_at=row.created_at,
            on_path=row.state == ActionState.ACTIVE
            and on_lineage(lineage, row.branch_id, row.depth),
        )
        for row in MemoryRepository(story.session).use_actions(memory.id)
    )
    return MemoryUses(memory_id=memory.id, use_count=memory.use_count, uses=uses)


def _source_action(row: PathRow) -> ActionText:
    """An action as the story shows it, from the fields a path row has."""
    return ActionText.of_text(row.id, row.type, row.text, row.depth, row.branch_id)


# -- changing -----------------------------------------------------------------------------


def _text(value: object) -> str:
    return limits.text_field(value, "text", MEMORY_TEXT_MAX, required=True, hint=TEXT_HINT)


def create(story: Story, text: object, pinned: bool, memory: MemoryService, user_id: int) -> Memory:
    """A hand-written memory on the current branch (see the module's invariants)."""
    cleaned = _text(text)
    _, count = MemoryRepository(story.session).bank_state(story.adventure.id)
    if count >= limits.MAX_MEMORIES:
        raise Conflict(
            f"Adventure {story.adventure.id} holds {count:,} memories (forgotten, withdrawn "
            f"and deleted ones included) and one adventure may hold at most "
            f"{limits.MAX_MEMORIES:,}: put what you want kept in a story card or the Plot "
            "Essentials instead.",
            code="limit_reached",
        )
    row = new_memory(
        story.session,
        story.adventure.id,
        cleaned,
        branch_id=story.branch.id,
        depth=story.branch.fork_depth - 1,
        origin=MemoryOrigin.USER,
        writer=PLAYER,
        pinned=bool(pinned),
    )
    memory.schedule(story.session, story.adventure.id, user_id)
    return row


def editable(row: Memory, verb: str) -> None:
    if row.status == MemoryStatus.WITHDRAWN:
        raise Conflict(
            f"Memory {row.id} was withdrawn: the actions it was written from left the story "
            f"(undo, retry or delete), so you cannot {verb} it. Write a new memory instead."
        )
    if row.status == MemoryStatus.DELETED:
        raise Conflict(
            f"Memory {row.id} was deleted, so you cannot {verb} it. Write a new memory instead."
        )


def edit(
    session: Session,
    row: Memory,
    fields: Mapping[str, object],
    memory: MemoryService,
    user_id: int,
) -> None:
    """New text and/or pin. Everything is checked before anything changes."""
    fields = {k: v for k, v in fields.items() if v is not None}
    if not fields:
        raise InvalidInput(
            "Send 'text' (the new wording), 'pinned' (true or false) or 'known_by' (the names "
            'of those who know it, null for everyone who saw it), e.g. {"pinned": true}.'
        )
    text = _text(fields["text"]) if "text" in fields else None
    editable(row, "edit" if text is not None else "pin or unpin")
    cache = cache_of(memory)
    if text is not None and (text != row.text or row.stale):  # same text: the player confirms it
        row.writer = PLAYER  # the wording is the player's now
        set_text(session, row, text, cache)
        memory.schedule(session, row.adventure_id, user_id)
    pinned = fields.get("pinned")
    if pinned is not None and (
        bool(pinned) != row.pinned or (pinned and row.status != MemoryStatus.ACTIVE)
    ):
        set_pinned(session, row, bool(pinned), cache)


def delete(session: Session, row: Memory, memory: MemoryService) -> None:
    """Hide a memory for good; its source stays covered. Deleting twice changes nothing."""
    if row.status == MemoryStatus.DELETED:
        return
    if row.status == MemoryStatus.WITHDRAWN:
        raise Conflict(
            f"Memory {row.id} was withdrawn when the actions it was written from left the "
            "story; it is already out of the bank and is never retrieved."
        )
    set_status(session, [row], MemoryStatus.DELETED, cache_of(memory))
