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
- An adventure may set its own share and ceiling for each section
  (``SectionBudgets``, stored as JSON in ``adventures.section_budgets``); the floors are
  fixed. What a client sends is checked by ``clean_overrides``, which names the field and
  the range of a value it refuses; a stored value that cannot be read is the defaults.
- The whole context's own overflow comes after: the history's reserve is kept ahead of
  every optional section (``history.reserve``), whatever their budgets allow.
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeGuard

from talekeeper.core.errors import InvalidInput
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
    # The section's text grows with each card, so the longest run that fits is found by
    # halving: a few counts of the text whole, not one for each card left out.

    def cost(count: int) -> int:  # the section's tokens with the first ``count`` cards
        return counter.count(cards_section(ordered[:count])[0])

    kept = bisect.bisect_right(range(len(ordered) + 1), budget, key=cost) - 1
    return FittedCards(held[:kept], new[: max(kept - len(held), 0)], ordered[kept:])


def left_out_reason(reason: str, left_out: list[str], budget: int) -> str:
    """A section's reason, saying which parts its budget left out."""
    if not left_out:
        return reason
    said = f"{len(left_out)} left out for its budget of {budget} tokens: " + ", ".join(left_out)
    return f"{reason}; {said}" if reason else said


class Budgeted(StrEnum):
    """The sections with a budget of their own."""

    MEMORIES = "memories"
    STORY_CARDS = "story_cards"
    KNOWLEDGE = "knowledge"
    CURRENT_STATE = "current_state"


# Each section's default, in the units of docs/context.md's table: the Memories' floor and
# ceiling are per memory, the Knowledge's ceiling per passage (its floor is one passage).
DEFAULTS: dict[Budgeted, Share] = {
    Budgeted.MEMORIES: Share(MEMORY_SHARE, MEMORY_SLOT_FLOOR, MEMORY_SLOT_TOKENS),
    Budgeted.STORY_CARDS: STORY_CARDS,
    Budgeted.KNOWLEDGE: Share(KNOWLEDGE_SHARE, KNOWLEDGE_SLOT_TOKENS, KNOWLEDGE_SLOT_TOKENS),
    Budgeted.CURRENT_STATE: CURRENT_STATE,
}
PER = {Budgeted.MEMORIES: "memory", Budgeted.KNOWLEDGE: "passage"}  # the ceiling's unit
MAX_SHARE = 0.75  # more would leave the history less than its reserve anyway
MAX_CEILING = 32_768  # tokens: the largest context a local model commonly takes
FIELDS = ("share", "ceiling")


@dataclass(frozen=True)
class SectionBudgets:
    """An adventure's budgets: the defaults, with the shares and ceilings it set."""

    shares: dict[Budgeted, Share]

    @classmethod
    def of(cls, overrides: Mapping[str, Mapping[str, float]] | None) -> SectionBudgets:
        shares = dict(DEFAULTS)
        for name, given in (overrides or {}).items():
            default = DEFAULTS[Budgeted(name)]
            shares[Budgeted(name)] = Share(
                float(given.get("share", default.share)),
                default.floor,
                int(given.get("ceiling", default.ceiling)),
            )
        return cls(shares)

    @classmethod
    def stored(cls, text: str | None) -> SectionBudgets:
        """From the adventure's column (``read_stored``)."""
        return cls.of(read_stored(text))

    def memories(self, slots: int) -> Share:
        own = self.shares[Budgeted.MEMORIES]
        return Share(own.share, own.floor * slots, own.ceiling * slots)

    def knowledge(self, top_k: int) -> Share:
        own = self.shares[Budgeted.KNOWLEDGE]
        return Share(own.share, own.floor, own.ceiling * max(top_k, 1))

    @property
    def story_cards(self) -> Share:
        return self.shares[Budgeted.STORY_CARDS]

    @property
    def current_state(self) -> Share:
        return self.shares[Budgeted.CURRENT_STATE]


def memories(slots: int) -> Share:
    """The default Memories budget for ``slots`` memories (retrieved or asked for)."""
    return SectionBudgets.of(None).memories(slots)


def knowledge(top_k: int) -> Share:
    """The default Knowledge budget for ``top_k`` passages asked for."""
    return SectionBudgets.of(None).knowledge(top_k)


def clean_overrides(value: object) -> dict[str, dict[str, float]]:
    """A client's ``section_budgets``, checked: ``{section: {"share": 0.2, "ceiling": 800}}``
    with either field or both (null or absent: the default); a section with none is left
    out. A value past a limit is refused, naming it and the range."""
    where = "'section_budgets'"
    if not isinstance(value, dict):
        raise InvalidInput(f'{where} must be an object like {{"story_cards": {{"share": 0.3}}}}.')
    names = {b.value for b in Budgeted}
    unknown = sorted(map(str, set(value) - names))
    if unknown:
        raise InvalidInput(
            f"{where} has unknown section(s) {_listed(unknown)}; "
            f"it takes {', '.join(b.value for b in Budgeted)}."
        )
    out: dict[str, dict[str, float]] = {}
    for name, given in value.items():
        fields = _clean_section(name, given)
        if fields:
            out[name] = fields
    return out


def _clean_section(name: str, given: object) -> dict[str, float]:
    where = f"'section_budgets.{name}'"
    if not isinstance(given, dict):
        raise InvalidInput(f"{where} must be an object with a share, a ceiling or both.")
    unknown = sorted(map(str, set(given) - set(FIELDS)))
    if unknown:
        raise InvalidInput(f"{where} has unknown field(s) {_listed(unknown)}.")
    out: dict[str, float] = {}
    share, ceiling = given.get("share"), given.get("ceiling")
    if share is not None:
        if not _number(share) or not 0 < share <= MAX_SHARE:
            raise InvalidInput(
                f"{where[:-1]}.share' must be a number above 0 and at most {MAX_SHARE} "
                "(a share of the prompt: 0.2 is a fifth)."
            )
        out["share"] = float(share)
    if ceiling is not None:
        floor = DEFAULTS[Budgeted(name)].floor
        if not _whole(ceiling) or not floor <= ceiling <= MAX_CEILING:
            per = PER.get(Budgeted(name))
            unit = f" a {per}" if per else ""
            raise InvalidInput(
                f"{where[:-1]}.ceiling' must be a whole number of tokens{unit}, at least "
                f"{floor} (its floor) and at most {MAX_CEILING}."
            )
        out["ceiling"] = int(ceiling)
    return out


def _listed(names: list[str], most: int = 5, longest: int = 40) -> str:
    """A client's names as a message repeats them: a few, each cut short (a body may hold
    thousands of keys, each as long as it likes)."""
    shown = ", ".join(n if len(n) <= longest else n[: longest - 3] + "..." for n in names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def _number(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _whole(value: object) -> TypeGuard[int]:
    """A whole number, written as one (800) or as a float with nothing after the point."""
    if isinstance(value, float):
        return math.isfinite(value) and value.is_integer()
    return isinstance(value, int) and not isinstance(value, bool)


TITLES = {
    Budgeted.MEMORIES: "Memories",
    Budgeted.STORY_CARDS: "Story Cards",
    Budgeted.KNOWLEDGE: "Knowledge",
    Budgeted.CURRENT_STATE: "Current state",
}


@dataclass(frozen=True)
class BudgetView:
    """A section's budget as the adventure has it, beside the default (the API's)."""

    name: Budgeted
    title: str
    share: float
    ceiling: int
    floor: int
    per: str  # "memory", "passage", or "" (the ceiling is the whole section's)
    default_share: float
    default_ceiling: int
    share_set: bool
    ceiling_set: bool


def views(text: str | None) -> list[BudgetView]:
    """Every section's budget for an adventure's stored ``section_budgets``."""
    given = read_stored(text)
    own = SectionBudgets.of(given)
    return [
        BudgetView(
            name=name,
            title=TITLES[name],
            share=own.shares[name].share,
            ceiling=own.shares[name].ceiling,
            floor=default.floor,
            per=PER.get(name, ""),
            default_share=default.share,
            default_ceiling=default.ceiling,
            share_set="share" in given.get(name, {}),
            ceiling_set="ceiling" in given.get(name, {}),
        )
        for name, default in DEFAULTS.items()
    ]


def stored_text(value: object) -> str | None:
    """A client's ``section_budgets`` as the column stores it (None: the defaults)."""
    cleaned = clean_overrides(value)
    return json.dumps(cleaned, sort_keys=True) if cleaned else None


def read_stored(text: str | None) -> dict[str, dict[str, float]]:
    """The overrides an adventure's column holds; what cannot be read as valid overrides is
    none (every write was checked, so only a damaged row gets here)."""
    try:
        return clean_overrides(json.loads(text)) if text else {}
    except (ValueError, InvalidInput):
        return {}
