"""The recent history within the room the fixed sections leave it.

Invariants:

- ``classic``: the newest actions that fit, the oldest dropped first. An action that
  does not fit whole is cut at a sentence boundary (its opening sentences dropped); only
  an action that is alone larger than the room left is cut mid-sentence (its tail kept).
- ``cache``: the history keeps the previous prompt's first action while it fits; when it
  overflows, it drops the oldest actions until a ``CHUNK_FRACTION`` of its room is free,
  so several turns only append again, and it never starts with a part of an action
  (unless a single action alone is larger than all the room).
- What is kept never costs more than the room (``Cost`` charges every entry).
- The history's reserve (``reserve``): the room kept for the newest actions before any
  optional section: what its newest ``HISTORY_RESERVE_ACTIONS`` cost, up to a share of the
  budget. Where those actions cost more than the share (long narrations, a small context)
  it is the share, the same every turn, so the sections it trims are trimmed the same way
  from turn to turn (``cache`` keeps their text).
"""

from __future__ import annotations

import re

from talekeeper.core.tokens import TokenCounter
from talekeeper.services.prompt.sections import Cost, HistoryEntry, depth

# When the history overflows, it drops the oldest actions until room // CHUNK_FRACTION is
# free: the next turns only append until that is used up. A judgement, not tuned: a larger
# fraction would free less history per drop and drop oftener, a smaller keep less history.
CHUNK_FRACTION = 3
# The room kept for the recent history before the optional sections: its newest six actions
# (three exchanges: the scene the narrator answers), up to a third of the budget, which holds
# about four actions of 120-200-token narrations at 2,048 tokens of context
# (docs/context.md, "The history's reserve").
HISTORY_RESERVE_ACTIONS = 6
HISTORY_RESERVE_SHARE = 1 / 3
_SENTENCE_END = re.compile(r"(?<=[.!?…\"”'])\s+")


def reserve(history: list[HistoryEntry], budget: int, cost: Cost) -> int:
    """The room kept for the history ahead of the optional sections: what its newest
    ``HISTORY_RESERVE_ACTIONS`` actions cost, up to ``budget``'s ``HISTORY_RESERVE_SHARE``."""
    share = max(int(budget * HISTORY_RESERVE_SHARE), 0)
    return min(sum(cost(e.text) for e in history[-HISTORY_RESERVE_ACTIONS:]), share)


def cut_to_sentences(text: str, limit: int, counter: TokenCounter) -> str:
    """The longest run of whole closing sentences of ``text`` within ``limit`` tokens."""
    sentences = _SENTENCE_END.split(text.strip())
    kept: list[str] = []
    space = counter.count(" ")
    used = 0
    for sentence in reversed(sentences):
        # Sentences are counted one by one (cached, no quadratic recount); the joins can
        # only merge into fewer tokens, so the sum never under-counts.
        cost = counter.count(sentence) + (space if kept else 0)
        if used + cost > limit:
            break
        kept.insert(0, sentence)
        used += cost
    return " ".join(kept)


def filled_history(
    history: list[HistoryEntry], room: int, cost: Cost
) -> tuple[list[HistoryEntry], int | None]:
    """``classic``: the newest actions that fit, the oldest of them cut at a sentence; and
    the id of the action cut, if one was."""
    kept: list[HistoryEntry] = []
    for entry in reversed(history):
        entry_cost = cost(entry.text)
        if entry_cost <= room:
            kept.insert(0, entry)
            room -= entry_cost
            continue
        limit = room - cost.overhead
        text = cut_to_sentences(entry.text, limit, cost.counter) if limit > 0 else ""
        if not text and not kept and limit > 0:
            text = cost.counter.tail(entry.text, limit)  # a single action larger than all the room
        if text:
            kept.insert(0, HistoryEntry(entry.id, entry.role, text, entry.depth))
            return kept, entry.id
        break
    return kept, None


def chunked_history(
    history: list[HistoryEntry], room: int, start_depth: int | None, cost: Cost
) -> tuple[list[HistoryEntry], int | None]:
    """``cache``: whole actions from ``start_depth`` (the previous prompt's first one) while
    they fit; else all of them if they fit; else the newest that leave
    ``room // CHUNK_FRACTION`` free."""
    suffix = [0] * (len(history) + 1)
    for index in range(len(history) - 1, -1, -1):
        suffix[index] = suffix[index + 1] + cost(history[index].text)
    if start_depth is not None:
        start = next(
            (i for i, e in enumerate(history) if depth(e) >= start_depth),
            len(history),
        )
        if start < len(history) and suffix[start] <= room:
            return history[start:], None
    if suffix[0] <= room:
        return list(history), None
    target = room - room // CHUNK_FRACTION
    start = next((i for i in range(len(history)) if suffix[i] <= target), len(history))
    if start == len(history):  # not even the newest action leaves the chunk free
        start = next((i for i in range(len(history)) if suffix[i] <= room), len(history))
    if start < len(history):
        return history[start:], None
    return filled_history(history[-1:], room, cost)  # one action larger than all
