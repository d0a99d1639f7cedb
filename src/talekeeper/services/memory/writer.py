"""Writing memories (memory.md §2): blocks of 6 actions, from 12, settle slack 1.

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
- At most ``MAX_PER_RUN`` memories per run; each is committed on its own, so a
  failure keeps the memories written before it.
- A memory is attached to the node its block ends on and records its source
  range; its authority comes from its text (``authority.classify``), never
  from the model.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from talekeeper.core.lineage import BranchLink, Lineage, lineage_of, on_lineage
from talekeeper.services.memory import extractive
from talekeeper.services.memory.bank import new_memory, set_status, set_text
from talekeeper.services.memory.excerpt import excerpt
from talekeeper.services.memory.prompts import clean_memory, memory_request
from talekeeper.services.memory.work import (
    Material,
    Work,
    ask,
    block_lead,
    block_text,
    material,
    memory_lineage,
    path_of,
    source_block,
    still_there,
    upto,
)
from talekeeper.storage.db import session_scope
from talekeeper.storage.models import Adventure, Memory
from talekeeper.storage.repositories.memory import (
    AUTO,
    COVERING,
    WITHDRAWN,
    MemoryRepository,
    PathRow,
)

BLOCK_ACTIONS = 6  # a scene's worth of play: enough to say something, short enough to be one fact
FIRST_AT = 12  # before this the whole story fits in the history window anyway
SETTLE_SLACK = 1  # the newest action can still be retried: never summarize it
MAX_PER_RUN = 5  # an imported long story fills in over several turns, not in one stall
STALE_PER_RUN = 5  # re-derivations of edited memories per run
STALE_SCAN = 200  # stale rows looked at to pick the current path's first


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
    past it, so it ends on a node of this path alone.
    """
    if len(depths) < FIRST_AT:
        return []
    starts = sorted(covered)
    ends_before = [s for s, _ in starts]

    def is_covered(depth: int) -> bool:
        i = bisect.bisect_right(ends_before, depth)
        return any(s <= depth <= e for s, e in starts[:i])

    usable = depths[: len(depths) - SETTLE_SLACK]
    blocks: list[list[int]] = []
    run: list[int] = []
    for depth in usable:
        if is_covered(depth):
            blocks.extend(_chunks(run, no_end, closed=True))
            run = []
        else:
            run.append(depth)
        if len(blocks) >= limit:
            break
    blocks.extend(_chunks(run, no_end, closed=False))
    return blocks[:limit]


def _chunks(run: list[int], no_end: Collection[int], *, closed: bool) -> list[list[int]]:
    out: list[list[int]] = []
    chunk: list[int] = []
    for depth in run:
        chunk.append(depth)
        if len(chunk) >= BLOCK_ACTIONS and depth not in no_end:
            out.append(chunk)
            chunk = []
    if chunk and closed and chunk[-1] not in no_end:
        out.append(chunk)  # a gap before a covered action: a shorter block
    return out


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


@dataclass
class _Plan:
    material: Material
    blocks: list[list[PathRow]]
    leads: list[str]  # per block: the player's action it opens by answering, or ""


async def memory_pass(work: Work) -> bool:
    """Write the memories the path is due; returns whether any was written."""
    plan = await asyncio.to_thread(_read_plan, work)
    if plan is None:
        return False
    written = False
    for rows, lead in zip(plan.blocks, plan.leads, strict=True):
        text = await write(work, plan.material, block_text(rows), lead)
        written = await asyncio.to_thread(_save, work, rows, text) or written
    return written


async def write(work: Work, facts: Material, block: str, lead: str = "") -> str:
    """One memory of ``block``: by the summary model, or extractive when there is none.
    ``lead``: the player's action just before a block that opens on its answer (the
    extractive writer weighs what came of it; the model reads the block alone)."""
    model = work.models.summary
    if model is None:
        return extractive.write_memory(block, facts.protagonist, facts.salient(), lead)
    counter = work.counter()
    request = memory_request(
        excerpt(block, counter),
        facts.cast(block, counter),
        model=model.model,
        mode=work.models.mode,
    )
    return await ask(work, request, "memory", clean_memory, "memory")


def _read_plan(work: Work) -> _Plan | None:
    with session_scope(work.sessions) as session:
        adventure = session.get(Adventure, work.adventure_id)
        if adventure is None or not adventure.auto_summarize:
            return None
        facts = material(session, adventure)
        repo = MemoryRepository(session)
        # Depths only: a long story's every text is never read to find the next blocks.
        depths = repo.path_depths(facts.lineage)
        others = repo.off_path(adventure.id, facts.lineage)
        blocks = plan_blocks(
            depths,
            repo.coverage(adventure.id, facts.lineage),
            no_end=shared_nodes(facts.lineage, others, facts.links),
        )
        if not blocks:
            return None
        # From the action before the first block: every block's predecessor is in hand.
        before = {d: p for p, d in zip(depths, depths[1:], strict=False)}
        rows = repo.path_rows(facts.lineage, after_depth=before.get(blocks[0][0], 0) - 1)
        by_depth = {r.depth: r for r in rows}
        chosen = [[by_depth[d] for d in block] for block in blocks]
        leads = [block_lead(by_depth.get(before.get(b[0].depth, -1)), b[0]) for b in chosen]
        return _Plan(facts, chosen, leads)


def _save(work: Work, rows: list[PathRow], text: str) -> bool:
    with session_scope(work.sessions) as session:
        if not still_there(session, rows):
            return False  # the story moved during the call: the next run sees the new story
        end = rows[-1]
        adventure = session.get(Adventure, work.adventure_id)
        if adventure is None:
            return False
        links = path_of(session, adventure).links
        repo = MemoryRepository(session)
        lineage = upto(lineage_of(links, end.branch_id), end.depth)
        covered = repo.coverage(adventure.id, lineage)
        first = rows[0].depth
        if any(s <= end.depth and first <= e for s, e in covered):
            return False  # another run covered it first
        if end.depth in shared_nodes(lineage, repo.off_path(adventure.id, lineage), links):
            return False  # another branch's memory covers part of it on a path through here
        new_memory(
            session,
            adventure.id,
            text,
            branch_id=end.branch_id,
            depth=end.depth,
            action_id=end.id,
            source_start=first,
            source_end=end.depth,
            origin=AUTO,
            writer=work.writer,
        )
        return True


async def refresh_stale(work: Work) -> bool:
    """Re-derive memories whose source text was edited; withdraw those whose source is gone."""
    todo = await asyncio.to_thread(_read_stale, work)
    done = False
    for memory_id, (rows, lead), facts in todo:
        if not rows:
            await asyncio.to_thread(_withdraw_one, work, memory_id)
            done = True
            continue
        text = await write(work, facts, block_text(rows), lead)
        done = await asyncio.to_thread(_save_refresh, work, memory_id, rows, text) or done
    return done


def _read_stale(work: Work) -> list[tuple[int, tuple[list[PathRow], str], Material]]:
    with session_scope(work.sessions) as session:
        adventure = session.get(Adventure, work.adventure_id)
        if adventure is None:
            return []
        facts = material(session, adventure)
        stale = MemoryRepository(session).stale_memories(adventure.id, STALE_SCAN)
        # The current path's first: the summary waits for them (see ``summary``).
        stale.sort(key=lambda m: (not on_lineage(facts.lineage, m.branch_id, m.depth), m.id))
        chosen = [m for m in stale if m.origin == AUTO][:STALE_PER_RUN]
        return [(m.id, source_block(session, m), facts) for m in chosen]


def _withdraw_one(work: Work, memory_id: int) -> None:
    with session_scope(work.sessions) as session:
        memory = MemoryRepository(session).memory(memory_id)
        if memory is not None and memory.status in COVERING:
            set_status(session, [memory], WITHDRAWN, work.cache)


def _save_refresh(work: Work, memory_id: int, rows: list[PathRow], text: str) -> bool:
    with session_scope(work.sessions) as session:
        memory = MemoryRepository(session).memory(memory_id)
        if memory is None or not memory.stale or not still_there(session, rows):
            return False
        memory.writer = work.writer
        set_text(session, memory, text, work.cache)
        return True
