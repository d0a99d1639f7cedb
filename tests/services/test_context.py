"""The context builder with a 1-char = 1-token counter: exact budget arithmetic."""

from __future__ import annotations

import pytest

from talekeeper.core.tokens import CharCounter
from talekeeper.services.endpoints.models import ContextLayout
from talekeeper.services.prompt.context import HistoryEntry, Section, build_context
from talekeeper.services.prompt.history import (
    HISTORY_RESERVE_ACTIONS,
    HISTORY_RESERVE_SHARE,
    cut_to_sentences,
)
from talekeeper.services.prompt.sections import SEPARATOR

pytestmark = pytest.mark.no_database

C = CharCounter()
FIXED = [
    Section("story_cards", "Mara: a smuggler.", "keyword 'Mara'"),
    Section("ai_instructions", "Narrate in second person."),
    Section("plot_essentials", "A port city."),
]


def story(n: int) -> list[HistoryEntry]:
    return [
        HistoryEntry(i, "player" if i % 2 else "narrator", f"Action {i} happens here.")
        for i in range(n)
    ]


def test_sections_come_in_the_fixed_order_whatever_order_they_are_given() -> None:
    built = build_context(FIXED, story(2), "", "> You wait.", budget=10_000, counter=C)
    names = [s.name for s in built.report.sections]
    assert names == [
        "ai_instructions",
        "plot_essentials",
        "story_cards",
        "history",
        "player_action",
    ]
    assert built.system == (
        "Narrate in second person.\n\n[Plot Essentials]\nA port city.\n\n[World]\nMara: a smuggler."
    )
    assert built.report.sections[2].reason == "keyword 'Mara'"


def test_history_drops_the_oldest_first_and_the_budget_is_never_exceeded() -> None:
    entry = len("Action 0 happens here." + SEPARATOR)  # 24 tokens each
    fixed_cost = sum(len(s) + 2 for s in ["Narrate in second person."])
    budget = fixed_cost + len("> Go." + SEPARATOR) + 3 * entry
    built = build_context(FIXED[1:2], story(6), "", "> Go.", budget=budget, counter=C)
    assert built.report.history_kept == [3, 4, 5]
    assert built.report.history_dropped == [0, 1, 2]
    assert built.report.used == budget
    assert len(built.prompt() + SEPARATOR) <= budget


def test_an_action_that_does_not_fit_whole_is_cut_at_a_sentence_boundary() -> None:
    long = HistoryEntry(0, "narrator", "First sentence is long. Second one. Third.")
    newest = HistoryEntry(1, "player", "> You go.")
    budget = len("> You go." + SEPARATOR) + len("Second one. Third." + SEPARATOR) + 3
    built = build_context([], [long, newest], "", "", budget=budget, counter=C)
    assert built.history[0].text == "Second one. Third."
    assert built.report.history_cut == 0


def test_only_a_single_action_larger_than_the_room_is_cut_mid_sentence() -> None:
    huge = HistoryEntry(0, "narrator", "abcdefghijklmnopqrstuvwxyz")
    built = build_context([], [huge], "", "", budget=12, counter=C)
    assert built.history[0].text == "qrstuvwxyz"
    assert cut_to_sentences("One. Two.", 4, C) == "Two."


def test_the_authors_note_sits_three_actions_before_the_end() -> None:
    built = build_context([], story(6), "Keep it tense.", "> Run.", budget=10_000, counter=C)
    roles_and_texts = built.messages()
    note_at = next(i for i, m in enumerate(roles_and_texts) if "Author's Note" in m["content"])
    after = roles_and_texts[note_at:]
    assert "Action 3 happens here." in "".join(m["content"] for m in after)
    assert "Action 2 happens here." not in "".join(m["content"] for m in after)
    assert built.prompt().index("[Author's Note: Keep it tense.]") < built.prompt().index(
        "Action 3"
    )


def test_chat_messages_alternate_roles() -> None:
    history = [HistoryEntry(0, "player", "> A"), HistoryEntry(1, "player", "> B")]
    messages = build_context([], history, "", "> C", budget=1000, counter=C).messages()
    roles = [m["role"] for m in messages]
    assert all(a != b for a, b in zip(roles, roles[1:], strict=False))


def test_overflowing_fixed_sections_are_cut_lowest_priority_first() -> None:
    fixed = [
        Section("ai_instructions", "I" * 20),
        Section("story_cards", "C" * 50),
        Section("plot_essentials", "P" * 20),
    ]
    built = build_context(fixed, [], "", "> Go.", budget=80, counter=C)
    report = {s.name: s for s in built.report.sections}
    assert report["ai_instructions"].cut is False and report["plot_essentials"].cut is False
    assert report["story_cards"].cut is True
    assert built.report.used <= 80


@pytest.mark.parametrize("layout", [ContextLayout.CLASSIC, ContextLayout.CACHE])
def test_the_newest_actions_keep_their_reserve_ahead_of_the_optional_sections(
    layout: ContextLayout,
) -> None:
    """Sections that would fill the whole budget leave the history its reserve: its newest
    six actions, up to a third of the budget; the optional sections are cut for it."""
    fixed = [
        Section("ai_instructions", "I" * 20),
        Section("memories", "M" * 300),
        Section("story_cards", "C" * 300),
    ]
    action = "> Go."
    budget = 240
    entry = len("Action 0 happens here." + SEPARATOR)  # 24 tokens each
    share = int((budget - len(action + SEPARATOR)) * HISTORY_RESERVE_SHARE)  # 78
    built = build_context(fixed, story(9), "", action, budget=budget, counter=C, layout=layout)
    report = {s.name: s for s in built.report.sections}
    assert built.report.history_reserve == share
    kept = built.report.history_kept
    assert kept == list(range(9 - len(kept), 9)) and len(kept) * entry <= share + entry
    # ``classic`` fills the reserve; ``cache`` drops a chunk, keeping two thirds of it.
    least = share if layout is ContextLayout.CLASSIC else share - share // 3
    assert len(kept) >= least // entry >= 2
    # The sections alone would have taken all of the budget: they were cut for the history.
    assert sum(len(s.text) for s in fixed) > budget
    assert "story_cards" not in report or report["story_cards"].cut
    assert report["memories"].cut and not report["ai_instructions"].cut
    assert built.report.used <= budget
    # A history shorter than the share keeps all of itself, and the sections the rest.
    short = build_context(fixed, story(1), "", action, budget=budget, counter=C, layout=layout)
    assert short.report.history_reserve == entry and short.report.history_kept == [0]
    # In a larger budget the reserve is the newest six actions, not the whole share: the
    # sections keep the rest.
    roomy = build_context(fixed, story(9), "", action, budget=900, counter=C, layout=layout)
    assert roomy.report.history_reserve == HISTORY_RESERVE_ACTIONS * entry < 900 // 3
