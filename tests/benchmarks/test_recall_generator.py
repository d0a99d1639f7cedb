"""The recall benchmark's generator: seeded, facts where it says, probes beyond the window."""

from __future__ import annotations

import random

import pytest
from benchmarks.recall.facts import ANSWER_WORDS, KINDS, states, words
from benchmarks.recall.generator import (
    MAX_ACTIONS,
    MIN_ACTIONS,
    SPACING,
    Adventure,
    Fork,
    Turn,
    Undo,
    default_set,
    generate,
    render,
)
from benchmarks.recall.prose import SETTINGS, Cast, narration, player_action

CASES = [(1, 100, 40), (2, 180, 40), (3, 300, 40), (4, 150, 30), (5, 240, 60)]


def replay(adv: Adventure) -> tuple[dict[int, str], dict[str, str], list[str]]:
    """Follow the script as the engine would: the final path (depth -> text), the path's
    text at each planted depth when it was planted, and every text ever written."""
    path: dict[int, str] = {0: adv.opening}
    at_plant: dict[str, str] = {}
    written = [adv.opening]
    for op in adv.ops:
        if isinstance(op, Turn):
            head = max(path)
            path[head + 1], path[head + 2] = op.player[1], op.reply
            written += [op.player[1], op.reply]
            if op.plants is not None:
                at_plant[op.plants] = path[adv.planted[op.plants]]
        elif isinstance(op, Undo):
            for _ in range(op.actions):
                del path[max(path)]
        else:
            assert isinstance(op, Fork)
            for depth in [d for d in path if d > op.depth]:
                del path[depth]
    return path, at_plant, written


@pytest.mark.parametrize(("seed", "actions", "window"), CASES)
def test_the_same_seed_gives_the_same_script(seed: int, actions: int, window: int) -> None:
    assert render(generate(seed, actions, window)) == render(generate(seed, actions, window))
    assert render(generate(seed, actions, window)) != render(generate(seed + 1, actions, window))


@pytest.mark.parametrize(("seed", "actions", "window"), CASES)
def test_facts_are_planted_at_their_depth(seed: int, actions: int, window: int) -> None:
    adv = generate(seed, actions, window)
    path, at_plant, _ = replay(adv)
    assert set(at_plant) == set(adv.planted)
    for key, text in at_plant.items():
        assert adv.facts[key].sentence in text
        assert states(text, adv.facts[key])
    assert abs(len(path) - actions) <= 1 and adv.length == len(path)
    assert sorted(path) == list(range(len(path)))


@pytest.mark.parametrize(("seed", "actions", "window"), CASES)
def test_probes_lie_beyond_the_window(seed: int, actions: int, window: int) -> None:
    adv = generate(seed, actions, window)
    path, _, _ = replay(adv)
    roles = {adv.facts[p.fact].role for p in adv.probes}
    assert {"planted", "never", "undone", "forked"} <= roles
    for probe in adv.probes:
        fact = adv.facts[probe.fact]
        turn = adv.ops[probe.op]
        assert isinstance(turn, Turn) and turn.probe == fact.key and turn.player == fact.question
        assert path[probe.depth] == fact.question[1]  # the probe action is on the final path
        if fact.role == "never":
            assert probe.distance is None and fact.key not in adv.planted
        else:
            assert probe.distance == probe.depth - adv.planted[fact.key] > window


@pytest.mark.parametrize(("seed", "actions", "window"), CASES)
def test_only_the_planting_action_states_a_fact(seed: int, actions: int, window: int) -> None:
    adv = generate(seed, actions, window)
    path, _, written = replay(adv)
    for fact in adv.facts.values():
        stating = [t for t in written if states(t, fact)]
        question = fact.question[1]
        assert not states(question, fact), question
        if fact.role == "never":
            assert stating == []
        else:
            assert len(stating) == 1 and fact.sentence in stating[0]
        on_path = [t for t in path.values() if states(t, fact)]
        assert len(on_path) == (1 if fact.role == "planted" else 0)  # undone, forked: gone


@pytest.mark.parametrize(("seed", "actions", "window"), CASES)
def test_planted_facts_never_share_a_memory_block(seed: int, actions: int, window: int) -> None:
    adv = generate(seed, actions, window)
    depths = sorted(adv.planted[k] for k, f in adv.facts.items() if f.role == "planted")
    assert len(depths) >= 3
    assert all(b - a >= 2 * SPACING - 1 for a, b in zip(depths, depths[1:], strict=False))
    subjects = [f.subject for f in adv.facts.values()]
    assert len(subjects) == len(set(subjects))


def test_filler_never_uses_an_answer_word() -> None:
    rng = random.Random(9)
    for setting in SETTINGS:
        cast = Cast("Mara", ("Pell", "Odo"), ("her", "his"))
        for _ in range(200):
            text = narration(rng, setting, cast) + " " + player_action(rng, setting, cast)[1]
            assert not (words(text) & ANSWER_WORDS), text


def test_the_default_set_spreads_over_100_to_300_actions() -> None:
    adventures = default_set()
    assert len(adventures) == 6
    assert all(MIN_ACTIONS - 1 <= a.length <= MAX_ACTIONS for a in adventures)
    assert [a.length for a in adventures] == sorted(a.length for a in adventures)
    kinds = {f.kind for a in adventures for f in a.facts.values() if f.role == "planted"}
    assert kinds == set(KINDS)


def test_left_behind_facts_have_a_companion_in_them() -> None:
    for seed, actions, window in CASES:
        adv = generate(seed, actions, window)
        for key in ("undone", "forked"):
            fact = adv.facts[key]
            assert fact.cast and any(c in fact.sentence for c in adv.cast.companions)
