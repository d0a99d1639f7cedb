"""Excerpts of long blocks: exact token arithmetic, and the marker removed from replies."""

from __future__ import annotations

import pytest

from talekeeper.core.tokens import BpeCounter, CharCounter
from talekeeper.services.memory.excerpt import (
    BLOCK_TOKENS,
    MARKER,
    SEPARATED_MARKER,
    excerpt,
    strip_marker,
)

pytestmark = pytest.mark.no_database

CHARS = CharCounter()
BUDGET = 100
ROOM = BUDGET - len(SEPARATED_MARKER)  # what the marker leaves for the opening and the end


def text_of(length: int) -> str:
    """Distinct characters at every position, so head and tail can be located exactly."""
    return "".join(chr(ord("a") + i % 26) for i in range(length))


def test_the_marker_sits_on_a_line_of_its_own_and_is_unmistakable() -> None:
    assert f"\n{MARKER}\n" == SEPARATED_MARKER
    assert "left out" in MARKER and MARKER.startswith("[") and MARKER.endswith("]")
    assert ROOM > 0


@pytest.mark.parametrize("length", [0, 1, BUDGET - 1, BUDGET])
def test_text_within_the_budget_is_returned_unchanged(length: int) -> None:
    text = text_of(length)
    assert excerpt(text, CHARS, BUDGET) == text


@pytest.mark.parametrize("length", [BUDGET + 1, BUDGET + 2, 3 * BUDGET, 10 * BUDGET + 7])
def test_a_long_block_fills_the_budget_exactly_with_opening_marker_and_end(length: int) -> None:
    text = text_of(length)
    shown = excerpt(text, CHARS, BUDGET)
    assert len(shown) == BUDGET
    head, tail = shown.split(SEPARATED_MARKER)
    assert len(head) + len(SEPARATED_MARKER) + len(tail) == BUDGET
    assert text.startswith(head) and text.endswith(tail)


@pytest.mark.parametrize(
    ("budget", "head", "tail"),
    [
        (len(SEPARATED_MARKER) + 10, 5, 5),  # even room: equal halves
        (len(SEPARATED_MARKER) + 11, 5, 6),  # odd room: the odd token goes to the end
        (len(SEPARATED_MARKER) + 2, 1, 1),  # the least room that still shows both ends
        (len(SEPARATED_MARKER) + 3, 1, 2),
    ],
)
def test_the_odd_token_goes_to_the_end(budget: int, head: int, tail: int) -> None:
    text = text_of(500)
    shown = excerpt(text, CHARS, budget)
    assert shown == text[:head] + SEPARATED_MARKER + text[-tail:]
    assert len(shown) == budget


def test_a_budget_too_small_for_the_marker_keeps_the_opening_alone() -> None:
    text = text_of(500)
    budget = len(SEPARATED_MARKER) + 1
    assert excerpt(text, CHARS, budget) == text[:budget]
    assert excerpt(text, CHARS, 5) == text[:5]


def test_the_default_budget_is_the_block_budget() -> None:
    text = text_of(BLOCK_TOKENS + 1)
    assert len(excerpt(text, CHARS)) == BLOCK_TOKENS
    assert excerpt(text_of(BLOCK_TOKENS), CHARS) == text_of(BLOCK_TOKENS)


PROSE = (
    "You climb the ninety-nine steps behind Maren, the tin of brine-oil knocking at your "
    "back. Gulls scream from the cold glass. At the top, the keepers' door is warm. "
)


@pytest.mark.parametrize("budget", [60, 61, 200, BLOCK_TOKENS])
def test_with_real_tokens_the_excerpt_never_exceeds_the_budget(budget: int) -> None:
    bpe = BpeCounter()
    text = PROSE * 120 + "Naïve café — ünïcödé ✨ 灯台 " * 40  # multi-byte tokens at the cuts
    shown = excerpt(text, bpe, budget)
    assert bpe.count(shown) <= budget
    assert bpe.count(shown) >= budget - 4  # and wastes next to nothing
    assert MARKER in shown
    head, tail = shown.split(SEPARATED_MARKER)
    assert text.startswith(head.rstrip("\ufffd")) and text.endswith(tail.lstrip("\ufffd"))


def test_a_short_block_is_unchanged_with_real_tokens() -> None:
    assert excerpt(PROSE, BpeCounter()) == PROSE


@pytest.mark.parametrize(
    ("written", "clean"),
    [
        (f"Mara climbed. {MARKER} Mara knocked.", "Mara climbed. Mara knocked."),
        (f"Mara climbed.{SEPARATED_MARKER}Mara knocked.", "Mara climbed.\nMara knocked."),
        (f"{MARKER} Mara knocked.", "Mara knocked."),
        (f"Mara knocked. {MARKER}", "Mara knocked."),
        ("Mara climbed [... THE MIDDLE OF THIS PASSAGE IS LEFT OUT ...].", "Mara climbed."),
        ("Mara climbed (… the middle of this passage was left out …) and fell.", None),
        ("Mara climbed the middle of the passage is left out and fell.", None),
        ("Mara climbed [. . . middle of this passage has been omitted] and fell.", None),
        ("Mara climbed [...] and fell.", None),
        ("Mara climbed […] and fell.", None),
        ("Mara climbed... and fell.", "Mara climbed... and fell."),  # prose keeps its ellipses
        ('Maren said [...] "Go up."', 'Maren said "Go up."'),
        ("No marker at all.", "No marker at all."),
    ],
)
def test_strip_marker_removes_the_marker_and_its_variants(written: str, clean: str | None) -> None:
    assert strip_marker(written) == (clean or "Mara climbed and fell.")


def test_strip_marker_undoes_an_excerpt_to_its_opening_and_end() -> None:
    text = text_of(500)
    head, tail = excerpt(text, CHARS, BUDGET).split(SEPARATED_MARKER)
    assert strip_marker(excerpt(text, CHARS, BUDGET)) == f"{head}\n{tail}"
