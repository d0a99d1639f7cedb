"""The dense benchmark's probes: which statement each asks about, and in what words.

Invariants (``generator`` relies on them, the tests check them):

- A probe asks only about a statement whose answer words occur together in no
  other action of the script (``unique``): an answer found in a text is there
  because that statement is.
- No probe contains an answer word of a statement it needs (a multihop probe's
  first statement excepted: it names the thing that picks out the person).
- A paraphrase shares with its statement (as ``terms`` sees them) only words
  that name the people in it (``names``).
- A probe about a fact never stated asks about a relative the story never gave
  that person.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.recall.dense.content import BY_KEY, MALE_RELATIONS, ROLES
from benchmarks.recall.dense.world import (
    PLAYER,
    PROTAGONIST,
    Fact,
    Person,
    Ref,
    Voice,
    World,
    described,
    fill,
    involved,
    value_words,
)
from benchmarks.recall.metrics import bucket, bucket_edges

from talekeeper.services.memory.terms import terms

# The second statement of a multihop probe: a fact a description can ask about.
HOP_TEMPLATES = (
    "place.lives",
    "place.born",
    "plan.sail",
    "plan.farm",
    "opinion.hates",
    "possession.owns",
)
NEVER_TEMPLATES = ("place.lives", "opinion.hates", "plan.sail", "possession.owns")
RELATIVE_HOP_SHARE = 0.5  # multihop probes about the described person's relative


def word_sets(actions: Sequence[str]) -> list[set[str]]:
    """Each action's words, by depth (what ``unique`` compares)."""
    return [set(value_words(text)) for text in actions]


def unique(actions: Sequence[set[str]], depth: int, answer: Sequence[str]) -> bool:
    """Whether the action at ``depth`` is the only one (of ``word_sets``) holding every
    answer word."""
    wanted = set(answer)
    return all((d == depth) == (wanted <= found) for d, found in enumerate(actions))


def names(people: Sequence[Person], fact: Fact) -> tuple[str, ...]:
    """The words that name the people of ``fact``, however a voice names them."""
    out: list[str] = []
    for key in sorted(involved(people, fact)):
        p = people[key]
        out += [p.first, p.last, p.relation, p.role, ROLES.get(p.role, ""), p.town]
    return tuple(w for w in out if w)


def shares_only_names(question: str, sentence: str, allowed: Sequence[str]) -> bool:
    shared = set(terms(question)) & set(terms(sentence))
    return shared <= set(terms(" ".join(allowed)))


def capital(text: str) -> str:
    return text[0].upper() + text[1:]


@dataclass
class Chain:
    """One multihop probe: a person picked out by one statement (they sold or gave the
    protagonist something, or hold a post), and a fact about them or their relative."""

    rng: random.Random
    world: World
    shape: str = ""
    person: Person | None = None
    target: Person | None = None
    first: Fact | None = None
    second: Fact | None = None

    def hop1(self, voice: Voice) -> Fact:
        world, rng = self.world, self.rng
        self.shape = rng.choice(("trade", "post"))
        if self.shape == "trade":
            self.person = world.new_npc()
            template = rng.choice(("possession.sold", "possession.gave"))
            self.first = world.fact(voice, template, self.person, "name", other=PROTAGONIST)
        else:
            self.person = world.new_role()
            template = rng.choice(("name.called", "name.is"))
            self.first = world.fact(voice, template, self.person, "role")
        return self.first

    def hop2(self, voice: Voice) -> Fact:
        """The fact asked about: of a slot still free (the person may have been talked
        about since), about them or a new relative of theirs."""
        assert self.person is not None
        relative = None
        if self.rng.random() < RELATIVE_HOP_SHARE:
            relative = self.world.new_relative(self.person)
        self.target = relative or self.person
        free = [
            t for t in HOP_TEMPLATES if (self.target.key, BY_KEY[t].slot) not in self.world.slots
        ]
        if not free:  # everything about them was said already: ask about a new relative
            relative = self.world.new_relative(self.person)
            assert relative is not None, "a person met for a multihop probe has few relatives"
            self.target, free = relative, list(HOP_TEMPLATES)
        mode = "relative" if self.target.base == self.person.key else "name"
        self.second = self.world.fact(voice, self.rng.choice(free), self.target, mode)
        return self.second

    def subject(self) -> Ref:
        """How the question names the person asked about: by what the first statement says."""
        assert self.person and self.target and self.first
        person = self.person
        if self.shape == "trade":
            verb = "sold" if self.first.template == "possession.sold" else "gave"
            who = "woman" if person.gender == "f" else "man"
            phrase = f"the {who} who {verb} me the {self.first.value('O')}"
        else:
            phrase = f"the {person.role} at {person.town}"
        if self.target is not person:
            phrase = f"the {self.target.relation} of {phrase}"
        return described(phrase, self.target.gender)

    def first_answer(self) -> tuple[str, ...]:
        """What the first statement must bring: who the person is (and the thing)."""
        assert self.person and self.first
        if self.shape == "trade":
            return (self.person.first.lower(), *self.first.answer)
        return self.first.answer


def question(world: World, fact: Fact, kind: str) -> str | None:
    """The text of a ``kind`` probe about ``fact`` (None: this fact cannot be asked so)."""
    t = BY_KEY[fact.template]
    if kind == "paraphrase":
        return capital(fill(world.people, fact, t.paraphrase, PLAYER)) if t.paraphrase else None
    direct = capital(fill(world.people, fact, t.direct, PLAYER))
    if kind != "addressed":
        return direct
    busy = involved(world.people, fact)
    free = [c.first for c in world.companions if c.key not in busy]
    if not free:
        return None
    return f"{world.rng.choice(free)}, {direct[0].lower()}{direct[1:]}"


def fits(kind: str, fact: Fact) -> bool:
    t = BY_KEY[fact.template]
    if kind == "when":
        return t.kind == "date"
    if kind == "paraphrase":
        return bool(t.paraphrase)
    return t.kind != "date"


def banded(rng: random.Random, distances: Sequence[int], window: int) -> list[int]:
    """Positions of the candidates in one distance band, drawn among the bands that have
    any, so probes spread over distances instead of piling up far back."""
    edges = bucket_edges(window)
    bands: dict[str, list[int]] = {}
    for i, d in enumerate(distances):
        bands.setdefault(bucket(d, edges), []).append(i)
    return bands[rng.choice(sorted(bands))] if bands else []


def never(world: World) -> str:
    """A question about a relative the story never gives one of the cast (``withheld``)."""
    rng = world.rng
    base = rng.choice([world.people[PROTAGONIST], *world.companions])
    relation = world.withheld[base.key]
    assert not any(p.base == base.key and p.relation == relation for p in world.people)
    owner = "my" if base.key == PROTAGONIST else f"{base.first}'s"
    gender = "m" if relation in MALE_RELATIONS else "f"
    t = BY_KEY[rng.choice(NEVER_TEMPLATES)]
    fact = Fact("never", t.key, base.key, "name", None, (), ())
    subject = described(f"{owner} {relation}", gender)
    return capital(fill(world.people, fact, t.direct, PLAYER, subject))
