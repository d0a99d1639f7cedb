"""Text from players, models and uploads is read in time linear in its length.

Each case feeds a function the input that made its old pattern (or the code around it)
backtrack or re-read: runs of dots, "!?…" mixes, marks before closing quotes, blanks in a
heading, runs of "[" and "](", blank lines around an excerpt marker, sentence ends inside
one long quotation. The old code took 80 to 100 times longer for 10 times the text (the
excerpt marker's pattern 1,000 times); the check is that 10 times the text costs at most
``RATIO`` times the CPU time, never a wall-clock bound.

A run that goes on past twice the allowed time is stopped by a CPU-time signal (Python's
regex engine heeds signals), so a regression fails in seconds instead of hanging; so is a
run at the small size past ``SMALL_CAP``, which only work far worse than linear reaches
(the old marker pattern's was cubic). The time is the thread's CPU time
(``time.thread_time``): while a process CPU timer is armed, Linux serves ``process_time``
from a group clock it updates only now and then (runs of a millisecond read 0), and the
work is single-threaded, so the thread's CPU time is the process's.
"""

from __future__ import annotations

import gc
import math
import random
import re
import signal
import time
from collections.abc import Callable
from string import ascii_lowercase
from types import FrameType

import pytest

from talekeeper.core.tokens import BpeCounter, CharCounter, TokenCounter
from talekeeper.providers.voice import repair
from talekeeper.services.library import Document, DocumentKind, Section, split_passages
from talekeeper.services.library.markup import markdown_sections
from talekeeper.services.memory.evidence import sentences as evidence_sentences
from talekeeper.services.memory.excerpt import strip_marker
from talekeeper.services.memory.prompts import clean_memory
from talekeeper.services.memory.prose import second_to_third, split_sentences
from talekeeper.services.world.addressed import addressed
from talekeeper.services.world.projection import Ref
from talekeeper.services.world.rules import derive
from talekeeper.storage.vocabulary import EntityKind

N = 10_000  # characters at the small size; the large one is ten times that
N_FAST = 100_000  # for work done in C a character at a time: 10,000 read in 0.1 ms
RATIO = 30  # linear work grows 10 to 16 times under load; quadratic work grew 80 to 100
REPEATS = 3  # the least of a few runs: noise only ever adds time
ENOUGH = 0.1  # seconds of CPU at one size after which more runs would not lower the noise
FLOOR = 0.0002  # seconds: below this the small run is mostly fixed cost, not the text
SMALL_CAP = 2.0  # seconds of CPU the small run may take (it takes milliseconds)

pytestmark = [
    pytest.mark.no_database,
    pytest.mark.skipif(
        not hasattr(signal, "setitimer"), reason="needs a CPU-time timer (setitimer)"
    ),
]


class _OverBudget(BaseException):
    """Raised by the CPU-time signal: a BaseException, so no ``except Exception`` in the
    code being timed can swallow it."""


def _cpu(work: Callable[[], object], budget: float) -> float:
    """The CPU seconds ``work`` took, or ``math.inf`` if it was stopped at ``budget``."""
    armed = True

    def stop(signum: int, frame: FrameType | None) -> None:
        if armed:
            raise _OverBudget

    previous = signal.signal(signal.SIGPROF, stop)
    gc.disable()  # a collection's pause belongs to whatever made the garbage, not the text
    try:
        signal.setitimer(signal.ITIMER_PROF, budget)
        start = time.thread_time()
        work()
        spent = time.thread_time() - start
        armed = False
        return spent
    except _OverBudget:
        return math.inf
    finally:
        armed = False
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
        gc.enable()


def _least(work: Callable[[], object], budget: float) -> float:
    """The least CPU time of up to ``REPEATS`` runs; fewer once they add up to ``ENOUGH``."""
    least, spent = math.inf, 0.0
    for _ in range(REPEATS):
        took = _cpu(work, budget)
        least, spent = min(least, took), spent + took
        if spent >= ENOUGH:
            break
    return least


def assert_linear(
    function: Callable[[str], object], make: Callable[[int], str], n: int = N
) -> None:
    small, large = make(n), make(10 * n)
    assert len(small) >= n and len(large) >= 10 * n
    function(make(100))  # what is loaded on first use (a tokenizer) is no cost of the text
    gc.collect()
    took_small = _least(lambda: function(small), SMALL_CAP)
    assert took_small < math.inf, f"{n:,} characters took over {SMALL_CAP} s of CPU"
    allowed = RATIO * max(took_small, FLOOR)
    took_large = _least(lambda: function(large), 2 * allowed)
    assert took_large <= allowed, (
        f"{10 * n:,} characters took {took_large:.4f} s of CPU, {n:,} took "
        f"{took_small:.4f} s: over {RATIO} times as long for 10 times the text"
    )


def fill(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


# --- uploads: passages and Markdown ------------------------------------------------------


def passages_with(counter: Callable[[], TokenCounter]) -> Callable[[str], object]:
    def split(text: str) -> object:
        document = Document("t", DocumentKind.TXT, [Section((), None, [text])])
        return split_passages(document, counter(), 160, 40)

    return split


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda n: "." * n, id="dots"),
        pytest.param(lambda n: fill("!?…", n), id="marks"),
        pytest.param(lambda n: "." * (n // 2) + '"' * (n - n // 2), id="marks-then-closers"),
    ],
)
def test_passages_cut_at_sentence_ends_in_linear_time(make: Callable[[int], str]) -> None:
    assert_linear(passages_with(CharCounter), make)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(
            lambda n: "".join(random.Random(n).choices(ascii_lowercase, k=n)), id="letters"
        ),
        pytest.param(lambda n: fill("!?", n), id="marks"),
    ],
)
def test_a_word_over_the_budget_is_cut_in_linear_time(make: Callable[[int], str]) -> None:
    # A fresh counter for every run, and letters in no order: a remembered count (of the
    # same prefix again, as "aaaa" has) would time nothing.
    assert_linear(passages_with(BpeCounter), make)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda n: "# a" + " " * n + "b", id="blanks-in-a-heading"),
        pytest.param(
            lambda n: "# a" + " " * (n // 2) + "#" * (n // 2) + "b", id="blanks-and-hashes"
        ),
        pytest.param(lambda n: "[" * n, id="open-brackets"),
        pytest.param(lambda n: fill("![", n), id="open-images"),
        pytest.param(lambda n: fill("[](", n), id="links-never-closed"),
    ],
)
def test_markdown_reads_in_linear_time(make: Callable[[int], str]) -> None:
    assert_linear(markdown_sections, make, N_FAST)


# --- story text: the extractive writer ---------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda n: "." * n, id="dots"),
        pytest.param(lambda n: fill("!?…", n), id="marks"),
        pytest.param(lambda n: "." * (n // 2) + "”" * (n - n // 2), id="marks-then-closers"),
        pytest.param(lambda n: fill("A. ", n), id="many-sentence-ends"),
        pytest.param(lambda n: "a" * n + "-b. C", id="a-long-word-before-an-end"),
        pytest.param(lambda n: fill('"Mr. B." ', n), id="quotes-and-abbreviations"),
    ],
)
def test_sentences_split_in_linear_time(make: Callable[[int], str]) -> None:
    assert_linear(split_sentences, make)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda n: fill("Mr. ", n), id="titles"),
        pytest.param(lambda n: fill("J. ", n), id="initials"),
        pytest.param(lambda n: "a" * n + ". B", id="a-long-word-before-an-end"),
        pytest.param(lambda n: fill(". ", n), id="lone-stops"),
    ],
)
def test_evidence_sentences_split_in_linear_time(make: Callable[[int], str]) -> None:
    assert_linear(evidence_sentences, make)


def test_second_person_rewritten_in_linear_time() -> None:
    assert_linear(lambda text: second_to_third(text, "Mara"), lambda n: fill("you ", n))


# --- narration: the embedded narrator's voice --------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda n: "." * n, id="dots"),
        pytest.param(lambda n: fill("!?…", n), id="marks"),
        pytest.param(lambda n: "." * (n // 2) + "”" * (n - n // 2), id="marks-then-closers"),
        pytest.param(lambda n: '"' + fill("A. ", n), id="ends-inside-one-quotation"),
        pytest.param(lambda n: fill("I ", n), id="first-person-throughout"),
        pytest.param(lambda n: fill("you say ", n) + "x", id="speech-never-introduced"),
    ],
)
def test_narration_repaired_in_linear_time(make: Callable[[int], str]) -> None:
    assert_linear(repair, make)


# --- replies of the summary model --------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda n: "x" + " " * n + "y", id="blanks"),
        pytest.param(lambda n: "x" + fill(" \n", n) + "y", id="blank-lines"),
    ],
)
def test_excerpt_marker_stripped_in_linear_time(make: Callable[[int], str]) -> None:
    assert_linear(strip_marker, make)


def test_a_reply_cleaned_in_linear_time() -> None:
    assert_linear(clean_memory, lambda n: "Mara climbed." + " " * n + "(3 words")


def test_the_check_fails_on_quadratic_work() -> None:
    """The bar still tells quadratic from linear: a pattern that backtracks over a run of
    dots (100 times the time for 10 times the text) is stopped and reported."""
    backtracking = re.compile(r"\.+x")
    with pytest.raises(AssertionError, match="times as long for 10 times the text"):
        assert_linear(backtracking.search, lambda n: "." * n, 2_000)


# --- the world's rules: events, tellings, who is addressed ------------------------------

PEOPLE = [Ref(i, name, EntityKind.PERSON) for i, name in enumerate(("Tobin Hale", "Old Maren"))]


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda n: fill("Tobin Hale Maren ", n), id="capitalised-words"),
        pytest.param(lambda n: fill("You tell Tobin about ", n), id="tellings-unfinished"),
        pytest.param(lambda n: fill("Tobin learns that ", n), id="learnings-unfinished"),
        pytest.param(lambda n: fill("You give the rope ", n), id="gives-without-to"),
    ],
)
def test_the_rules_read_a_story_in_linear_time(make: Callable[[int], str]) -> None:
    assert_linear(lambda text: derive("narration", text), make)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda n: fill("Hey Tobin, ", n), id="vocatives"),
        pytest.param(lambda n: fill("ask Tobin and Maren ", n), id="spoken-to"),
        pytest.param(lambda n: fill("what does Tobin know ", n), id="knowledge"),
        pytest.param(lambda n: "Tobin" + fill(" Hale", n), id="one-long-name"),
    ],
)
def test_who_is_addressed_is_read_in_linear_time(make: Callable[[int], str]) -> None:
    assert_linear(lambda text: addressed("say", text, PEOPLE, PEOPLE), make)
    assert_linear(lambda text: addressed("do", text, PEOPLE, PEOPLE), make)
