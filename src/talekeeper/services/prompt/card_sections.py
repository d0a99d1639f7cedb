"""The Story Cards sections of a turn: which cards they hold (the ``cache`` layout keeps
those the previous prompt held, and puts the newly fired ones in a section of their own),
within the adventure's Story Cards budget (``budgets``).

Invariants:

- The cards go in their priority order, held before new; the budget leaves out the last,
  whole (``budgets.fit_cards``), and the section that holds cards names them.
- The inputs' card fields (``cards``, ``cards_held``, ``cards_rebuilt``) list only the
  cards in the sections, so Insights and the next turn's placement see what went in.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

from talekeeper.core.tokens import TokenCounter
from talekeeper.services.cards.rules import FiredCard, cards_section, held_cards
from talekeeper.services.prompt import budgets
from talekeeper.services.prompt.placement import Carried
from talekeeper.services.prompt.sections import Section
from talekeeper.services.story.tree import Story


def card_sections(
    cards: list[FiredCard],
    new: list[FiredCard] | None = None,
    *,
    budget: int | None = None,
    left_out: Sequence[str] = (),
) -> tuple[Section, Section]:
    """The Story Cards; ``new``: the ``cache`` layout's newly fired cards, in a section of
    their own. ``budget``: the two sections' budget (``budgets.fit_cards`` chose the cards
    within it), ``left_out`` the names of the cards it left out."""
    text, reason = cards_section(cards)
    text_new, reason_new = cards_section(new or [])
    if budget is not None and left_out:  # said once, by the section that holds cards
        if text or not text_new:
            reason = budgets.left_out_reason(reason, list(left_out), budget)
        else:
            reason_new = budgets.left_out_reason(reason_new, list(left_out), budget)
    return Section("story_cards", text, reason, budget=budget), Section(
        "story_cards_new", text_new, reason_new, budget=budget
    )


class CardFields(TypedDict):
    """The inputs' fields that say which cards the Story Cards sections hold, and which
    their budget left out (``ContextInputs``)."""

    cards: tuple[FiredCard, ...]
    cards_rebuilt: tuple[FiredCard, ...]
    cards_held: tuple[int, ...]
    cards_left_out: tuple[str, ...]
    cards_rebuilt_left_out: tuple[str, ...]


def cards_within(
    story: Story,
    section: list[FiredCard],
    previous: Carried | None,
    own: budgets.SectionBudgets,
    budget: int,
    counter: TokenCounter,
) -> tuple[tuple[Section, Section], CardFields]:
    """The Story Cards sections within their budget (the adventure's share of ``budget``),
    and the inputs' fields that say which cards they hold and which they left out."""
    held, new = _held(story, section, previous)
    room = own.story_cards.tokens(budget)
    fitted = budgets.fit_cards(held, new, room, counter)
    rebuilt = budgets.fit_cards(section, [], room, counter)
    left_out = tuple(f.card.name for f in fitted.left_out)
    fields = CardFields(
        cards=(*fitted.held, *fitted.new),
        cards_rebuilt=tuple(rebuilt.held),
        cards_held=tuple(f.card.id for f in fitted.held),
        cards_left_out=left_out,
        cards_rebuilt_left_out=tuple(f.card.name for f in rebuilt.left_out),
    )
    parts = card_sections(fitted.held, fitted.new, budget=room, left_out=left_out)
    return parts, fields


def _held(
    story: Story, section: list[FiredCard], previous: Carried | None
) -> tuple[list[FiredCard], list[FiredCard]]:
    """(the cards the previous prompt's Story Cards section held, as they stand; those of
    ``section`` it did not hold); with no record of its cards, ``section`` and none new."""
    if previous is None or previous.cards_held is None:
        return section, []
    return held_cards(story.session, story.adventure.id, section, list(previous.cards_held))
