"""The rules of memory blocks (docs/memory.md §2): blocks of 6 actions, from 12, settle slack 1.

Pure: no session, no model. The background pass that writes the blocks these rules
choose is ``passes.blocks``; the one that rewrites stale memories is ``passes.refresh``.

Invariants:

- The cursor is not a count: it is the coverage of the path's automatic
  memories (their source ranges). A block is formed from actions no memory
  covers, so a pass never double-covers an action and never skips one; when
  undo, delete or retry withdraw a memory, its actions become uncovered and
  the next run writes them again ("rewinding" the cursor to just before the
  withdrawn memory's ``source_start``).
- No memory until the path has ``FIRST_AT`` actions; a block is written only
  once ``SETTLE_SLACK`` more actions sit past its end, so a memory never covers
  the newest action (the one a retry could still replace). A run of uncovered
  actions that ends against a covered one (a gap left by a withdrawn memory)
  may end in a shorter block; the newest run only ever yields full blocks.
- A block never ends on a node another branch's path shares with a memory
  written off this path that covers it from there on (``shared_nodes``): a
  memory there would be on that path too, beside the memory already covering
  those actions, so a fork never doubles its parent's coverage, nor a parent
  its fork's. A block reaching such a node grows past it instead.
- A gap that cannot end on its own (its last actions are all such shared
  nodes and a covered action follows: a delete withdrew the memory that ended
  past the fork point, and the memory after the gap was written while that one
  still stood) joins the memory after it: that memory is rewritten over the gap
  and its own actions, its ``source_start`` moved back to the gap's first
  action. It keeps its node, id, pin and uses, so it is still on exactly the
  paths it was on, and the gap is covered once on each of them: on this path by
  the joined memory, on the other branch by its own memory, which lies off
  this path. Writing the gap anywhere else would either double-cover it on the
  other branch or leave it uncovered here for good. A memory the player
  deleted takes the gap into its range without being rewritten (its text is
  never written again; the gap's actions go with it).
- At most ``MAX_PER_RUN`` blocks per run; the pass commits each on its own, so
  a failure keeps the memories written before it.
- A memory is attached to the node its block ends on and records its source
  range; its authority comes from its text (``authority.classify``), never
  from the model.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from talekeeper.core.lineage import BranchLink, Lineage, lineage_of
from talekeeper.services.common.rendering import is_player, render

if TYPE_CHECKING:
    from talekeeper.storage.models import Memory
    from talekeeper.storage.repositories.memory import PathRow

BLOCK_ACTIONS = 6  # a scene's worth of play: enough to say something, short enough to be one fact
FIRST_AT = 12  # before this the whole story fits in the history window anyway
SETTLE_SLACK = 1  # the newest action can still be retried: never summarize it
MAX_PER_RUN = 5  # an imported long story fills in over several turns, not in one stall


def plan_blocks(
    depths: Sequence[int],
    covered: Sequence[tuple[int, int]],
    *,
    limit: int = MAX_PER_RUN,
    no_end: Collection[int] = frozenset(),
) -> list[list[int]]:
    """The blocks (lists of depths, oldest first) the next run should summarize.

    ``depths``: the active actions of the path, ascending; ``covered``: source ranges
    of the memories that keep their actions covered; ``no_end``: depths a block must not
    end on (a memory there would also be on another branch's path, where a memory
    already covers part of its block: see ``shared_nodes``). A block reaching one grows
    past it, so it ends on a node of this path alone. A gap before a covered action
    whose rest cannot end there joins the memory after it: that block runs on through
    the memory's range and ends where the memory does (``joined_span`` finds it).
    """
    if len(depths) < FIRST_AT:
        return []
    covering = _Coverage(covered)
    usable = depths[: len(depths) - SETTLE_SLACK]
    blocks: list[list[int]] = []
    run: list[int] = []
    for depth in usable:
        span = covering.span(depth)
        if span is None:
            run.append(depth)
            continue
        full, rest = _chunks(run, no_end)
        blocks.extend(full)
        if rest and rest[-1] not in no_end:
            blocks.append(rest)  # a gap before a covered action: a shorter block
        elif rest and span[1] not in no_end:
            lo, hi = bisect.bisect_left(depths, span[0]), bisect.bisect_right(depths, span[1])
            blocks.append(rest + list(depths[lo:hi]))
        # else the memory after the gap ends on a shared node as well, which only a double
        # cover on the other path could make: there is nothing sound to join, the gap waits
        run = []
        if len(blocks) >= limit:
            break
    blocks.extend(_chunks(run, no_end)[0])
    return blocks[:limit]


class _Coverage:
    """Which covered range, if any, holds a depth: a binary search over the ranges by
    start and the furthest end reached so far (one lookup per depth, however many)."""

    def __init__(self, covered: Sequence[tuple[int, int]]) -> None:
        ranges = sorted(covered)
        self.starts = [s for s, _ in ranges]
        self.furthest: list[tuple[int, int]] = []
        for span in ranges:
            best = self.furthest[-1] if self.furthest else span
            self.furthest.append(span if span[1] >= best[1] else best)

    def span(self, depth: int) -> tuple[int, int] | None:
        i = bisect.bisect_right(self.starts, depth)
        if i == 0 or self.furthest[i - 1][1] < depth:
            return None
        return self.furthest[i - 1]


def joined_span(block: Sequence[int], covered: Sequence[tuple[int, int]]) -> tuple[int, int] | None:
    """The range of the memory ``block`` joins (``plan_blocks``), or None for a new one."""
    return _Coverage(covered).span(block[-1])


def _chunks(run: list[int], no_end: Collection[int]) -> tuple[list[list[int]], list[int]]:
    """The full blocks of ``run``, each grown past ``no_end``, and the actions left after."""
    out: list[list[int]] = []
    chunk: list[int] = []
    for depth in run:
        chunk.append(depth)
        if len(chunk) >= BLOCK_ACTIONS and depth not in no_end:
            out.append(chunk)
            chunk = []
    return out, chunk


def shared_nodes(path: Lineage, others: Sequence[Memory], links: dict[int, BranchLink]) -> set[int]:
    """Depths of ``path`` a new memory must not end on: those that also lie on the path of
    a memory written off this path (a fork's, or the parent's beyond the fork point) whose
    source starts at or before them. A memory ending there would be on that memory's path
    too, and the two would cover the same actions there."""
    out: set[int] = set()
    for memory in others:
        if memory.source_start is None:
            continue
        shared = _shared_depth(path, memory_lineage(links, memory))
        out.update(range(memory.source_start, shared + 1))
    return out


def _shared_depth(path: Lineage, other: Lineage) -> int:
    """The deepest depth the two paths have in common (-1 if none)."""
    inf = 2**62
    best = -1
    for branch, top in path:
        for other_branch, other_top in other:
            if branch == other_branch:
                best = max(
                    best, min(inf if top is None else top, inf if other_top is None else other_top)
                )
    return best


def upto(lineage: Lineage, depth: int) -> Lineage:
    """``lineage`` cut at ``depth``: the path up to and including that depth."""
    return tuple((b, depth if m is None else min(m, depth)) for b, m in lineage)


def memory_lineage(links: dict[int, BranchLink], memory: Memory) -> Lineage:
    """The path a memory was written on, up to the node it is attached to."""
    return upto(lineage_of(links, memory.branch_id), memory.depth)


def block_text(rows: Sequence[PathRow], lead: str | None = None) -> str:
    """The block as the player read it: each action rendered, blank lines between; with
    ``lead`` (the host's character, where several play) in the third person, each action
    by the name of its author's character."""
    return "\n\n".join(read_as(r, lead) for r in rows)


def read_as(row: PathRow, lead: str | None) -> str:
    """One action as the story reads it (``block_text``)."""
    return render(row.type, row.text, (row.author or lead) if lead else None)


def block_lead(previous: PathRow | None, first: PathRow, lead: str | None = None) -> str:
    """The player's action (``previous``, as the player read it) when the block starting
    at ``first`` opens on the reply to it, else "": the extractive writer weighs what came
    of that action."""
    if previous is None or is_player(first.type) or not is_player(previous.type):
        return ""
    return read_as(previous, lead)
