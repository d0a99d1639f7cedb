"""The export file's format: its name, versions, sections, the values its fields take, and
the limits an import holds it to."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from talekeeper.services import limits
from talekeeper.services.library import store as library
from talekeeper.storage.models import LibrarySource
from talekeeper.storage.vocabulary import ActionState, Authority, MemoryOrigin, SummaryTrigger

FORMAT = "talekeeper-adventure"
VERSION = 2  # what an export is written as, unless it holds a section of a later version
KNOWLEDGE_VERSION = 3  # version 2 with ``knowledge``: the attached library sources
STATES = tuple(ActionState)  # active, take, undone, removed
_V1 = frozenset({"format", "version", "adventure", "branches", "actions", "cards", "insights"})
_V2 = _V1 | {"memories", "summaries"}
SECTIONS = {1: _V1, 2: _V2, 3: _V2 | {"knowledge"}}  # what each version's file holds
KIND_MAX = 16  # a source's kind ("pdf", "epub", ...), as a reference names it
AUTHORITIES = tuple(Authority)
ORIGINS = tuple(MemoryOrigin)
TRIGGERS = tuple(SummaryTrigger)
WRITER_MAX = 255  # a model name, as the column holds it
SCENARIO_MAX = 64  # a scenario id, as the column holds it
MAX_INTEGER = 2**31 - 1  # depths, takes and keys fit a 32-bit column on every database
# How deep any value of a file may nest. An export nests about 8 deep (the memories an
# Insights snapshot lists); the bound keeps every later reading of a value copied verbatim
# (the export, the Insights page) far from the recursion limit.
MAX_NESTING = 32

# The most entries of each list a file may hold: what one adventure may hold. Insights
# snapshots are one per reply, so no more than actions; Story Summary versions (one per 15
# actions, plus the player's edits) are held to the same number.
ENTRY_CAPS = {
    "branches": (limits.MAX_BRANCHES, "branches"),
    "actions": (limits.MAX_ACTIONS, "actions (every state: takes, undone and removed ones too)"),
    "cards": (limits.MAX_CARDS, "story cards"),
    "memories": (limits.MAX_MEMORIES, "memories (every status)"),
    "insights": (limits.MAX_ACTIONS, "Insights snapshots (one per action)"),
    "summaries": (limits.MAX_ACTIONS, "Story Summary versions"),
    "knowledge": (library.MAX_ATTACHED, "attached library sources"),
}

# Replies' uses of memories (``used_by`` entries) in one file: every reply of the largest
# adventure (half its rows) using 40 memories, eight times the most a turn retrieves.
USES_MAX = limits.MAX_ACTIONS * 20


@dataclass(frozen=True)
class SourceRef:
    """An attached library source as the file names it (``knowledge``): enough to find it
    in a library again, never its text, which stays in its owner's library."""

    title: str
    filename: str
    kind: str
    size_bytes: int
    passage_count: int

    @classmethod
    def of(cls, source: LibrarySource) -> SourceRef:
        return cls(
            source.title, source.filename, source.kind, source.size_bytes, source.passage_count
        )

    def public(self) -> dict[str, Any]:
        return asdict(self)


def time_text(value: datetime | None) -> str | None:
    return value.isoformat() if value else None
