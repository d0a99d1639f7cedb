"""The memory pass: writes the memories the path is due (the blocks ``writer`` chooses).

Invariants (the rules themselves are ``writer``'s):

- The read plans at most ``writer.MAX_PER_RUN`` blocks from the depths of the path
  alone, then reads the text of those blocks only (a long story's every text is
  never read to find the next blocks).
- Each block is written (``Work.memory_text``) and saved on its own. The save
  re-checks that every action of the block is still active with the text that was
  read, that nothing covered the block meanwhile, and that it still ends on a node no
  other branch's memory covers a path through; a block that joins a memory also
  needs that memory unchanged (its node, its status, its range). Otherwise nothing
  is written and the next run plans again.
- A memory the player deleted takes a joining gap into its range without a new text
  (no model call); its keys go, so the next embedding pass reads them again.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from talekeeper.core.lineage import lineage_of
from talekeeper.services.memory.bank import drop_keys, new_memory, set_text
from talekeeper.services.memory.passes.work import Work
from talekeeper.services.memory.source import Material, material, path_of, still_there
from talekeeper.services.memory.writer import (
    block_lead,
    block_text,
    joined_span,
    plan_blocks,
    shared_nodes,
    upto,
)
from talekeeper.storage.models import Adventure, Memory
from talekeeper.storage.repositories.memory import COVERING, MemoryRepository, PathRow
from talekeeper.storage.vocabulary import MemoryOrigin, MemoryStatus


@dataclass(frozen=True)
class Block:
    facts: Material
    rows: list[PathRow]
    lead: str  # the player's action the block opens by answering, or ""
    joins: int | None = None  # the memory the block joins (``plan_blocks``), else a new one
    span: tuple[int, int] | None = None  # that memory's source range when planned
    keep_text: bool = False  # the player deleted that memory: its range grows, nothing more


class NewBlocks:
    name = "memory blocks"

    def __init__(self, work: Work) -> None:
        self.work = work

    def read(self, session: Session, adventure: Adventure) -> list[Block]:
        if not adventure.auto_summarize:
            return []
        facts = material(session, adventure)
        repo = MemoryRepository(session)
        depths, covered, blocks = _plan(repo, facts)
        if not blocks:
            return []
        # From the action before the first block: every block's predecessor is in hand.
        before = {d: p for p, d in zip(depths, depths[1:], strict=False)}
        rows = repo.path_rows(facts.lineage, after_depth=before.get(blocks[0][0], 0) - 1)
        by_depth = {r.depth: r for r in rows}
        chosen = []
        for block in blocks:
            picked = [by_depth[d] for d in block]
            lead = block_lead(by_depth.get(before.get(block[0], -1)), picked[0], facts.lead)
            span = joined_span(block, covered)
            if span is None:
                chosen.append(Block(facts, picked, lead))
            elif (joined := _joined(repo, facts, span)) is not None:
                keep = joined.status == MemoryStatus.DELETED
                chosen.append(Block(facts, picked, lead, joined.id, span, keep))
        return chosen

    async def generate(self, block: Block) -> str:
        if block.keep_text:
            return ""
        return await self.work.memory_text(
            block.facts, block_text(block.rows, block.facts.lead), block.lead
        )

    def save(self, session: Session, adventure: Adventure, block: Block, text: str) -> bool:
        rows = block.rows
        if not still_there(session, rows) or not _still_free(session, adventure, block):
            return False  # the story moved during the call: the next run sees the new story
        first, end = rows[0], rows[-1]
        work = self.work
        if block.joins is None:
            new_memory(
                session,
                adventure.id,
                text,
                branch_id=end.branch_id,
                depth=end.depth,
                action_id=end.id,
                source_start=first.depth,
                source_end=end.depth,
                origin=MemoryOrigin.AUTO,
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


def _plan(
    repo: MemoryRepository, facts: Material
) -> tuple[list[int], list[tuple[int, int]], list[list[int]]]:
    """The path's depths, its coverage, and the blocks due (at most ``MAX_PER_RUN``)."""
    # Depths only: a long story's every text is never read to find the next blocks.
    depths = repo.path_depths(facts.lineage)
    others = repo.off_path(facts.adventure_id, facts.lineage)
    covered = repo.coverage(facts.adventure_id, facts.lineage)
    no_end = shared_nodes(facts.lineage, others, facts.links)
    return depths, covered, plan_blocks(depths, covered, no_end=no_end)


def due_blocks(session: Session, adventure: Adventure) -> list[list[int]]:
    """The blocks of the current path a memory pass would write now (their depths): none
    once the background work has caught up (what a check of lost memories asks)."""
    if not adventure.auto_summarize:
        return []
    return _plan(MemoryRepository(session), material(session, adventure))[2]


def _joined(repo: MemoryRepository, facts: Material, span: tuple[int, int]) -> Memory | None:
    """The path's memory whose source range is ``span``: the one a block joins."""
    found = repo.memories(
        facts.adventure_id, facts.lineage, COVERING, origin=MemoryOrigin.AUTO, within=span
    )
    return next((m for m in found if (m.source_start, m.source_end) == span), None)


def _still_free(session: Session, adventure: Adventure, block: Block) -> bool:
    """Whether ``block`` is still uncovered but for the memory it joins, and still ends
    on a node no other branch's memory covers a path through from before it."""
    end = block.rows[-1]
    links = path_of(session, adventure).links
    repo = MemoryRepository(session)
    lineage = upto(lineage_of(links, end.branch_id), end.depth)
    first = block.rows[0].depth
    covered = [c for c in repo.coverage(adventure.id, lineage) if c != block.span]
    if any(s <= end.depth and first <= e for s, e in covered):
        return False  # another run covered it first
    # another branch's memory covers part of it on a path through here
    return end.depth not in shared_nodes(lineage, repo.off_path(adventure.id, lineage), links)
