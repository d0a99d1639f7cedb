"""A seeded generator of dense adventures: every action states facts, probes ask long after.

``generate(seed, actions, window, style)`` writes a script for the real engine
(``Turn`` operations of ``benchmarks.recall.generator``; no undo or fork) in one
of two styles: ``narrative`` (the player acts with ``do`` and ``story``
actions, the narrator tells) or ``dialogue`` (the player ``say``s, the
companions answer, two friends catching up over months). Invariants (the tests
check every one):

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
  ``never`` (a fact never stated).
"""

from __future__ import annotations

import argparse
import math
import random
from dataclasses import dataclass, field, replace

from benchmarks.recall.dense.content import (
    BY_KEY,
    DO_FRAMES,
    NARRATION_FRAMES,
    SAY_FRAMES,
    SPEECH_FRAMES,
    STORY_FRAMES,
)
from benchmarks.recall.dense.probes import (
    Chain,
    banded,
    capital,
    fits,
    names,
    never,
    question,
    shares_only_names,
    unique,
    word_sets,
)
from benchmarks.recall.dense.world import (
    NARRATOR,
    PLAYER,
    Fact,
    Person,
    Voice,
    World,
    fill,
    value_words,
)
from benchmarks.recall.dense.world import involved as involved_in
from benchmarks.recall.generator import Adventure, Probe, Turn
from benchmarks.recall.prose import SETTINGS, Cast, NameMaker

WINDOW = 40  # actions: a probe is asked at least this far past what it needs
MIN_GAP = 12  # actions between the two statements of a multihop probe
STYLES = ("narrative", "dialogue")
REPLY_FACTS = (2, 3, 3, 4)  # facts per narrator reply, drawn
SPEECH_SHARE = 0.75  # in a dialogue reply, sentences a companion says (the rest narrated)
DO_SHARE = 0.4  # in the narrative style, player actions that are ``do`` (the rest ``story``)
FULL_QUOTAS = {"direct": 4, "paraphrase": 4, "addressed": 4, "when": 3, "multihop": 3, "never": 2}
SHORT_QUOTAS = {"direct": 2, "paraphrase": 2, "addressed": 2, "when": 2, "multihop": 1, "never": 1}
SHORT = 150  # adventures shorter than this get the short quotas


@dataclass(frozen=True)
class Statement:
    fact: str
    kind: str  # the fact's kind (content.KINDS)
    depth: int
    sentence: str  # verbatim in the action at ``depth``
    answer: tuple[str, ...]


@dataclass(frozen=True)
class DenseProbe(Probe):
    kind: str = ""  # direct, paraphrase, addressed, when, multihop, never
    question: tuple[str, str] = ("say", "")
    statements: tuple[Statement, ...] = ()
    names: tuple[str, ...] = ()  # the words naming the people asked about (paraphrase check)
    addressed: str = ""  # the companion an addressed probe opens with


@dataclass
class DenseAdventure(Adventure):
    style: str = "narrative"
    statements: list[Statement] = field(default_factory=list)
    questions: list[DenseProbe] = field(default_factory=list)
    actions: list[tuple[str, str]] = field(default_factory=list)  # (type, text) by depth
    people: list[Person] = field(default_factory=list)
    dense_facts: dict[str, Fact] = field(default_factory=dict)


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
        clause = fill(world.people, fact, BY_KEY[fact.template].sentence, voice)
        busy = involved_in(world.people, fact)
        free = [c.first for c in world.companions if c.key not in busy]
        speech = frames is SPEECH_FRAMES
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
            self.close("say", self.state(world.fact(PLAYER), PLAYER, SAY_FRAMES))
            return
        fact = world.fact(NARRATOR)
        people = involved_in(world.people, fact)
        free = [c for c in world.companions if c.key not in people]
        if 0 not in people and free and rng.random() < DO_SHARE:
            self.close("do", self.state(fact, NARRATOR, DO_FRAMES))
        else:
            self.close("story", self.state(fact, NARRATOR, (*STORY_FRAMES, "{c}.")))

    def reply_voice(self) -> tuple[Voice, tuple[str, ...]]:
        if self.style == "dialogue" and self.rng.random() < SPEECH_SHARE:
            return Voice(self.rng.choice(self.world.companions).key), SPEECH_FRAMES
        return NARRATOR, NARRATION_FRAMES

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
    t = BY_KEY[chain.second.template]
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
    setting = rng.choice(SETTINGS)
    names_ = NameMaker(rng)
    companions = (names_.word(2), names_.word(2))
    world = World(rng, names_, names_.word(2), companions)
    pronouns = tuple("her" if c.gender == "f" else "his" for c in world.companions)
    cast = Cast(world.people[0].first, companions, (pronouns[0], pronouns[1]))
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
    adv = DenseAdventure(
        key or f"{style[0]}{seed}",
        seed,
        window,
        setting,
        cast,
        script.actions[0][1],
        style=style,
        statements=script.statements,
        questions=probes,
        actions=script.actions,
        people=world.people,
        dense_facts=script.facts,
    )
    by_turn = {p.op + 1: p for p in probes}
    for turn in range(1, turns + 1):
        player, reply = script.actions[2 * turn - 1], script.actions[2 * turn][1]
        probe = by_turn.get(turn)
        adv.ops.append(Turn(player, reply, probe=probe.fact if probe else None))
    adv.length = len(script.actions)
    return adv


def render(adv: DenseAdventure) -> str:
    """The script as text, for reading: each action with its depth, the probes after."""
    lines = [f"# {adv.title}: {adv.length} actions, {adv.style}, window {adv.window}", ""]
    probes = {p.depth: p for p in adv.questions}
    for depth, (type_, text) in enumerate(adv.actions):
        tag = f"  [{probes[depth].kind} probe]" if depth in probes else ""
        lines.append(f"{depth:>4} {type_}: {text}{tag}")
    lines.append("")
    for p in adv.questions:
        lines.append(f"probe {p.kind} at {p.depth} (distance {p.distance}): {p.question[1]}")
        for s in p.statements:
            lines.append(f"    {s.depth}: {s.sentence}  -> {' '.join(s.answer)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Print one generated dense adventure.")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--actions", type=int, default=200)
    parser.add_argument("--window", type=int, default=WINDOW)
    parser.add_argument("--style", choices=STYLES, default="narrative")
    args = parser.parse_args(argv)
    print(render(generate(args.seed, args.actions, args.window, args.style)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
