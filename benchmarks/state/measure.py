"""The world-state benchmark's measures: the product's state after each turn against the truth.

Invariants:

- Pure: observations and truths in, counts out; no database, no engine.
- A name the product shows is read as the story's thing whose written form it is
  (``Resolver``: Unicode NFKC, case-folded, words only, a leading article or possessive
  set aside), so "the lantern" and "Brass Lantern" are both the brass lantern. A name
  that is no form of any thing of its kind is wrong wherever it is shown, and two names
  of one thing count once.
- Location: *accuracy* over the turns where the truth has a location (every turn here,
  so it is also the recall), *precision* over the turns where the product states one.
  Present and inventory: precision, recall and F1 summed over every turn (micro).
  Time: whether time moved at a turn, as precision and recall, and the *order
  violations*: turns where time moved forward in the truth but the product refused the
  time it read there as going backward.
- Model calls: the narrator's (one a turn) and every other chat or completion request
  the turns made, background work included: *extra calls per turn* is the world state's
  cost in model calls (the embedding requests are the memory system's and are counted
  apart).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

from benchmarks.state.generator import StateStory, Thing, Truth

_WORD = re.compile(r"\w+")
_LEADING = frozenset({"the", "a", "an", "your", "my", "some", "his", "her", "their"})


def key(name: str) -> str:
    """How a name is compared: NFKC, case-folded, words only, a leading article or
    possessive set aside while another word remains."""
    words = _WORD.findall(unicodedata.normalize("NFKC", name).casefold())
    while len(words) > 1 and words[0] in _LEADING:
        words.pop(0)
    return " ".join(words)


@dataclass(frozen=True)
class Resolver:
    """The story's things by the key of each written form, per kind."""

    people: dict[str, str]
    places: dict[str, str]
    items: dict[str, str]

    @classmethod
    def of(cls, story: StateStory) -> Resolver:
        def forms(things: Iterable[Thing]) -> dict[str, str]:
            return {key(form): t.name for t in things for form in t.forms}

        return cls(forms(story.people), forms(story.places), forms(story.items))

    @staticmethod
    def names(table: dict[str, str], shown: Iterable[str]) -> set[str]:
        """The things ``shown`` names; a name of no thing stays as shown (always wrong)."""
        return {table.get(key(name), f"?{name}") for name in shown}


@dataclass(frozen=True)
class Observed:
    """The product's state after one turn, as its world view shows it."""

    location: str | None
    present: tuple[str, ...]
    inventory: tuple[str, ...]
    time_moved: bool  # a time event of this turn's actions was applied
    time_refused: bool  # a time event of this turn's actions was kept but not applied


@dataclass
class Counts:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    def add(self, product: set[str], truth: set[str]) -> None:
        self.tp += len(product & truth)
        self.fp += len(product - truth)
        self.fn += len(truth - product)

    def merge(self, other: Counts) -> None:
        self.tp, self.fp, self.fn = self.tp + other.tp, self.fp + other.fp, self.fn + other.fn

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def f1(self) -> float | None:
        p, r = self.precision, self.recall
        if p is None or r is None:
            return None
        return 2 * p * r / (p + r) if p + r else 0.0


@dataclass
class Miss:
    """One turn where the product and the truth differ, for reading the failures."""

    story: str
    turn: int
    what: str  # location, present, inventory or time
    product: list[str]
    truth: list[str]
    action: str
    reply: str


@dataclass
class Score:
    turns: int = 0
    located: int = 0  # turns where the truth has a location
    stated: int = 0  # turns where the product states one
    right: int = 0  # ... and it is the truth's
    present: Counts = field(default_factory=Counts)
    inventory: Counts = field(default_factory=Counts)
    time: Counts = field(default_factory=Counts)
    violations: int = 0
    narrator_calls: int = 0
    other_calls: int = 0
    embedding_calls: int = 0
    misses: list[Miss] = field(default_factory=list)

    @property
    def accuracy(self) -> float | None:
        return self.right / self.located if self.located else None

    @property
    def location_precision(self) -> float | None:
        return self.right / self.stated if self.stated else None

    @property
    def extra_calls(self) -> float | None:
        return self.other_calls / self.turns if self.turns else None

    def merge(self, other: Score) -> None:
        for name in ("turns", "located", "stated", "right", "violations"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for name in ("narrator_calls", "other_calls", "embedding_calls"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.present.merge(other.present)
        self.inventory.merge(other.inventory)
        self.time.merge(other.time)
        self.misses += other.misses


def score_turn(
    score: Score, resolver: Resolver, truth: Truth, seen: Observed, where: tuple[str, int]
) -> list[Miss]:
    """Add one turn to ``score``; the fields that differ (``where``: story and turn)."""
    score.turns += 1
    found: list[tuple[str, list[str], list[str]]] = []
    location = None
    if seen.location is not None:
        score.stated += 1
        location = next(iter(Resolver.names(resolver.places, [seen.location])))
    if truth.location is not None:
        score.located += 1
        score.right += location == truth.location
    if location != truth.location:
        found.append(("location", [seen.location or "-"], [truth.location or "-"]))
    for what, counts, table, shown, true in (
        ("present", score.present, resolver.people, seen.present, truth.present),
        ("inventory", score.inventory, resolver.items, seen.inventory, truth.inventory),
    ):
        names = Resolver.names(table, shown)
        counts.add(names, set(true))
        if names != set(true):
            found.append((what, sorted(names), sorted(true)))
    score.time.add(
        {"moved"} if seen.time_moved else set(), {"moved"} if truth.time_moved else set()
    )
    if truth.time_moved and seen.time_refused:
        score.violations += 1
    if seen.time_moved != truth.time_moved:
        found.append(("time", [str(seen.time_moved)], [str(truth.time_moved)]))
    return [Miss(where[0], where[1], what, p, t, "", "") for what, p, t in found]
