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

from sqlalchemy.orm import Session

from talekeeper.core.lineage import BranchLink, Lineage, lineage_of, on_lineage
from talekeeper.services.memory import extractive
from talekeeper.services.memory.bank import drop_keys, new_memory, set_status, set_text
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
    source_rows,
    still_there,
    upto,
)
from talekeeper.storage.db import read_scope, session_scope
from talekeeper.storage.models import Adventure, Memory
from talekeeper.storage.repositories.memory import (
    AUTO,
    COVERING,
    DELETED,
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


@dataclass(frozen=True)
class _Block:
    rows: list[PathRow]
    lead: str  # the player's action the block opens by answering, or ""
    joins: int | None = None  # the memory the block joins (``plan_blocks``), else a new one
    span: tuple[int, int] | None = None  # that memory's source range when planned
    keep_text: bool = False  # the player deleted that memory: its range grows, nothing more


@dataclass
class _Plan:
    material: Material
    blocks: list[_Block]


async def memory_pass(work: Work) -> bool:
    """Write the memories the path is due; returns whether any was written."""
    plan = await asyncio.to_thread(_read_plan, work)
    if plan is None:
        return False
    written = False
    for block in plan.blocks:
        text = ""
        if not block.keep_text:
            text = await write(work, plan.material, block_text(block.rows), block.lead)
        written = await asyncio.to_thread(_save, work, block, text) or written
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
    with read_scope(work.sessions) as session:
        adventure = session.get(Adventure, work.adventure_id)
        if adventure is None or not adventure.auto_summarize:
            return None
        facts = material(session, adventure)
        repo = MemoryRepository(session)
        # Depths only: a long story's every text is never read to find the next blocks.
        depths = repo.path_depths(facts.lineage)
        others = repo.off_path(adventure.id, facts.lineage)
        covered = repo.coverage(adventure.id, facts.lineage)
        blocks = plan_blocks(
            depths, covered, no_end=shared_nodes(facts.lineage, others, facts.links)
        )
        if not blocks:
            return None
        # From the action before the first block: every block's predecessor is in hand.
        before = {d: p for p, d in zip(depths, depths[1:], strict=False)}
        rows = repo.path_rows(facts.lineage, after_depth=before.get(blocks[0][0], 0) - 1)
        by_depth = {r.depth: r for r in rows}
        chosen = []
        for block in blocks:
            picked = [by_depth[d] for d in block]
            lead = block_lead(by_depth.get(before.get(block[0], -1)), picked[0])
            span = joined_span(block, covered)
            if span is None:
                chosen.append(_Block(picked, lead))
            elif (joined := _joined(repo, facts, span)) is not None:
                chosen.append(_Block(picked, lead, joined.id, span, joined.status == DELETED))
        return _Plan(facts, chosen) if chosen else None


def _joined(repo: MemoryRepository, facts: Material, span: tuple[int, int]) -> Memory | None:
    """The path's memory whose source range is ``span``: the one a block joins."""
    found = repo.memories(facts.adventure_id, facts.lineage, COVERING, origin=AUTO, within=span)
    return next((m for m in found if (m.source_start, m.source_end) == span), None)


def _save(work: Work, block: _Block, text: str) -> bool:
    with session_scope(work.sessions) as session:
        rows = block.rows
        if not still_there(session, rows):
            return False  # the story moved during the call: the next run sees the new story
        if not _still_free(session, work.adventure_id, block):
            return False
        first, end = rows[0], rows[-1]
        if block.joins is None:
            new_memory(
                session,
                work.adventure_id,
                text,
                branch_id=end.branch_id,
                depth=end.depth,
                action_id=end.id,
                source_start=first.depth,
                source_end=end.depth,
                origin=AUTO,
                writer=work.writer,
            )
            return True
        memory = MemoryRepository(session).memory(block.joins)
        if memory is None or memory.status not in COVERING or memory.action_id != end.id:
            return False
        if (memory.source_start, memory.source_end) != block.span:
            return False  # rewritten or joined since the plan
        memory.source_start = first.depth
        if not block.keep_text:
            memory.writer = work.writer
            set_text(session, memory, text, work.cache)
        else:
            drop_keys(session, memory, work.cache)  # its source grew: read its evidence again
        return True


def _still_free(session: Session, adventure_id: int, block: _Block) -> bool:
    """Whether ``block`` is still uncovered but for the memory it joins, and still ends
    on a node no other branch's memory covers a path through from before it."""
    adventure = session.get(Adventure, adventure_id)
    if adventure is None:
        return False
    end = block.rows[-1]
    links = path_of(session, adventure).links
    repo = MemoryRepository(session)
    lineage = upto(lineage_of(links, end.branch_id), end.depth)
    first = block.rows[0].depth
    covered = [c for c in repo.coverage(adventure_id, lineage) if c != block.span]
    if any(s <= end.depth and first <= e for s, e in covered):
        return False  # another run covered it first
    # another branch's memory covers part of it on a path through here
    return end.depth not in shared_nodes(lineage, repo.off_path(adventure_id, lineage), links)


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
    with read_scope(work.sessions) as session:
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
        if [r.id for r in source_rows(session, memory)] != [r.id for r in rows]:
            return False  # a gap joined it during the call: the next run rewrites it whole
        memory.writer = work.writer
        set_text(session, memory, text, work.cache)
        return True
