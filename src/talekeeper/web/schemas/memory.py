"""The memory system's answers: the Memory Bank, a memory's source and uses, the Story
Summary, the Scene and the state of background work.

Each model reads the service's dataclass of the same shape by attribute, field for field
and in the same order. A key the API shows only sometimes is dropped when its value is
``None`` (``exclude_if``), never written as ``null``: a memory's ``on_path`` (only in a
listing of every status and branch), its ``witnesses`` (only where the world derives them)
and a source's ``note`` (only when it has no actions).
"""

from __future__ import annotations

from talekeeper.services.memory.manage import EvidenceState
from talekeeper.web.schemas.common import Out, Timestamp, sometimes
from talekeeper.web.schemas.story import ActionTextOut


class MemoryOut(Out):
    """A memory as the Memory Bank shows it."""

    id: int
    text: str
    status: str
    pinned: bool
    authority: str
    source_start: int | None
    source_end: int | None
    use_count: int
    last_used_at: Timestamp | None
    embedded: bool
    stale: bool
    origin: str
    writer: str
    branch_id: int
    depth: int
    created_at: Timestamp
    updated_at: Timestamp
    used_by: list[int]
    known_by: list[str] | None  # a secret of these characters; null: no secret


class ListedMemoryOut(MemoryOut):
    """A memory of the listing; ``on_path`` only with ``include=all``; ``witnesses`` only
    where they are derived (a source stretch on the current path, not withdrawn)."""

    on_path: bool | None = sometimes()
    witnesses: list[str] | None = sometimes()


class EvidencePassageOut(Out):
    """A passage of the source block the memory is also retrieved by."""

    id: int
    depth: int  # the action it comes from
    text: str
    embedded: bool  # has a vector: retrieval can find the memory through it by meaning


class MemorySourceOut(Out):
    memory: MemoryOut
    branch_id: int  # the branch the source is read along
    actions: list[ActionTextOut]
    note: str | None = sometimes()  # only with no actions: why
    evidence: list[EvidencePassageOut]  # in story order
    evidence_state: EvidenceState
    evidence_note: str | None  # why there is no evidence (null when there is)


class MemoryUseOut(Out):
    """A reply that used the memory; ``on_path``: an active action of the current path."""

    id: int
    depth: int
    branch_id: int
    take: int
    state: str
    created_at: Timestamp
    on_path: bool


class MemoryUsesOut(Out):
    memory_id: int
    use_count: int
    uses: list[MemoryUseOut]  # in story order


class SummaryVersionOut(Out):
    id: int
    text: str
    trigger: str
    writer: str
    created_at: Timestamp
    branch_id: int
    depth: int
    action_id: int | None
    covers_to: int
    base_id: int | None
    refreshes_id: int | None
    stale: bool


class SummaryOut(Out):
    """The Story Summary in force on the current path, and every version, oldest first."""

    adventure_id: int
    text: str
    current_version_id: int | None
    stale: bool
    covers_to: int
    next_at: int
    versions: list[SummaryVersionOut]


class SceneOut(Out):
    location: str
    present: list[str]
    summary: str
    source: str  # "player" or "story cards"


class PassStateOut(Out):
    """One kind of background work: its state, its last runs, and its error."""

    state: str
    last_run_at: str | None
    last_success_at: str | None
    last_failure_at: str | None
    last_error: str | None  # while it is failing
    previous_error: str | None  # the error of its last failure, once it ran again
    did_work: bool
    failures_in_a_row: int


class DerivedOut(Out):
    """An adventure's background work, one entry per kind, and whether work waits."""

    adventure_id: int
    pending: bool
    memory: PassStateOut
    summary: PassStateOut
    embedding: PassStateOut
    eviction: PassStateOut
    world: PassStateOut  # the world model's reading (idle, never run, without a world model)
    cards: PassStateOut  # the lore clerk's card proposals
