"""A seeded generator of long adventures with planted facts and late probes (issue 6, item 1).

An ``Adventure`` is a script of operations for the real engine: turns (a player
action, ``do`` or ``say``, then the narrator's scripted reply), one undo and one
fork. Facts (``facts.py``) are planted at known actions and asked about by probe
actions long after they left the history window. Invariants (tests check them):

- **Seeded.** ``generate(seed, actions, window)`` depends on nothing else: the
  same arguments give the same script, word for word.
- **Depths are known.** Depth 0 is the opening; a turn writes the player action
  at depth d+1 and the reply at d+2; ``Undo(k)`` removes the newest k actions;
  ``Fork(d)`` continues on a new branch whose path is the path up to depth d.
  ``planted[key]`` is the depth of the action whose text holds the fact's
  sentence, ``Probe.depth`` that of the probe action. The final path holds
  ``actions`` actions (the opening included), give or take one.
- **Probes lie beyond the window.** Every probe of a planted fact is at least
  ``window + 1`` actions after the fact (``Probe.distance``).
- **Honesty probes.** Each adventure also asks about facts never planted
  (role "never"), about a fact planted and then undone before anything else was
  built on it ("undone": planted, five more turns so the memory pass covers it,
  then twelve actions undone), and about a fact planted on the main branch that a
  fork made just before it leaves behind ("forked"). Neither of the last two is on
  the path when it is asked about.
- **One event per turn**; planted facts lie at least ``SPACING`` turns apart, so
  no memory block of 6 actions holds two of them.
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass, field

from benchmarks.recall.facts import CAST_SHARE, KINDS, Draw, Fact, make_fact
from benchmarks.recall.prose import SETTINGS, Cast, NameMaker, Setting, narration, opening
from benchmarks.recall.prose import player_action as filler_action

WINDOW = 40  # actions: a probe is asked at least this far past its fact
SPACING = 4  # turns between two planted facts (8 actions: never one memory block)
FACTS_PER_TURNS = 9  # one planted fact per this many turns of the path
MIN_FACTS = 3
NEVER_PROBES = 2  # probes about facts never planted, per adventure
EPISODE_TURNS = 5  # filler turns after the undone/forked fact, so a memory covers it
UNDO_ACTIONS = 2 * (EPISODE_TURNS + 1)  # undo the fact's turn and everything after it
DEFAULT_SEED = 2024
DEFAULT_COUNT = 6
MIN_ACTIONS, MAX_ACTIONS = 100, 300


@dataclass(frozen=True)
class Turn:
    player: tuple[str, str]  # (type, text)
    reply: str
    plants: str | None = None  # the fact this turn states
    probe: str | None = None  # the fact this turn's player action asks about


@dataclass(frozen=True)
class Undo:
    actions: int


@dataclass(frozen=True)
class Fork:
    depth: int  # the new branch's path is the path up to and including this depth


Op = Turn | Undo | Fork


@dataclass(frozen=True)
class Probe:
    fact: str
    op: int  # index of the probe's turn in ``ops``
    depth: int  # the probe action's depth
    distance: int | None  # actions from the planted action; None for a fact never planted


@dataclass
class Adventure:
    key: str
    seed: int
    window: int
    setting: Setting
    cast: Cast
    opening: str
    ops: list[Op] = field(default_factory=list)
    facts: dict[str, Fact] = field(default_factory=dict)
    planted: dict[str, int] = field(default_factory=dict)
    probes: list[Probe] = field(default_factory=list)
    length: int = 1  # actions on the final path, the opening included

    @property
    def title(self) -> str:
        return f"{self.setting.title} ({self.key})"


@dataclass
class _Plan:
    """Which path turn carries which event (turns are numbered 1..turns on the final path)."""

    turns: int
    undo_at: int
    fork_at: int
    plants: dict[int, str] = field(default_factory=dict)
    probes: dict[int, str] = field(default_factory=dict)

    def free(self, turn: int) -> bool:
        return turn not in self.plants and turn not in self.probes and turn not in self.episodes

    @property
    def episodes(self) -> set[int]:
        return {self.undo_at, self.fork_at}


def _gap(window: int) -> int:
    """Turns from a planted turn to its earliest probe: 2·gap − 1 actions > window."""
    return window // 2 + 2


def _choose_plants(rng: random.Random, plan: _Plan, count: int, gap: int) -> list[int]:
    chosen: list[int] = []
    candidates = list(range(2, plan.turns - gap + 1))
    rng.shuffle(candidates)
    for turn in candidates:
        if len(chosen) >= count:
            break
        near = [*chosen, *plan.episodes]
        if plan.free(turn) and all(abs(turn - other) >= SPACING for other in near):
            chosen.append(turn)
    return sorted(chosen)


def _probe_turn(rng: random.Random, plan: _Plan, earliest: int) -> int | None:
    free = [t for t in range(earliest, plan.turns + 1) if plan.free(t)]
    return rng.choice(free) if free else None


def _plan(rng: random.Random, actions: int, window: int, keys: list[str]) -> _Plan:
    """Place the events on the path; ``keys`` receives the planted facts' keys in order."""
    turns = (actions - 1) // 2
    gap = _gap(window)
    if turns < 2 * gap + 2:
        raise ValueError(f"{actions} actions are too few for a window of {window}")
    undo_at = rng.randint(max(8, turns // 4), max(8, turns // 3))
    fork_at = min(rng.randint(turns * 2 // 5, turns // 2), turns - gap - 1)
    fork_at = max(fork_at, undo_at + SPACING)
    plan = _Plan(turns, undo_at, fork_at)
    for key, start in (("undone", undo_at), ("forked", fork_at)):
        probe = _probe_turn(rng, plan, start + gap)
        if probe is not None:
            plan.probes[probe] = key
    count = max(MIN_FACTS, turns // FACTS_PER_TURNS)
    for turn in _choose_plants(rng, plan, count, gap):
        probe = _probe_turn(rng, plan, turn + gap)
        if probe is None:
            continue
        key = f"f{len(keys) + 1}"
        keys.append(key)
        plan.plants[turn] = key
        plan.probes[probe] = key
    for n in range(NEVER_PROBES):
        probe = _probe_turn(rng, plan, gap)
        if probe is not None:
            plan.probes[probe] = f"never{n + 1}"
    return plan


def _facts(rng: random.Random, draw: Draw, plan: _Plan, keys: list[str]) -> dict[str, Fact]:
    taken: set[str] = set()
    facts: dict[str, Fact] = {}
    kinds = list(KINDS)
    rng.shuffle(kinds)
    wanted = [(k, "planted") for k in keys] + [("undone", "undone"), ("forked", "forked")]
    wanted += [(k, "never") for k in sorted(plan.probes.values()) if k.startswith("never")]
    for i, (key, role) in enumerate(wanted):
        # A fact to be left behind has a companion in it, so the bank surely holds it first
        # (the extractive writer keeps a card's name): the honesty check is never vacuous.
        draw.cast_share = 1.0 if role in ("undone", "forked") else CAST_SHARE
        for j in range(len(kinds)):  # a kind whose subjects ran out gives way to the next
            try:
                facts[key] = make_fact(draw, kinds[(i + j) % len(kinds)], key, role, taken)
                break
            except ValueError:
                continue
    draw.cast_share = CAST_SHARE
    return facts


def _planted_turn(adv: Adventure, rng: random.Random, fact: Fact) -> Turn:
    setting, cast = adv.setting, adv.cast
    if fact.in_player:
        first = fact.subject
        reply = f"{first} holds your gaze for a long moment, then nods. " + narration(
            rng, setting, cast, 300
        )
    else:
        before = narration(rng, setting, cast, 160)
        after = narration(rng, setting, cast, 160)
        reply = f"{before} {fact.sentence} {after}"
    return Turn(fact.lead, reply, plants=fact.key)


def _filler(adv: Adventure, rng: random.Random) -> Turn:
    return Turn(filler_action(rng, adv.setting, adv.cast), narration(rng, adv.setting, adv.cast))


class _Writer:
    """Appends operations and keeps the depth of the path's head."""

    def __init__(self, adv: Adventure) -> None:
        self.adv = adv
        self.head = 0

    def turn(self, turn: Turn) -> None:
        adv = self.adv
        if turn.plants is not None:
            fact = adv.facts[turn.plants]
            adv.planted[fact.key] = self.head + (1 if fact.in_player else 2)
        if turn.probe is not None:
            planted = adv.planted.get(turn.probe)
            distance = None if planted is None else self.head + 1 - planted
            adv.probes.append(Probe(turn.probe, len(adv.ops), self.head + 1, distance))
        adv.ops.append(turn)
        self.head += 2

    def undo(self, actions: int) -> None:
        self.adv.ops.append(Undo(actions))
        self.head -= actions

    def fork(self, depth: int) -> None:
        self.adv.ops.append(Fork(depth))
        self.head = depth


def _episode(w: _Writer, rng: random.Random, key: str) -> None:
    """Plant ``key``, play on until a memory covers it, then leave it behind."""
    start = w.head
    w.turn(_planted_turn(w.adv, rng, w.adv.facts[key]))
    for _ in range(EPISODE_TURNS):
        w.turn(_filler(w.adv, rng))
    if key == "undone":
        w.undo(UNDO_ACTIONS)
    else:
        w.fork(start)


def generate(seed: int, actions: int, window: int = WINDOW, key: str = "") -> Adventure:
    """One adventure of about ``actions`` actions on its final path (see module docstring)."""
    rng = random.Random(seed)
    setting = rng.choice(SETTINGS)
    names = NameMaker(rng)
    companions = (names.word(2), names.word(2))
    pronouns = (rng.choice(("his", "her")), rng.choice(("his", "her")))
    cast = Cast(names.word(2), companions, pronouns)
    adv = Adventure(key or f"s{seed}", seed, window, setting, cast, opening(setting, cast))
    keys: list[str] = []
    plan = _plan(rng, actions, window, keys)
    adv.facts = _facts(rng, Draw(rng, setting, cast, names), plan, keys)
    w = _Writer(adv)
    for turn in range(1, plan.turns + 1):
        if turn == plan.undo_at:
            _episode(w, rng, "undone")
        elif turn == plan.fork_at:
            _episode(w, rng, "forked")
        if turn in plan.plants:
            w.turn(_planted_turn(adv, rng, adv.facts[plan.plants[turn]]))
        elif turn in plan.probes:
            fact = adv.facts[plan.probes[turn]]
            reply = narration(rng, setting, cast)
            w.turn(Turn(fact.question, reply, probe=fact.key))
        else:
            w.turn(_filler(adv, rng))
    adv.length = w.head + 1
    return adv


def default_set(
    seed: int = DEFAULT_SEED, count: int = DEFAULT_COUNT, window: int = WINDOW
) -> list[Adventure]:
    """``count`` adventures whose lengths spread evenly over 100-300 actions."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        low = MIN_ACTIONS + (MAX_ACTIONS - MIN_ACTIONS) * i // count
        high = MIN_ACTIONS + (MAX_ACTIONS - MIN_ACTIONS) * (i + 1) // count
        out.append(generate(seed * 100 + i, rng.randint(low, high), window, key=f"a{i + 1}"))
    return out


def render(adv: Adventure) -> str:
    """The script as text, for reading."""
    lines = [f"# {adv.title}: {adv.length} actions, window {adv.window}", "", adv.opening]
    for op in adv.ops:
        if isinstance(op, Turn):
            tag = (
                f" [plants {op.plants}]"
                if op.plants
                else f" [probes {op.probe}]"
                if op.probe
                else ""
            )
            lines += [f"> {op.player[0]}: {op.player[1]}{tag}", op.reply]
        else:
            lines.append(f"-- {op}")
    lines.append("")
    for fact in adv.facts.values():
        lines.append(
            f"{fact.key} {fact.kind} ({fact.role}) at {adv.planted.get(fact.key)}: {fact.sentence}"
        )
    for probe in adv.probes:
        lines.append(f"probe {probe.fact} at {probe.depth}, distance {probe.distance}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Print one generated adventure.")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--actions", type=int, default=150)
    parser.add_argument("--window", type=int, default=WINDOW)
    args = parser.parse_args(argv)
    print(render(generate(args.seed, args.actions, args.window)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
