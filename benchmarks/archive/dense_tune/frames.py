"""A dense probe's ranking inputs, kept so that other ranking rules can be compared offline.

A ``Frame`` is what the product ranked at one probe: the bank (memories and evidence
keys as arrays), the path's mask, the query's two vectors and terms, the texts of the
candidate memories and of their keys, and the statements the probe needs. ``replay``
ranks a frame with a given rule and builds the Memories section exactly as a turn does
(``Retrieval.fit_evidence`` at the same budget), so a rule's *fact in prompt* here is
the benchmark's. Invariant: ``replay`` with the product's own rule gives the section the
dry run gave (``tune`` reports any frame where it does not).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from benchmarks.recall.dense.generator import Statement
from benchmarks.recall.dense.measure import fact_in
from benchmarks.recall.play import Player
from sqlalchemy import select

from talekeeper.core.tokens import TokenCounter
from talekeeper.services.prompt.inputs import fills, memory_budget
from talekeeper.services.memory.bank import Detail
from talekeeper.services.memory.base import Retrieval
from talekeeper.services.memory.ranking import Bank, Ranking, lineage_mask, rank
from talekeeper.services.memory.retrieval import used_memory
from talekeeper.services.memory.terms import terms
from talekeeper.services.story.tree import Story
from talekeeper.storage.db import session_scope
from talekeeper.storage.models import Memory
from talekeeper.storage.repositories.memory_keys import KeyRepository


@dataclass
class Frame:
    seed: int
    adventure: str
    kind: str
    question: str
    statements: list[Statement]
    bank: Bank
    mask: npt.NDArray[np.bool_]
    input_text: str
    input_vec: npt.NDArray[np.float32] | None
    context_vec: npt.NDArray[np.float32] | None
    top_k: int
    details: dict[int, Detail] = field(default_factory=dict)
    passages: dict[int, tuple[str, int]] = field(default_factory=dict)  # key id -> (text, depth)
    product_fact: bool = False  # the dry run's reading at ``top_k``
    # The planted-fact set's probes: the memories whose source covers the planted action
    # (recall there is a memory, not a sentence, in the first ``top_k``).
    hits: frozenset[int] = frozenset()
    planted: bool = False
    # The dry run's prompt budget (``ContextInputs.budget``): the Memories section's budget
    # follows from it as in a turn. Frames pickled before it was kept read None: the
    # recall benchmarks' 2,048-token context, 1,800.
    prompt_budget: int | None = None


Rule = Callable[[Frame], Ranking]
OLD_FRAME_PROMPT_BUDGET = 1800  # 2,048 tokens of context less the reply and the template


def product_rule(frame: Frame) -> Ranking:
    return rank(
        frame.bank,
        frame.mask,
        frame.input_vec,
        frame.context_vec,
        terms(frame.input_text),
        frame.top_k,
    )


def _read(p: Player, adventure_id: int) -> tuple[Bank, Any, dict[int, Detail], dict[int, Any]]:
    assert p.models.embedding is not None
    with session_scope(p.rt.sessions) as session:
        lineage = Story.load(session, adventure_id, p.uid, p.rt.memory).lineage()
        bank = p.memory.cache.bank(session, adventure_id, p.models.embedding.model)
        mask = lineage_mask(bank, lineage)
        ids = [int(i) for i in bank.ids[mask]]
        details = {
            m.id: Detail(m.text, m.authority, m.branch_id, m.depth, m.source_start, m.source_end)
            for m in session.scalars(select(Memory).where(Memory.id.in_(ids)))
        }
        key_ids = [int(k) for k in bank.keys.ids] if bank.keys is not None else []
        passages = KeyRepository(session).texts(key_ids)
        return bank, mask, details, passages


async def capture(
    p: Player,
    adventure_id: int,
    snapshot: dict[str, Any],
    info: tuple[int, str, str, str],
) -> Frame:
    """The frame of the dry run ``snapshot`` (taken just before, nothing played since);
    ``info``: the set's seed, the adventure, the probe's kind and question."""
    bank, mask, details, passages = await asyncio.to_thread(_read, p, adventure_id)
    query = snapshot["memories"]["query"]
    texts = [query["input"], query["context"]]
    vectors: list[npt.NDArray[np.float32] | None] = [None, None]
    wanted = [i for i, t in enumerate(texts) if t.strip()]
    for i, v in zip(wanted, await p.embed([texts[i] for i in wanted]), strict=True):
        vectors[i] = v
    seed, adventure, kind, question = info
    return Frame(
        seed=seed,
        adventure=adventure,
        kind=kind,
        question=question,
        statements=[],
        bank=bank,
        mask=mask,
        input_text=query["input"],
        input_vec=vectors[0],
        context_vec=vectors[1],
        top_k=int(query["top_k"]),
        details=details,
        passages=passages,
        prompt_budget=int(snapshot["budget"]["available"]),
    )


def section(frame: Frame, ranking: Ranking, counter: TokenCounter) -> Retrieval:
    """The Memories section a turn would build from ``ranking`` (evidence fitted)."""
    used = [used_memory(s, frame.details[s.id], frame.passages) for s in ranking.chosen]
    retrieval = Retrieval(used=used, considered=ranking.considered)
    slots = max(frame.top_k, len(used))
    prompt = frame.prompt_budget or OLD_FRAME_PROMPT_BUDGET
    budget = memory_budget(prompt, slots)
    retrieval.fit_evidence(counter, budget, fill=fills(budget, slots))
    return retrieval


def replay(frame: Frame, rule: Rule, counter: TokenCounter) -> tuple[bool, int]:
    """(fact in prompt, the section's tokens) under ``rule``."""
    text = section(frame, rule(frame), counter).section_text()
    return fact_in(text, frame.statements), counter.count(text)
