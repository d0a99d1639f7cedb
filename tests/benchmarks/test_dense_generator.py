"""The dense benchmark's generator: seeded, dense, statements where it says, probes fair."""

from __future__ import annotations

import re

import pytest
from benchmarks.kit.play import Turn
from benchmarks.recall.dense import content
from benchmarks.recall.dense.content import BY_KEY, TEMPLATES
from benchmarks.recall.dense.generator import (
    FULL_QUOTAS,
    MIN_GAP,
    DenseAdventure,
    generate,
)
from benchmarks.recall.dense.measure import words
from benchmarks.recall.dense.run import MAX_ACTIONS, MIN_ACTIONS, PER_SEED, dense_set
from benchmarks.recall.dense.world import value_words

from talekeeper.services.memory.terms import terms

CASES = [
    (1, 150, 40, "narrative"),
    (2, 220, 40, "dialogue"),
    (3, 300, 40, "narrative"),
    (4, 100, 30, "dialogue"),
    (5, 180, 50, "dialogue"),
]
_SLOT = re.compile(r"\{([^{}]+)\}")
ALL = pytest.mark.parametrize(("seed", "actions", "window", "style"), CASES)


def replay(adv: DenseAdventure) -> dict[int, tuple[str, str]]:
    """The path the engine will build from the script: depth -> (type, text)."""
    path = {0: ("narration", adv.opening)}
    for op in adv.ops:
        head = max(path)
        path[head + 1], path[head + 2] = op.player, ("narration", op.reply)
    return path


@ALL
def test_the_same_arguments_give_the_same_script(
    seed: int, actions: int, window: int, style: str
) -> None:
    one, two = generate(seed, actions, window, style), generate(seed, actions, window, style)
    assert one == two
    assert one.actions != generate(seed + 1, actions, window, style).actions


@ALL
def test_every_action_but_a_probe_states_a_fact(
    seed: int, actions: int, window: int, style: str
) -> None:
    adv = generate(seed, actions, window, style)
    path = replay(adv)
    assert abs(len(path) - actions) <= 1 and adv.length == len(path)
    stating = {s.depth for s in adv.statements}
    probes = {p.depth for p in adv.questions}
    assert stating == set(path) - probes
    players = {path[d][0] for d in range(1, len(path), 2) if d not in probes}
    assert players == ({"say"} if style == "dialogue" else {"do", "story"})


@ALL
def test_statements_are_verbatim_at_their_depths(
    seed: int, actions: int, window: int, style: str
) -> None:
    adv = generate(seed, actions, window, style)
    path = replay(adv)
    for s in adv.statements:
        assert s.sentence in path[s.depth][1]
        assert s.answer and set(s.answer) <= words(s.sentence)
        assert not {"you", "your"} & set(s.answer)


@ALL
def test_probes_lie_beyond_the_window(seed: int, actions: int, window: int, style: str) -> None:
    adv = generate(seed, actions, window, style)
    path = replay(adv)
    for p in adv.questions:
        assert adv.ops[p.op] == Turn(p.question, adv.actions[p.depth + 1][1])
        assert path[p.depth] == p.question and p.question[0] == "say"
        if p.kind == "never":
            assert not p.statements and p.distance is None
            continue
        newest = max(s.depth for s in p.statements)
        assert p.distance == p.depth - newest >= window + 1


@ALL
def test_a_probed_answer_is_in_its_statement_alone(
    seed: int, actions: int, window: int, style: str
) -> None:
    """The answer words of a probed statement occur together in no other action (probes
    included), and no probe holds an answer word of what it asks (a multihop probe's first
    statement names the thing that picks out the person: that one may)."""
    adv = generate(seed, actions, window, style)
    path = replay(adv)
    for p in adv.questions:
        for i, s in enumerate(p.statements):
            holders = [d for d, (_, text) in path.items() if set(s.answer) <= words(text)]
            assert holders == [s.depth], (p.question, s)
            if not (p.kind == "multihop" and i == 0):
                assert not set(s.answer) & words(p.question[1]), (p.question, s.answer)


@ALL
def test_paraphrases_share_only_the_names_of_people(
    seed: int, actions: int, window: int, style: str
) -> None:
    adv = generate(seed, actions, window, style)
    paraphrases = [p for p in adv.questions if p.kind == "paraphrase"]
    assert paraphrases
    for p in paraphrases:
        [s] = p.statements
        assert not set(s.answer) & words(p.question[1])
        shared = set(terms(p.question[1])) & set(terms(s.sentence))
        assert shared <= set(terms(" ".join(p.names))), (p.question, s.sentence, p.names)


@ALL
def test_kinds_asked(seed: int, actions: int, window: int, style: str) -> None:
    adv = generate(seed, actions, window, style)
    kinds = [p.kind for p in adv.questions]
    assert set(kinds) == {"direct", "paraphrase", "addressed", "when", "multihop", "never"}
    if actions >= 150:
        assert 12 <= len(kinds) <= 20
        assert all(kinds.count(k) <= n for k, n in FULL_QUOTAS.items())
    for p in adv.questions:
        if p.kind == "when":
            assert p.question[1].startswith("When") and p.statements[0].kind == "date"
        if p.kind == "addressed":
            name, _ = p.question[1].split(", ", 1)
            assert name in adv.companions
            # The companion is everywhere in the story, so their name alone finds nothing.
            mentions = sum(name.lower() in words(text) for _, text in adv.actions)
            assert mentions >= len(adv.actions) // 4


@ALL
def test_multihop_needs_two_statements_far_apart(
    seed: int, actions: int, window: int, style: str
) -> None:
    adv = generate(seed, actions, window, style)
    chains = [p for p in adv.questions if p.kind == "multihop"]
    assert chains
    for p in chains:
        first, second = p.statements
        assert second.depth - first.depth >= MIN_GAP
        # The question describes the person; their name, which the first statement gives,
        # is not in it (nor anything the second statement answers).
        assert first.answer[0] not in words(p.question[1])
        assert not set(second.answer) & words(p.question[1])


@ALL
def test_never_stated_facts_are_never_stated(
    seed: int, actions: int, window: int, style: str
) -> None:
    adv = generate(seed, actions, window, style)
    nevers = [p for p in adv.questions if p.kind == "never"]
    assert nevers
    names = {c: i for i, c in enumerate([adv.protagonist, *adv.companions])}
    for p in nevers:
        found = re.search(r"\b(my|\w+'s) (\w+)\b", p.question[1])
        assert found is not None
        owner, relation = found.groups()
        base = 0 if owner == "my" else names[owner.removesuffix("'s")]
        assert not [x for x in adv.people if x.base == base and x.relation == relation]


def test_templates_keep_their_promises() -> None:
    """A template's answer never occurs in its questions, and a paraphrase differs from the
    statement beyond the people in it (checked on the templates themselves)."""

    def slots(text: str) -> set[str]:
        return {name.removeprefix("a") if name == "aO" else name for name in _SLOT.findall(text)}

    for t in TEMPLATES:
        assert t.answer and set(t.answer) <= slots(t.sentence)
        for q in (t.direct, t.paraphrase):
            assert not set(t.answer) & slots(q)
        if t.paraphrase:
            people = re.compile(r"\{[^}]*\}")
            shared = set(terms(people.sub(" ", t.paraphrase))) & set(
                terms(people.sub(" ", t.sentence))
            )
            assert not shared, (t.key, shared)
    assert BY_KEY["place.lives"].kind == "place"


def test_value_words_occur_nowhere_else() -> None:
    """A word of a value pool is in no other pool, no template, frame, post or relation."""
    pools = {
        "food": content.FOODS,
        "music": content.MUSIC,
        "shop": content.SHOPS,
        "trade": content.TRADES,
        "verdict": content.VERDICTS,
        "adjective": content.ADJECTIVES,
        "noun": content.NOUNS,
        "ordinal": content.ORDINALS,
        "month": content.MONTHS,
    }
    owner: dict[str, set[str]] = {}
    for name, pool in pools.items():
        for value in pool:
            for word in value_words(value):
                owner.setdefault(word, set()).add(name)
    assert all(len(names) == 1 for names in owner.values()), owner
    frames = (
        *content.NARRATION_FRAMES,
        *content.STORY_FRAMES,
        *content.DO_FRAMES,
        *content.SAY_FRAMES,
        *content.SPEECH_FRAMES,
    )
    fixed = [f"{t.sentence} {t.direct} {t.paraphrase}" for t in TEMPLATES]
    fixed += [*frames, *content.ROLES, *content.ROLES.values(), *content.THINGS]
    fixed += [*content.FEMALE_RELATIONS, *content.MALE_RELATIONS, *content.EITHER_RELATIONS]
    elsewhere = words(_SLOT.sub(" ", " ".join(fixed)))
    assert not set(owner) & elsewhere


def test_a_set_mixes_styles_and_sizes() -> None:
    adventures = dense_set(14)
    assert len(adventures) == PER_SEED
    assert {a.style for a in adventures} == {"narrative", "dialogue"}
    for adv in adventures:
        assert MIN_ACTIONS - 1 <= adv.length <= MAX_ACTIONS
    assert sum(len(a.questions) for a in adventures) >= 12 * PER_SEED
