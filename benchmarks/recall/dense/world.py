"""People, voices and facts: who a fact is about, and how each speaker names them.

A ``World`` holds one adventure's people (the protagonist, the companions,
their relatives, the holders of posts in the towns, passers-by) and draws
facts about them from ``content.TEMPLATES``. Invariants (the tests check them
on generated adventures):

- **One answer per question.** A person holds at most one fact per template
  slot ("where Tal lives" is stated once), and a relative or a post holder is
  named at most once.
- **Fresh values.** Places and names are invented and never reused; dates,
  objects, foods, tunes, shops, trades and verdicts come from pools drawn
  without replacement until a pool runs out (then it is drawn again: such a
  repeated value makes its facts ambiguous, and the generator never asks about
  them).
- **Voices.** The narrator calls the protagonist "you"; the protagonist speaks
  as "I"; a companion speaks as "I" and calls the protagonist "you". A
  relative is named either by name or as "Tal's sister" / "my sister"; a post
  holder as "the ferryman at Esk" (or its alias, for a paraphrase) until named.
- Deterministic: everything is drawn from the ``random.Random`` given.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.kit.names import NameMaker
from benchmarks.recall.dense import content

PROTAGONIST = 0
TOWNS = 6  # the towns facts happen in ("lost at Esk", "the miller at Esk")
MAX_RELATIVES = 8  # per person: "Tal's sister" stays one of a few, not one of fifteen
SUBJECT_TRIES = 12  # people drawn for a fact before a newcomer takes it
ATTEMPTS = 50  # draws before a fact gives up (never reached: a newcomer's slots are free)
POOLS = {
    "food": content.FOODS,
    "music": content.MUSIC,
    "shop": content.SHOPS,
    "trade": content.TRADES,
    "verdict": content.VERDICTS,
}
# Function words of a value that identify nothing ("a", "of" in "ninth of March").
_FILLER = frozenset(("a", "an", "the", "of", "on", "than", "with", "s", "to", "into", "about"))
_WORD = re.compile(r"[a-z0-9]+")
_SLOT = re.compile(r"\{([^{}]+)\}")
# How often each kind is stated: posts and relatives' names are scenery-like, so rarer.
KIND_WEIGHTS = {
    "name": 0.6,
    "relation": 0.8,
    "date": 1.0,
    "place": 1.0,
    "possession": 1.2,
    "plan": 1.0,
    "opinion": 1.0,
}
RELATIONS = (*content.FEMALE_RELATIONS, *content.MALE_RELATIONS, *content.EITHER_RELATIONS)
BY_KIND = {kind: [t for t in content.TEMPLATES if t.kind == kind] for kind in content.KINDS}


def value_words(text: str) -> tuple[str, ...]:
    return tuple(w for w in _WORD.findall(text.lower()) if w not in _FILLER)


@dataclass
class Person:
    key: int
    first: str
    gender: str  # "f" or "m"
    kind: str  # "you", "companion", "npc", "relative", "role"
    last: str = ""
    base: int | None = None  # a relative's: whose relative
    relation: str = ""
    role: str = ""  # a post holder's post, and the town it is in
    town: str = ""
    named: bool = True  # a relative's or post holder's name has been stated


@dataclass(frozen=True)
class Voice:
    speaker: int | None = None  # None: the narrator; else who says it ("I")


NARRATOR = Voice()
PLAYER = Voice(PROTAGONIST)


@dataclass(frozen=True)
class Ref:
    nom: str
    poss: str
    obj: str
    pron: str  # possessive pronoun: "his", "her", "my", "your"
    person: int  # 1, 2 or 3, for the verb


@dataclass(frozen=True)
class Fact:
    key: str
    template: str
    subject: int
    mode: str  # how the statement names the subject: "name", "relative", "role"
    other: int | None
    values: tuple[tuple[str, str], ...]
    answer: tuple[str, ...]

    @property
    def kind(self) -> str:
        return content.BY_KEY[self.template].kind

    def value(self, name: str) -> str:
        return dict(self.values)[name]


def ref(people: Sequence[Person], person: Person, voice: Voice, mode: str) -> Ref:
    if person.key == voice.speaker:
        return Ref("I", "my", "me", "my", 1)
    if person.key == PROTAGONIST:
        return Ref("you", "your", "you", "your", 2)
    pron = "her" if person.gender == "f" else "his"
    if mode == "relative" and person.base is not None:
        base = ref(people, people[person.base], voice, "name")
        nom = f"{base.poss} {person.relation}"
    elif mode in ("role", "alias") and person.role:
        nom = (
            f"the {person.role if mode == 'role' else content.ROLES[person.role]} at {person.town}"
        )
    else:
        nom = person.first
    return Ref(nom, f"{nom}'s", nom, pron, 3)


def described(nom: str, gender: str) -> Ref:
    """A subject named by a description ("the woman who sold me the grey mare")."""
    return Ref(nom, f"{nom}'s", nom, "her" if gender == "f" else "his", 3)


def fill(
    people: Sequence[Person], fact: Fact, text: str, voice: Voice, subject: Ref | None = None
) -> str:
    """``text`` (a template's statement or question) about ``fact`` in ``voice``."""
    person = people[fact.subject]
    s = subject or ref(people, person, voice, fact.mode)
    r = ref(people, people[fact.other], voice, "name") if fact.other is not None else None

    def one(match: re.Match[str]) -> str:
        name = match.group(1)
        if name.startswith("v:"):
            verb = name[2:]
            return verb if s.person == 3 else content.VERBS[verb][s.person - 1]
        forms = {"S": s.nom, "S's": s.poss, "So": s.obj, "Sp": s.pron}
        if name in forms:
            return forms[name]
        if name == "Sa":
            return ref(people, person, voice, "alias").nom
        if name in ("R", "Ro"):
            assert r is not None
            return r.nom if name == "R" else r.obj
        return fact.value(name)

    return _SLOT.sub(one, text)


def involved(people: Sequence[Person], fact: Fact) -> set[int]:
    """The people a statement of ``fact`` names (a relative's base among them)."""
    person = people[fact.subject]
    out = {person.key}
    if fact.mode == "relative" and person.base is not None:
        out.add(person.base)
    if fact.other is not None:
        out.add(fact.other)
    return out


class World:
    def __init__(
        self, rng: random.Random, names: NameMaker, protagonist: str, companions: Sequence[str]
    ) -> None:
        self.rng = rng
        self.names = names
        self.people = [Person(PROTAGONIST, protagonist, rng.choice("fm"), "you")]
        for name in companions:
            self.people.append(Person(len(self.people), name, rng.choice("fm"), "companion"))
        self.towns = [names.word(2) for _ in range(TOWNS)]
        # One relative the story never gives each of the cast, for the never-stated probes.
        self.withheld = {p.key: rng.choice(RELATIONS) for p in self.people}
        self.slots: set[tuple[int, str]] = set()
        self.dates = [f"{o} of {m}" for o in content.ORDINALS for m in content.MONTHS]
        self._pools: dict[str, list[str]] = {}
        self.count = 0

    @property
    def companions(self) -> list[Person]:
        return [p for p in self.people if p.kind == "companion"]

    def draw(self, pool: str, options: Sequence[str]) -> str:
        left = self._pools.get(pool)
        if not left:
            left = list(options)
            self.rng.shuffle(left)
            self._pools[pool] = left
        return left.pop()

    # -- people ------------------------------------------------------------------------------

    def _add(self, person: Person) -> Person:
        self.people.append(person)
        return person

    def new_npc(self) -> Person:
        return self._add(Person(len(self.people), self.names.word(2), self.rng.choice("fm"), "npc"))

    def new_relative(self, base: Person) -> Person | None:
        taken = {p.relation for p in self.people if p.base == base.key}
        if len(taken) >= MAX_RELATIVES:
            return None
        taken.add(self.withheld.get(base.key, ""))
        free = [r for r in RELATIONS if r not in taken]
        relation = self.rng.choice(free)
        if relation in content.EITHER_RELATIONS:
            gender = self.rng.choice("fm")
        else:
            gender = "f" if relation in content.FEMALE_RELATIONS else "m"
        person = Person(len(self.people), self.names.word(2), gender, "relative", base=base.key)
        person.relation, person.named = relation, False
        return self._add(person)

    def new_role(self) -> Person:
        taken = {(p.role, p.town) for p in self.people if p.role}
        if len(taken) >= len(content.ROLES) * len(self.towns):  # every post of every town is known
            self.towns.append(self.names.word(2))
        while True:
            role, town = self.rng.choice(list(content.ROLES)), self.rng.choice(self.towns)
            if (role, town) not in taken:
                break
        first, last = self.names.word(1), self.names.word(2)
        person = Person(len(self.people), first, self.rng.choice("fm"), "role", last=last)
        person.role, person.town, person.named = role, town, False
        return self._add(person)

    def _unnamed(self, kind: str) -> Person | None:
        waiting = [p for p in self.people if p.kind == kind and not p.named]
        return self.rng.choice(waiting) if waiting and self.rng.random() < 0.5 else None

    def relative_of(self, base: Person) -> Person:
        known = [p for p in self.people if p.base == base.key]
        if known and self.rng.random() < 0.6:
            return self.rng.choice(known)
        return self.new_relative(base) or self.rng.choice(known)

    def _someone(self) -> Person:
        known = [p for p in self.people if p.kind in ("npc", "role")]
        return self.rng.choice(known) if known and self.rng.random() < 0.6 else self.new_npc()

    def mode(self, person: Person) -> str:
        if person.kind in ("relative", "role") and (not person.named or self.rng.random() < 0.5):
            return "relative" if person.kind == "relative" else "role"
        return "name"

    def _subject(self, t: content.Template, voice: Voice) -> tuple[Person, str]:
        if t.subject == "relative":
            waiting = self._unnamed("relative")
            if waiting is not None:
                return waiting, "relative"
            cast = [self.people[PROTAGONIST], *self.companions]
            base = self.rng.choice(cast) if self.rng.random() < 0.75 else self._someone()
            return self.new_relative(base) or self._someone(), "relative"
        if t.subject == "role":
            return self._unnamed("role") or self.new_role(), "role"
        r = self.rng.random()
        if voice.speaker not in (None, PROTAGONIST) and r < 0.5:
            speaker = self.people[voice.speaker or 0]
            person = speaker if r < 0.3 else self.relative_of(speaker)
        elif r < 0.65:
            person = self.rng.choice(self.companions)
        elif r < 0.72:
            person = self.people[PROTAGONIST]
        elif r < 0.88:
            person = self.relative_of(self.rng.choice([self.people[0], *self.companions]))
        else:
            person = self._someone()
        return person, self.mode(person)

    def _newcomer(self, t: content.Template) -> tuple[Person, str]:
        if t.subject == "role":
            return self.new_role(), "role"
        if t.subject == "relative":
            return self.new_relative(self.new_npc()) or self.new_npc(), "relative"
        return self.new_npc(), "name"

    def _other(self, subject: Person) -> int:
        if subject.key != PROTAGONIST and self.rng.random() < 0.5:
            return PROTAGONIST
        known = [p for p in self.people if p.kind in ("you", "companion", "npc") or p.named]
        return self.rng.choice([p for p in known if p.key != subject.key]).key

    # -- facts -------------------------------------------------------------------------------

    def _template(self) -> content.Template:
        kind = self.rng.choices(content.KINDS, weights=[KIND_WEIGHTS[k] for k in content.KINDS])[0]
        return self.rng.choice(BY_KIND[kind])

    def _values(self, t: content.Template, person: Person) -> dict[str, str]:
        wanted = set(_SLOT.findall(f"{t.sentence} {t.direct} {t.paraphrase}"))
        out: dict[str, str] = {}
        if "P" in wanted:
            out["P"] = self.names.word(2)
        if "N" in wanted:
            out["N"] = person.first
        if "NL" in wanted:
            out["NL"] = f"{person.first} {person.last}"
        if "D" in wanted:
            out["D"] = self.draw("D", self.dates)
        if wanted & {"O", "aO"}:
            adjective = self.rng.choice(content.ADJECTIVES)
            out["O"] = f"{adjective} {self.draw('O', content.NOUNS)}"
            out["aO"] = ("an " if adjective[0] in "aeiou" else "a ") + out["O"]
        for name, pool in POOLS.items():
            if name in wanted:
                out[name] = self.draw(name, pool)
        if "Q" in wanted:
            out["Q"] = self.rng.choice(self.towns)
        if "thing" in wanted:
            out["thing"] = self.rng.choice(content.THINGS)
        return out

    def fact(
        self,
        voice: Voice,
        template: str | None = None,
        subject: Person | None = None,
        mode: str = "name",
        other: int | None = None,
    ) -> Fact:
        """A new fact, stated in ``voice``: of ``template`` about ``subject`` (to ``other``)
        when given. The kind is drawn first and kept: when the people drawn already hold
        that slot, the fact goes to a newcomer (so kinds keep their shares as the story
        grows and the cast's slots fill up)."""
        t = content.BY_KEY[template] if template else self._template()
        for attempt in range(ATTEMPTS):
            if subject is not None:
                person, how = subject, mode
            elif attempt < SUBJECT_TRIES:
                person, how = self._subject(t, voice)
            else:
                person, how = self._newcomer(t)
            if t.subject == "relative" and person.kind != "relative":
                continue
            second = (other if other is not None else self._other(person)) if t.other else None
            slot = (person.key, t.slot.replace("{R}", str(second)))
            if slot in self.slots:
                continue
            self.slots.add(slot)
            if t.subject in ("relative", "role"):
                person.named = True
            values = self._values(t, person)
            answer = tuple(w for name in t.answer for w in value_words(values[name]))
            self.count += 1
            return Fact(
                f"f{self.count}", t.key, person.key, how, second, tuple(values.items()), answer
            )
        raise RuntimeError(f"no free slot for a {template or 'random'} fact after {ATTEMPTS}")
