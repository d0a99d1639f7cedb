"""Raw-text baselines: the story outside the history, cut into blocks, ranked for the probe.

At a probe, every action the context's history does not hold is cut into
consecutive blocks of ``size`` actions on a fixed grid from the opening
(depths 0..size-1, size..2·size-1, ...); only whole blocks count, so a block's
text never changes as the story grows. Each block is the actions as the
player reads them (``rendering.render``), joined by blank lines. The query is
the probe's own text. Three rankers:

- **cosine**: the embedder's cosine between the query and each block;
- **BM25**: ``bm25`` (k1 1.2, b 0.75) over the product's own terms (``terms``);
- **hybrid**: cosine + ``HYBRID_LEXICAL`` x BM25 / the best BM25 score of the
  probe (0 when no block shares a term): the lexical part on the same 0..1
  scale as the product's own lexical share, weighted as the product weighs it.

Ties go to the earlier block. A method **hits** at k when, for every statement
the probe needs, an action of its first k blocks holds all the statement's
answer words (an action at a time: words gathered across a block's actions are
no statement); its **tokens** at k are the first k blocks' tokens (the narrator's
counter, as the product counts its sections).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from benchmarks.recall.dense.generator import Statement
from benchmarks.recall.dense.measure import words

from talekeeper.services.common.rendering import render
from talekeeper.services.memory.terms import terms

HYBRID_LEXICAL = 0.75  # the product's LEXICAL_WEIGHT when this benchmark was written
BLOCK_SIZES = (6, 3)
RANKERS = ("cosine", "bm25", "hybrid")
BM25_K1 = 1.2  # the usual defaults (Robertson/Lucene)
BM25_B = 0.75


@dataclass(frozen=True)
class Block:
    start: int  # depth of its first action
    end: int  # depth of its last action
    text: str


def blocks(actions: Sequence[tuple[int, str, str]], size: int, limit: int) -> list[Block]:
    """The whole blocks of ``size`` actions among ``actions`` (depth, type, text) whose
    last depth is at most ``limit``."""
    by_depth = {d: (t, x) for d, t, x in actions}
    out = []
    for start in range(0, limit + 1, size):
        end = start + size - 1
        if end > limit:
            break
        parts = [render(*by_depth[d]) for d in range(start, end + 1) if d in by_depth]
        out.append(Block(start, end, "\n\n".join(parts)))
    return out


def cosine(query: npt.NDArray[np.float32], vectors: npt.NDArray[np.float32]) -> list[float]:
    if len(vectors) == 0:
        return []
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    q = query / max(float(np.linalg.norm(query)), 1e-12)
    return [float(x) for x in unit @ q]


def bm25(query: Sequence[str], docs: Sequence[Sequence[str]]) -> list[float]:
    """BM25 score of each doc (a list of terms, repeats kept) for the query terms.

    idf = ln(1 + (N − df + 0.5)/(df + 0.5)) (never negative); a query term counts once."""
    n = len(docs)
    if n == 0:
        return []
    lengths = [len(d) for d in docs]
    average = sum(lengths) / n or 1.0
    counts = [Counter(d) for d in docs]
    scores = [0.0] * n
    for term in dict.fromkeys(query):
        df = sum(1 for c in counts if term in c)
        if df == 0:
            continue
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        for i, c in enumerate(counts):
            tf = c.get(term, 0)
            if tf:
                norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths[i] / average)
                scores[i] += idf * tf * (BM25_K1 + 1) / (tf + norm)
    return scores


def lexical(query: str, texts: Sequence[str]) -> list[float]:
    return bm25(terms(query), [terms(t) for t in texts])


def hybrid(
    cos: Sequence[float], lex: Sequence[float], weight: float = HYBRID_LEXICAL
) -> list[float]:
    top = max(lex, default=0.0)
    return [c + (weight * x / top if top > 0 else 0.0) for c, x in zip(cos, lex, strict=True)]


def order(scores: Sequence[float]) -> list[int]:
    """Positions best first, ties by position."""
    return sorted(range(len(scores)), key=lambda i: -scores[i])


def hit(
    ranked: Sequence[int], texts: Sequence[str], statements: Sequence[Statement], k: int
) -> bool:
    """Whether, for every statement, an action of the first ``k`` blocks holds it."""
    top = [words(line) for i in ranked[:k] for line in texts[i].splitlines()]
    return bool(statements) and all(any(set(s.answer) <= w for w in top) for s in statements)


def tokens(ranked: Sequence[int], counts: Sequence[int], k: int) -> int:
    return sum(counts[i] for i in ranked[:k])
