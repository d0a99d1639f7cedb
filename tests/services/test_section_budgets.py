"""The optional sections' budgets (``services.prompt.budgets``, docs/context.md "Section
budgets"): shares of the prompt within a floor and a ceiling, and the Story Cards fitted to
theirs whole, the last in priority order left out first."""

from __future__ import annotations

import pytest

from talekeeper.core.tokens import BpeCounter
from talekeeper.services.cards.rules import CardView, FiredCard
from talekeeper.services.prompt import budgets
from talekeeper.services.prompt.budgets import Share, fit_cards, left_out_reason

pytestmark = pytest.mark.no_database

COUNTER = BpeCounter()


def test_a_share_grows_with_the_prompt_between_its_floor_and_its_ceiling() -> None:
    share = Share(1 / 5, 96, 1000)
    assert share.tokens(100) == 96  # a tiny prompt: the floor
    assert share.tokens(2000) == 400  # the share
    assert share.tokens(16000) == 1000  # a large one: the ceiling


@pytest.mark.parametrize("context", [1024, 2048, 4096, 8192, 32768])
def test_every_budget_grows_with_the_context_and_4096_keeps_the_old_ones(context: int) -> None:
    prompt = context - 200 - 48  # the default reply and the template's reserve
    smaller = prompt // 2
    for share in (
        budgets.STORY_CARDS,
        budgets.CURRENT_STATE,
        budgets.memories(5),
        budgets.knowledge(3),
    ):
        assert share.floor <= share.tokens(smaller) <= share.tokens(prompt) <= share.ceiling
        if context >= 4096 and share is not budgets.STORY_CARDS:
            assert share.tokens(prompt) == share.ceiling  # what they were before shares
    assert budgets.STORY_CARDS.tokens(prompt) == min(max(prompt // 5, 96), 1000)
    # The Memories are a quarter of the prompt until their ceiling; the knowledge at least one
    # passage.
    assert budgets.memories(5).tokens(prompt) == min(max(prompt // 4, 360), 590)
    assert budgets.knowledge(3).tokens(prompt) >= budgets.KNOWLEDGE_SLOT_TOKENS


def fired(name: str, entry: str, always: bool = False) -> FiredCard:
    keywords = () if always else (name.lower(),)
    card = CardView(name=name, type="other", keywords=keywords, entry=entry, id=len(entry))
    return FiredCard(card, "" if always else name.lower(), None if always else "input")


def test_cards_left_out_for_the_budget_are_the_last_whole_ones_held_before_new() -> None:
    held = [fired("Rules", "Nobody swims at night.", always=True), fired("Harbour", "Wet stone.")]
    new = [fired("Maren", "The keeper of the lamp. " * 3), fired("Tower", "Old.")]
    text = lambda cards: "\n".join(f.card.line() for f in cards)  # noqa: E731
    room = COUNTER.count(text(held + new[:1]))
    fitted = fit_cards(held, new, room, COUNTER)
    assert [f.card.name for f in fitted.held] == ["Rules", "Harbour"]
    assert [f.card.name for f in fitted.new] == ["Maren"]
    assert [f.card.name for f in fitted.left_out] == ["Tower"]
    tight = fit_cards(held, new, COUNTER.count(text(held[:1])), COUNTER)
    assert [f.card.name for f in tight.held] == ["Rules"] and tight.new == []
    assert [f.card.name for f in tight.left_out] == ["Harbour", "Maren", "Tower"]
    assert fit_cards(held, new, 1, COUNTER).left_out == [*held, *new]  # none fits: none in
    whole = fit_cards(held, new, 10_000, COUNTER)
    assert (whole.held, whole.new, whole.left_out) == (held, new, [])


def test_a_reason_names_what_its_budget_left_out() -> None:
    assert left_out_reason("Rules: always on", [], 96) == "Rules: always on"
    assert left_out_reason("Rules: always on", ["Tower", "Maren"], 96) == (
        "Rules: always on; 2 left out for its budget of 96 tokens: Tower, Maren"
    )
    assert left_out_reason("", ["Tower"], 96) == "1 left out for its budget of 96 tokens: Tower"
