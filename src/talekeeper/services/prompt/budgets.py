"""The optional sections' budgets: each a share of the prompt, with a floor and a ceiling
(docs/context.md, "Section budgets").

Invariants:

- A section's budget is its share of the prompt's budget (the context less the reply and
  the template), never below its floor nor above its ceiling (``Share.tokens``). The
  Memories, the Knowledge and the Current state reach their ceilings by 4,096 tokens of
  context, and those are the fixed budgets they had before (so the figures measured at
  4,096 stand); a smaller context gives less, down to the floor, so the optional sections
  shrink with the context instead of taking the same room at any size. The Story Cards,
  which had no budget of their own, take a fifth of the prompt up to their ceiling.
- A budget is a limit, never an allocation: a section takes what it needs up to it, and
  what it leaves goes to the recent history.
- A section over its budget gives up whole parts, the lowest ranked first (a memory, a
  card, a passage, a line of the Current state), before anything is cut mid-text; the
  report and Insights say what each budget left out.
- The whole context's own overflow comes after: the history's reserve is kept ahead of
  every optional section (``history.reserve``), whatever their budgets allow.
"""

from __future__ import annotations

from dataclasses import dataclass

from talekeeper.core.tokens import TokenCounter
from talekeeper.services.cards.rules import FiredCard, cards_section
from talekeeper.services.library.search import SLOT_OVERHEAD
from talekeeper.services.library.store import PASSAGE_TOKENS


@dataclass(frozen=True)
class Share:
    """A budget: ``share`` of the prompt's budget, within ``floor`` and ``ceiling`` tokens."""

    share: float
    floor: int
    ceiling: int

    def tokens(self, prompt_budget: int) -> int:
        return max(self.floor, min(self.ceiling, int(prompt_budget * self.share)))


# The Memories, per memory retrieved: a memory is at most 50 words (about 65 tokens of
# English with names) plus its mark, and about one sentence of its source (a long literary
# sentence is 40-60 tokens). Passages of the story carried with the memories fill what the
# memories leave of it; the memories themselves always go in. At 72 (the memories and little
# else) real writing's answers reached the prompt for 0.26 of held-out questions, at 118 for
# 0.50 (docs/benchmarks.md, "Recall on real writing"); 118, so that the section with its
# heading stays within 600 tokens at the default five. A quarter of the prompt: at 2,048
# tokens a third (600) left the dense recall benchmark's history 11 actions instead of 21; a
# quarter leaves it about 450. The full 118 applies from about 2,600 tokens of context.
MEMORY_SHARE = 1 / 4
MEMORY_SLOT_FLOOR = 72
MEMORY_SLOT_TOKENS = 118
# The Knowledge, per passage asked for (``knowledge_top_k``): a passage is at most
# PASSAGE_TOKENS, plus the line naming its source and place; never less than one passage.
KNOWLEDGE_SLOT_TOKENS = PASSAGE_TOKENS + SLOT_OVERHEAD
KNOWLEDGE_SHARE = 1 / 5
# The Story Cards: a fifth of the prompt (SillyTavern's World Info takes a share of the
# context for the same reason), at least one long card, at most 1,000 tokens (about twenty
# cards of two sentences: a scene rarely fires more).
STORY_CARDS = Share(1 / 5, 96, 1000)
# The Current state: a handful of short lines (where, who, what, when), 120 tokens at 4,096.
CURRENT_STATE = Share(1 / 20, 48, 120)


def memories(slots: int) -> Share:
    """The Memories' budget for ``slots`` memories (retrieved or asked for)."""
    return Share(MEMORY_SHARE, MEMORY_SLOT_FLOOR * slots, MEMORY_SLOT_TOKENS * slots)


def knowledge(top_k: int) -> Share:
    """The Knowledge's budget for ``top_k`` passages asked for."""
    slots = max(top_k, 1)
    return Share(KNOWLEDGE_SHARE, KNOWLEDGE_SLOT_TOKENS, KNOWLEDGE_SLOT_TOKENS * slots)


@dataclass(frozen=True)
class FittedCards:
    """The cards of the Story Cards sections that fit their budget, in their order, and
    those left out for it."""

    held: list[FiredCard]
    new: list[FiredCard]
    left_out: list[FiredCard]


def fit_cards(
    held: list[FiredCard], new: list[FiredCard], budget: int, counter: TokenCounter
) -> FittedCards:
    """The longest run of the cards, ``held`` then ``new``, whose section text fits
    ``budget``: the cards come in their priority order (always-on first, then by where
    their keyword fired), so those left out are the last, whole."""
    ordered = [*held, *new]
    kept = len(ordered)
    while kept and counter.count(cards_section(ordered[:kept])[0]) > budget:
        kept -= 1
    return FittedCards(held[:kept], new[: max(kept - len(held), 0)], ordered[kept:])


def left_out_reason(reason: str, left_out: list[str], budget: int) -> str:
    """A section's reason, saying which parts its budget left out."""
    if not left_out:
        return reason
    said = f"{len(left_out)} left out for its budget of {budget} tokens: " + ", ".join(left_out)
    return f"{reason}; {said}" if reason else said
