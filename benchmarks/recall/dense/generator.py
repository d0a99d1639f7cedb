"""A seeded generator of dense adventures: every action states facts, probes ask long after.

``generate(seed, actions, window, style)`` writes a script for the real engine
(``benchmarks.kit.play.Turn`` operations; no undo or fork) in one of two styles:
``narrative`` (the player acts with ``do`` and ``story`` actions, the narrator tells)
or ``dialogue`` (the player ``say``s, the companions answer, two friends catching up
over months). Invariants (the tests check every one):

- **Seeded.** The same arguments give the same script, word for word.
- **Dense.** Every action but a probe states at least one fact (``world``):
  names, relations, dates, places, possessions, plans, opinions, many of one
  kind about different people; the companions (the cast, as story cards) are
  named in a third to a half of the actions.
- **Depths are the engine's.** Depth 0 is the opening; turn t writes the player
  action at depth 2t-1 and the reply at 2t. A ``Statement`` is the sentence,
  verbatim in the action at its depth, and its answer words: lowercase, all in
  the sentence, never "you"; for a statement a probe needs, together in no
  other action, and none of them in the probe (a multihop probe's first
  statement excepted: the probe names the thing that picks the person out).
- **Probes lie beyond the window.** A probe is a ``say`` action asked at least
  ``window + 1`` actions after the newest statement it needs. Kinds: ``direct``
  (the subject in the statement's words), ``paraphrase`` (no answer word; shares
  with the statement at most the words naming its people), ``addressed`` (a
  direct question opened by a companion's name), ``when`` (a date fact),
  ``multihop`` (two statements at least ``MIN_GAP`` actions apart: one names
  who the question describes, the other states the fact about them) and
  ``never`` (a relative the story never gave one of the cast).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

from benchmarks.kit.names import NameMaker
from benchmarks.kit.play import Turn
from benchmarks.recall.dense import content
from benchmarks.recall.dense.world import (
    NARRATOR,
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

from talekeeper.services.memory.terms import terms

WINDOW = 40  # actions: a probe is asked at least this far past what it needs
MIN_GAP = 12  # actions between the two statements of a multihop probe
STYLES = ("narrative", "dialogue")
REPLY_FACTS = (2, 3, 3, 4)  # facts per narrator reply, drawn
SPEECH_SHARE = 0.75  # in a dialogue reply, sentences a companion says (the rest narrated)
DO_SHARE = 0.4  # in the narrative style, player actions that are ``do`` (the rest ``story``)
FULL_QUOTAS = {"direct": 4, "paraphrase": 4, "addressed": 4, "when": 3, "multihop": 3, "never": 2}
SHORT_QUOTAS = {"direct": 2, "paraphrase": 2, "addressed": 2, "when": 2, "multihop": 1, "never": 1}
SHORT = 150  # adventures shorter than this get the short quotas
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
# The adventures' titles (one drawn per adventure, before anything else).
TITLES = ("The Drowned Bells of Saltmere", "The Pass of Nine Lanterns", "The Canals of Vescara")


@dataclass(frozen=True)
class Statement:
    fact: str
    kind: str  # the fact's kind (content.KINDS)
    depth: int
    sentence: str  # verbatim in the action at ``depth``
    answer: tuple[str, ...]


@dataclass(frozen=True)
class DenseProbe:
    fact: str
    op: int  # index of the probe's turn in ``ops``
    depth: int  # the probe action's depth
    distance: int | None  # actions from the newest statement it needs; None: never stated
    kind: str  # direct, paraphrase, addressed, when, multihop, never
    question: tuple[str, str]  # (type, text)
    statements: tuple[Statement, ...] = ()
    names: tuple[str, ...] = ()  # the words naming the people asked about (paraphrase check)


@dataclass
class DenseAdventure:
    key: str
    seed: int
    window: int
    style: str
    title: str
    protagonist: str
    companions: tuple[str, str]  # the cast, as story cards
    opening: str
    ops: list[Turn]
    statements: list[Statement]
    questions: list[DenseProbe]
    actions: list[tuple[str, str]]  # (type, text) by depth
    people: list[Person]
    length: int  # actions on the path, the opening included
    names: tuple[str, ...] = ()  # every proper name the story made, in lower case


def bucket_edges(window: int) -> tuple[int, ...]:
    """Distance buckets in actions: just past the window, then wider and wider."""
    first = window + 1
    return (first, *(e for e in (80, 120, 180) if e > first), 10**9)


def bucket(distance: int, edges: Sequence[int]) -> str:
    """The label of the bucket ``[edges[i], edges[i+1])`` that holds ``distance``."""
    for low, high in zip(edges, edges[1:], strict=False):
        if low <= distance < high:
            return f"{low}–{high - 1}" if high < 10**9 else f"{low}+"
    raise ValueError(f"distance {distance} is below the first bucket ({edges[0]})")


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
        out += [p.first, p.last, p.relation, p.role, content.ROLES.get(p.role, ""), p.town]
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
            t
            for t in HOP_TEMPLATES
            if (self.target.key, content.BY_KEY[t].slot) not in self.world.slots
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
    t = content.BY_KEY[fact.template]
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
    t = content.BY_KEY[fact.template]
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
    gender = "m" if relation in content.MALE_RELATIONS else "f"
    t = content.BY_KEY[rng.choice(NEVER_TEMPLATES)]
    fact = Fact("never", t.key, base.key, "name", None, (), ())
    subject = described(f"{owner} {relation}", gender)
    return capital(fill(world.people, fact, t.direct, PLAYER, subject))


class _Script:
    """The actions by depth, each with the statements it makes."""

    def __init__(self, world: World, rng: random.Random, style: str) -> None:
        self.world, self.rng, self.style = world, rng, style
        self.actions: list[tuple[str, str]] = []
        self.statements: list[Statement] = []
        self.facts: dict[str, Fact] = {}
        self.pending: list[tuple[Fact, str]] = []  # sentences of the action being written

    def state(self, fact: Fact, voice: Voice, frames: tuple[str, ...]) -> str:
        """One sentence stating ``fact`` in ``voice``, in one of ``frames``."""
        world = self.world
        clause = fill(world.people, fact, content.BY_KEY[fact.template].sentence, voice)
        busy = involved(world.people, fact)
        free = [c.first for c in world.companions if c.key not in busy]
        speech = frames is content.SPEECH_FRAMES
        usable = [f for f in frames if "{C}" not in f or speech or free]
        frame = self.rng.choice(usable)
        if frame.index("{c}") <= 1:
            clause = clause[0].upper() + clause[1:]
        who = world.people[voice.speaker or 0].first if speech else self.rng.choice(free or [""])
        text = frame.replace("{C}", who).replace("{Q}", self.rng.choice(world.towns))
        text = text.replace("{c}", clause)
        sentence = text[0].upper() + text[1:]
        self.facts[fact.key] = fact
        self.pending.append((fact, sentence))
        return sentence

    def close(self, type_: str, text: str) -> int:
        depth = len(self.actions)
        self.actions.append((type_, text))
        for fact, sentence in self.pending:
            assert sentence in text
            self.statements.append(Statement(fact.key, fact.kind, depth, sentence, fact.answer))
        self.pending = []
        return depth

    # -- actions ------------------------------------------------------------------------------

    def player(self) -> None:
        world, rng = self.world, self.rng
        if self.style == "dialogue":
            self.close("say", self.state(world.fact(PLAYER), PLAYER, content.SAY_FRAMES))
            return
        fact = world.fact(NARRATOR)
        people = involved(world.people, fact)
        free = [c for c in world.companions if c.key not in people]
        if 0 not in people and free and rng.random() < DO_SHARE:
            self.close("do", self.state(fact, NARRATOR, content.DO_FRAMES))
        else:
            self.close("story", self.state(fact, NARRATOR, (*content.STORY_FRAMES, "{c}.")))

    def reply_voice(self) -> tuple[Voice, tuple[str, ...]]:
        if self.style == "dialogue" and self.rng.random() < SPEECH_SHARE:
            return Voice(self.rng.choice(self.world.companions).key), content.SPEECH_FRAMES
        return NARRATOR, content.NARRATION_FRAMES

    def reply(self, forced: list[tuple[Fact, Voice, tuple[str, ...]]]) -> int:
        sentences = [self.state(fact, voice, frames) for fact, voice, frames in forced]
        for _ in range(max(0, self.rng.choice(REPLY_FACTS) - len(forced))):
            voice, frames = self.reply_voice()
            sentences.append(self.state(self.world.fact(voice), voice, frames))
        return self.close("narration", " ".join(sentences))

    def opening(self) -> None:
        first, second = (c.first for c in self.world.companions)
        sentences = [f"You set out from {self.world.towns[0]} with {first} and {second}."]
        for _ in range(2):
            sentences.append(self.state(self.world.fact(NARRATOR), NARRATOR, ("{c}.",)))
        self.close("narration", " ".join(sentences))


@dataclass(frozen=True)
class _Hop:
    """A multihop probe's plan: the turns of its two statements and of the question."""

    first: int
    second: int
    probe: int


def _half(window: int) -> int:
    """Turns from a reply to the earliest probe that may ask about it."""
    return math.ceil((window + 2) / 2)


def _plan(rng: random.Random, turns: int, window: int, quotas: dict[str, int]) -> dict[int, str]:
    """Which turn asks which kind of probe (multihop turns excepted: ``_hops``)."""
    earliest = _half(window) + 4
    free = list(range(earliest, turns + 1))
    count = sum(n for kind, n in quotas.items() if kind != "multihop")
    if len(free) < count:
        raise ValueError(f"{2 * turns + 1} actions are too few for a window of {window}")
    chosen = sorted(rng.sample(free, count))
    kinds = [kind for kind, n in quotas.items() if kind != "multihop" for _ in range(n)]
    rng.shuffle(kinds)
    return dict(zip(chosen, kinds, strict=True))


def _hops(rng: random.Random, turns: int, window: int, taken: set[int], n: int) -> list[_Hop]:
    hops: list[_Hop] = []
    gap = math.ceil(MIN_GAP / 2)
    for _ in range(n):
        low = gap + _half(window) + 1
        options = [t for t in range(low, turns + 1) if t not in taken]
        if not options:
            break
        probe = rng.choice(options[len(options) // 3 :] or options)
        second = rng.randint(gap + 1, probe - _half(window))
        first = rng.randint(max(1, second - gap - 8), second - gap)
        taken.add(probe)
        hops.append(_Hop(first, second, probe))
    return hops


def _probe(
    script: _Script, askable: set[str], turn: int, kind: str, window: int
) -> DenseProbe | None:
    """A ``kind`` probe at ``turn`` about an ``askable`` statement far enough back, or None
    (the statement chosen leaves ``askable``)."""
    world, depth = script.world, 2 * turn - 1
    pool = [
        s
        for s in script.statements
        if s.depth <= depth - window - 1 and s.fact in askable and fits(kind, script.facts[s.fact])
    ]
    while pool:
        band = banded(script.rng, [depth - s.depth for s in pool], window)
        s = pool.pop(script.rng.choice(band))
        fact = script.facts[s.fact]
        text = question(world, fact, kind)
        if text is None or set(s.answer) & set(value_words(text)):
            continue
        allowed = names(world.people, fact)
        if kind == "paraphrase" and not shares_only_names(text, s.sentence, allowed):
            continue
        askable.discard(s.fact)
        return DenseProbe(
            s.fact, turn - 1, depth, depth - s.depth, kind, ("say", text), (s,), allowed
        )
    return None


def _chain_probe(script: _Script, hop: _Hop, chain: Chain) -> DenseProbe:
    assert chain.first is not None and chain.second is not None
    by_fact = {s.fact: s for s in script.statements}
    first, second = by_fact[chain.first.key], by_fact[chain.second.key]
    first = replace(first, answer=chain.first_answer())
    t = content.BY_KEY[chain.second.template]
    text = capital(fill(script.world.people, chain.second, t.direct, PLAYER, chain.subject()))
    depth = 2 * hop.probe - 1
    statements = (first, second)
    return DenseProbe(
        second.fact,
        hop.probe - 1,
        depth,
        depth - second.depth,
        "multihop",
        ("say", text),
        statements,
        names(script.world.people, chain.second),
    )


def _assign(
    script: _Script, plan: dict[int, str], chains: list[tuple[_Hop, Chain]], window: int
) -> list[DenseProbe]:
    """Every probe's question and statements; the probe actions take their text."""
    probes = [_chain_probe(script, hop, chain) for hop, chain in chains]
    texts = word_sets([text for _, text in script.actions])
    askable = {s.fact for s in script.statements if unique(texts, s.depth, s.answer)}
    askable -= {s.fact for p in probes for s in p.statements}
    for turn, kind in sorted(plan.items()):
        if kind == "never":
            text = never(script.world)
            probes.append(
                DenseProbe(f"never{turn}", turn - 1, 2 * turn - 1, None, kind, ("say", text))
            )
            continue
        got = _probe(script, askable, turn, kind, window)
        if got is not None:
            probes.append(got)
    for p in probes:
        script.actions[p.depth] = p.question
    return sorted(probes, key=lambda p: p.depth)


def _forced(
    script: _Script, turn: int, chains: list[tuple[_Hop, Chain]]
) -> list[tuple[Fact, Voice, tuple[str, ...]]]:
    out: list[tuple[Fact, Voice, tuple[str, ...]]] = []
    for hop, chain in chains:
        if turn in (hop.first, hop.second):
            voice, frames = script.reply_voice()
            fact = chain.hop1(voice) if turn == hop.first else chain.hop2(voice)
            out.append((fact, voice, frames))
    return out


def generate(
    seed: int, actions: int, window: int = WINDOW, style: str = "narrative", key: str = ""
) -> DenseAdventure:
    """One dense adventure of about ``actions`` actions (see the module docstring)."""
    if style not in STYLES:
        raise ValueError(f"style must be one of {', '.join(STYLES)}; got {style!r}")
    rng = random.Random(f"dense/{seed}/{actions}/{window}/{style}")
    title = rng.choice(TITLES)
    names_ = NameMaker(rng)
    companions = (names_.word(2), names_.word(2))
    world = World(rng, names_, names_.word(2), companions)
    turns = (actions - 1) // 2
    quotas = SHORT_QUOTAS if actions < SHORT else FULL_QUOTAS
    plan = _plan(rng, turns, window, quotas)
    hops = _hops(rng, turns, window, set(plan), quotas["multihop"])
    chains = [(hop, Chain(rng, world)) for hop in hops]
    asking = set(plan) | {hop.probe for hop in hops}
    script = _Script(world, rng, style)
    script.opening()
    for turn in range(1, turns + 1):
        if turn in asking:
            script.close("say", "")  # the probe's question is written once the story is
        else:
            script.player()
        script.reply(_forced(script, turn, chains))
    probes = _assign(script, plan, chains, window)
    key = key or f"{style[0]}{seed}"
    return DenseAdventure(
        key,
        seed,
        window,
        style,
        f"{title} ({key})",
        world.people[0].first,
        companions,
        script.actions[0][1],
        [Turn(script.actions[2 * t - 1], script.actions[2 * t][1]) for t in range(1, turns + 1)],
        script.statements,
        probes,
        script.actions,
        world.people,
        len(script.actions),
        tuple(sorted(names_.used)),
    )
