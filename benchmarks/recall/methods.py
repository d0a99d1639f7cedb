"""The retrieval methods compared, each as an ordered list of what it would retrieve.

Every method sees the same probe and the same story; each returns a ``Ranked``
list (best first, ties by the item's key) of everything it would ever retrieve,
so recall@k and MRR are read off one list, and ``inject`` says how many of the
first items the design puts into the prompt.

- ``talekeeper``: the product's ranking, ``services.memory.ranking.rank`` with
  the product's query (input, context, input terms) over the product's bank and
  lineage mask, with ``top_k`` as large as the bank, so the order is the full
  ranking; its first ``memory_top_k`` items are exactly what a turn injects
  (the run checks this against the dry run's Insights on every probe).
- ``cosine-only``: the same with no input terms (the lexical term is 0).
- ``narration-only``: the spec's superseded query: the newest narration alone,
  embedded, cosine over the same memories, no lexical term.
- ``bm25-memories``: BM25 of the player's input over the same memories' texts,
  with the product's tokenizer (``terms``).
- ``sillytavern``: raw message vectors: each action of the story a chunk; the
  query is the last two messages (the newest narration and the probe); cosine,
  score threshold 0.25, top 3.
- ``textdb``: KoboldAI-TextDB-style lexical chunks (Lite's defaults): the story
  text cut into 800-character chunks (on a word boundary); the query is the last
  300 characters of the context (the probe and the end of the narration before
  it); BM25 (Lite's own word-match score is not reproduced), top 3.

The two chunk baselines only search text that has left the history window
(what is still in the window needs no retrieval), which can only help them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from talekeeper.services.memory.ranking import WEIGHTS, Bank, Weights, rank
from talekeeper.services.memory.terms import terms

BM25_K1 = 1.2  # the usual defaults (Robertson/Lucene)
BM25_B = 0.75
ST_THRESHOLD = 0.25  # SillyTavern Vector Storage's default score threshold
ST_TOP_K = 3  # its default "retrieve chunks"
ST_QUERY_MESSAGES = 2  # its default "query messages"
TEXTDB_CHUNK = 800  # characters per chunk (KoboldAI Lite's documentdb_chunksize)
TEXTDB_TOP_K = 3  # its documentdb_numresults
TEXTDB_QUERY_CHARS = 300  # its documentdb_searchrange: the end of the context is the query
WORD_BOUNDARY_SLACK = 100  # a chunk may end up to this many characters early, on a space

# Other weights for the product's score (memory.md §5: keep the reference's until the
# benchmark shows a rule that does better across its sets): the input's share of the
# semantic part, and the lexical weight.
INPUT_SHARES = (0.6, 0.7, 0.8, 1.0)
LEXICAL_WEIGHTS = (0.15, 0.3, 0.5, 0.75, 1.0)
# The evidence keys' weights at the memory weights in use: the passage ranking's weight in
# the fused order (0: no keys, the memories ranked by their own text alone), and the
# context's share in a passage's semantic part; then the fusion's constant, and the hop off.
SOURCE_WEIGHTS = (0.0, 0.5, 1.0)
FUSION_KS = (0.0, 3.0, 20.0)
# memory.md §5's reference weights, the product's before (no evidence keys then)
REFERENCE = WEIGHTS._replace(input=0.6, context=0.4, lexical=0.15, source=0.0)
KEY_CONTEXT_SHARES = (0.0, 0.4)
WEIGHT_GRID = tuple(
    dict.fromkeys(
        [
            REFERENCE,
            *(
                WEIGHTS._replace(input=share, context=round(1.0 - share, 2), lexical=lexical)
                for share in INPUT_SHARES
                for lexical in LEXICAL_WEIGHTS
            ),
            *(
                WEIGHTS._replace(source=source, key_context=key_context)
                for source in SOURCE_WEIGHTS
                for key_context in KEY_CONTEXT_SHARES
                if source or not key_context
            ),
            *(WEIGHTS._replace(fusion_k=k) for k in FUSION_KS),
            WEIGHTS._replace(hop=False),
        ]
    )
)


def weights_name(w: Weights) -> str:
    name = f"{w.input:g}/{w.context:g} + {w.lexical:g}"
    if w.source == 0:
        return name + ", no keys"
    if (w.source, w.key_context) != (WEIGHTS.source, WEIGHTS.key_context):
        name += f", keys {w.source:g} (context {w.key_context:g})"
    if w.fusion_k != WEIGHTS.fusion_k:
        name += f", fusion k {w.fusion_k:g}"
    if w.hop != WEIGHTS.hop:
        name += ", no hop" if not w.hop else ", hop"
    return name


MEMORY_METHODS = ("talekeeper", "cosine-only", "narration-only", "bm25-memories")
CHUNK_METHODS = ("sillytavern", "textdb")
METHODS = (*MEMORY_METHODS, *CHUNK_METHODS)


@dataclass(frozen=True)
class Ranked:
    """Item positions (into the method's item list), best first, with their scores."""

    order: list[int]
    scores: list[float]
    inject: int  # how many of the first items the design puts into the prompt


# -- lexical ---------------------------------------------------------------------------------


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


def best_first(
    scores: Sequence[float], keys: Sequence[int], *, above: float | None = None
) -> list[int]:
    """Positions by score descending, ties by key ascending; only scores > ``above``."""
    keep = [i for i, s in enumerate(scores) if above is None or s > above]
    return sorted(keep, key=lambda i: (-scores[i], keys[i]))


def chunk_spans(text: str, size: int = TEXTDB_CHUNK) -> list[tuple[int, int]]:
    """Consecutive spans covering ``text``, each at most ``size`` characters, cut at the
    last space within ``WORD_BOUNDARY_SLACK`` characters of the limit when there is one."""
    spans: list[tuple[int, int]] = []
    start = 0
    while start < len(text):
        end = min(start + size, len(text))
        if end < len(text):
            space = text.rfind(" ", max(start + 1, end - WORD_BOUNDARY_SLACK), end + 1)
            if space > start:
                end = space
        spans.append((start, end))
        start = end
    return spans


def overlap(a: tuple[int, int], b: tuple[int, int]) -> int:
    return max(0, min(a[1], b[1]) - max(a[0], b[0]))


# -- the memory methods ------------------------------------------------------------------------

FloatVector = npt.NDArray[np.float32]


@dataclass(frozen=True)
class MemoryQuery:
    """One probe's query as the product builds it, and the bank it ranks."""

    bank: Bank
    mask: npt.NDArray[np.bool_]
    input_vec: FloatVector | None
    context_vec: FloatVector | None
    narration_vec: FloatVector | None
    input_terms: list[str]
    top_k: int  # the product's memory_top_k


def _from_ranking(
    q: MemoryQuery, ids: list[int], chosen: Sequence[tuple[int, float]], inject: int
) -> Ranked:
    position = {memory_id: i for i, memory_id in enumerate(ids)}
    return Ranked([position[m] for m, _ in chosen], [s for _, s in chosen], inject)


def memory_rankings(q: MemoryQuery, ids: list[int], texts: list[str]) -> dict[str, Ranked]:
    """The four memory methods over the candidates ``ids`` (the bank's rows under the mask,
    in bank order) whose texts are ``texts``."""
    size = q.bank.size
    full = rank(q.bank, q.mask, q.input_vec, q.context_vec, q.input_terms, size)
    cosine = rank(q.bank, q.mask, q.input_vec, q.context_vec, [], size)
    out = {
        "talekeeper": _from_ranking(q, ids, [(s.id, s.final) for s in full.chosen], q.top_k),
        "cosine-only": _from_ranking(q, ids, [(s.id, s.final) for s in cosine.chosen], q.top_k),
    }
    narration = rank(q.bank, q.mask, None, q.narration_vec, [], size)
    out["narration-only"] = _from_ranking(
        q, ids, [(s.id, s.final) for s in narration.chosen], q.top_k
    )
    scores = bm25(q.input_terms, [terms(t) for t in texts])
    order = best_first(scores, ids, above=0.0)
    out["bm25-memories"] = Ranked(order, [scores[i] for i in order], q.top_k)
    return out


def weight_rankings(q: MemoryQuery, ids: list[int]) -> dict[str, Ranked]:
    """The product's ranking under each weights of ``WEIGHT_GRID`` (its own included)."""
    assert WEIGHTS in WEIGHT_GRID and REFERENCE in WEIGHT_GRID
    out: dict[str, Ranked] = {}
    for w in WEIGHT_GRID:
        full = rank(q.bank, q.mask, q.input_vec, q.context_vec, q.input_terms, q.bank.size, w)
        out[weights_name(w)] = _from_ranking(
            q, ids, [(s.id, s.final) for s in full.chosen], q.top_k
        )
    return out


# -- the chunk baselines ---------------------------------------------------------------------


def cosine_ranking(
    query: FloatVector, vectors: npt.NDArray[np.float32], keys: Sequence[int]
) -> Ranked:
    """SillyTavern-style: cosine of each message vector with the query, above the threshold."""
    if len(keys) == 0:
        return Ranked([], [], ST_TOP_K)
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    q = query / max(float(np.linalg.norm(query)), 1e-12)
    scores = (unit @ q).astype(np.float64).tolist()
    order = best_first(scores, keys, above=ST_THRESHOLD)
    return Ranked(order, [scores[i] for i in order], ST_TOP_K)


def tail(text: str, chars: int = TEXTDB_QUERY_CHARS) -> str:
    """The last ``chars`` characters of ``text``, from a word boundary when one is near."""
    if len(text) <= chars:
        return text
    cut = text[-chars:]
    space = cut.find(" ")
    return cut[space + 1 :] if 0 <= space < chars // 4 else cut


def textdb_ranking(query_terms: list[str], chunk_terms: list[list[str]]) -> Ranked:
    """KoboldAI-TextDB-style: BM25 of the query over the chunks, top 3 with a score."""
    scores = bm25(query_terms, chunk_terms)
    order = best_first(scores, list(range(len(chunk_terms))), above=0.0)
    return Ranked(order, [scores[i] for i in order], TEXTDB_TOP_K)
