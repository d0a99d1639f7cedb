"""The witnesses of the current path, read in the caller's unit of work: who was present
at each of its actions (``witnesses``), and so who witnessed each memory of the Memory
Bank (docs/world.md, "Who saw what").

Invariants:

- Nothing here commits or writes: witnesses are derived from the path's events each time
  they are read, never stored, so they follow every retry, undo, edit and fork.
- One query and one fold for a whole listing, whatever the number of memories (and, in a
  shared adventure, the party's few reads); none when no memory of it has witnesses to
  derive.
- A memory has witnesses when it has a source stretch whose node is on the current path
  and it is not withdrawn (its source left the story): those present at every action of
  the stretch, by name (in a shared adventure the host's character among them, where it
  was: ``party``). A memory written by hand (no stretch) or one off the current path
  (listed only with ``include=all``) has none derived (``None``), which is not "nobody".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from talekeeper.core.lineage import Lineage, on_lineage
from talekeeper.services.memory.manage import MemoryView
from talekeeper.services.story.tree import Story
from talekeeper.services.world.facts import fact_of
from talekeeper.services.world.party_path import party_of
from talekeeper.services.world.witnesses import Presence, presence
from talekeeper.storage.repositories.world import WorldRepository
from talekeeper.storage.vocabulary import MemoryStatus


def path_presence(story: Story) -> Presence:
    """Who was present at each action of the current path."""
    rows = WorldRepository(story.session).path_events(story.lineage())
    return presence(((r.event.depth, fact_of(r)) for r in rows), party_of(story))


def _derived(memory: MemoryView, lineage: Lineage) -> bool:
    return (
        memory.source_start is not None
        and memory.source_end is not None
        and memory.status != MemoryStatus.WITHDRAWN
        and on_lineage(lineage, memory.branch_id, memory.depth)
    )


def with_witnesses(story: Story, memories: Sequence[MemoryView]) -> list[MemoryView]:
    """``memories`` with the witnesses of each that has them (see the invariants)."""
    lineage = story.lineage()
    wanted = {m.id for m in memories if _derived(m, lineage)}
    if not wanted:
        return list(memories)
    seen = path_presence(story)
    out = []
    for m in memories:
        if m.id in wanted and m.source_start is not None and m.source_end is not None:
            names = tuple(r.name for r in seen.throughout(m.source_start, m.source_end))
            m = replace(m, witnesses=names)
        out.append(m)
    return out
