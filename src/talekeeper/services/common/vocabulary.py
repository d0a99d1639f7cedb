"""The stored vocabularies that the entry points name (an action's state, a source's state,
a call's status, a memory's status and authority, the world's kinds and origins, an
adventure's witness mode, a card proposal's kind and state, a member's role),
re-exported so that the entry points never import storage. The definitions stay in
storage: they are the schema's values."""

from talekeeper.storage.vocabulary import (
    ActionState,
    Authority,
    CallStatus,
    EntityKind,
    EventKind,
    EventOrigin,
    MemberRole,
    MemoryStatus,
    ProposalKind,
    ProposalState,
    SourceState,
    TurnOrder,
    WitnessMode,
)

__all__ = [
    "ActionState",
    "Authority",
    "CallStatus",
    "EntityKind",
    "EventKind",
    "EventOrigin",
    "MemberRole",
    "MemoryStatus",
    "ProposalKind",
    "ProposalState",
    "SourceState",
    "TurnOrder",
    "WitnessMode",
]
