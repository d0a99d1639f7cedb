"""Who was present, per player character, in a shared adventure (``services.world.party``
and ``witnesses.presence`` with a party): pure, no database.

An action happens where its actor stands; a player character the story never placed
stands with the host's (the lead); the lead is listed where it was and not where it was
not, so one player's private scene is not another's.
"""

from __future__ import annotations

import random

import pytest

from talekeeper.services.world.party import Party, gathered
from talekeeper.services.world.party_view import seen_by
from talekeeper.services.world.projection import PLAYER, Fact, Fold, Ref, project, step
from talekeeper.services.world.witnesses import Step, presence, told_to
from talekeeper.storage.vocabulary import EntityKind, EventKind

pytestmark = pytest.mark.no_database

INN = Ref(1, "the Lamp House", EntityKind.PLACE)
MARKET = Ref(2, "the Salt Market", EntityKind.PLACE)
TAL = Ref(3, "Tal", EntityKind.PERSON)
TOBIN = Ref(4, "Tobin", EntityKind.PERSON)
ISK = Ref(-9, "Isk", EntityKind.PERSON)  # a player character the story has not named
MARA = Ref(PLAYER, "Mara", EntityKind.PERSON)  # the host's character: the lead


def at(depth: int, n: int, kind: EventKind, subject: Ref | None = None, **kw: object) -> Step:
    return depth, Fact(n, 100 + depth, kind, subject, **kw)  # type: ignore[arg-type]


def party(changes: tuple[int, ...] = (), actors: tuple[int, ...] = ()) -> Party:
    return Party(MARA, (TAL, ISK), changes, actors, {TAL.id: TAL, ISK.id: ISK})


def names(refs: tuple[Ref, ...]) -> list[str]:
    return [r.name for r in refs]


# Mara walks into the inn (0) where Tobin is; Tal acts from 2, walks to the market (2) and
# stays there (4); Mara acts again from 6, and Tobin walks to the market at 7.
STEPS = [
    at(0, 1, EventKind.MOVED, object=INN),
    at(0, 2, EventKind.ARRIVED, TOBIN),
    at(2, 3, EventKind.MOVED, TAL, object=MARKET),
    at(7, 4, EventKind.MOVED, TOBIN, object=MARKET),
]
TURNS = party((0, 2, 6), (PLAYER, TAL.id, PLAYER))


def test_an_action_happens_where_its_actor_stands() -> None:
    seen = presence(STEPS, TURNS)
    # Together at first: the lead, the characters never placed, and who is at the inn.
    assert names(seen.at(0)) == ["Mara", "Tal", "Isk", "Tobin"]
    assert names(seen.at(1)) == ["Mara", "Tal", "Isk", "Tobin"]
    # Tal's private scene: at the market, alone; the reply (3) and the next (4, 5) too.
    for depth in (2, 3, 4, 5):
        assert names(seen.at(depth)) == ["Tal"], depth
    # Mara acts again: the inn, without Tal; Tobin leaves for the market at 7.
    assert names(seen.at(6)) == ["Mara", "Isk", "Tobin"]
    assert names(seen.at(7)) == ["Mara", "Isk"]
    assert names(seen.throughout(0, 5)) == ["Tal"]
    assert names(seen.throughout(2, 7)) == []


def test_an_actor_who_left_witnessed_their_own_action_and_who_joins_them_sees_it() -> None:
    fold = Fold()
    for _, fact in [*STEPS, at(8, 5, EventKind.LEFT, TAL)]:
        step(fold, fact)
    assert names(gathered(fold, party(), TAL.id)) == ["Tal"]  # placed nowhere: alone
    assert names(gathered(fold, party(), ISK.id)) == ["Mara", "Isk"]  # never placed: with Mara
    step(fold, at(9, 6, EventKind.MOVED, object=MARKET)[1])  # Mara walks to the market
    step(fold, at(9, 7, EventKind.ARRIVED, TAL, object=MARKET)[1])
    assert names(gathered(fold, party(), PLAYER)) == ["Mara", "Isk", "Tobin", "Tal"]
    assert names(gathered(fold, party(), TAL.id)) == ["Mara", "Isk", "Tobin", "Tal"]
    step(fold, at(10, 8, EventKind.STATUS, ISK, value="dead")[1])
    assert names(gathered(fold, party(), PLAYER)) == ["Mara", "Tobin", "Tal"]


def test_the_state_lists_the_characters_never_placed_with_the_player() -> None:
    state = project((f for _, f in STEPS), None, (TAL, ISK))
    assert names(state.present) == ["Isk"]  # Tal stands at the market, not with Mara
    assert names(project((f for _, f in STEPS[:2]), None, (TAL, ISK)).present) == [
        "Tal",
        "Isk",
        "Tobin",
    ]
    assert project((f for _, f in STEPS[:2]), None).present == (TOBIN,)  # single play


def test_a_dry_run_is_the_leads_turn_and_what_the_lead_learned_is_theirs() -> None:
    dry = TURNS.acting_from(4, PLAYER)
    assert (dry.actor_at(3), dry.actor_at(4), dry.actor_at(9)) == (TAL.id, PLAYER, PLAYER)
    assert TURNS.acting_from(2, PLAYER).changes == (0, 2)
    learned = [at(3, 9, EventKind.LEARNED, None, value="the key is hidden")]
    assert told_to(learned, PLAYER) == ((3, "the key is hidden"),)
    assert told_to(learned, TAL.id) == ()


@pytest.mark.parametrize("seed", range(30))
def test_the_lead_alone_sees_as_single_play_does_and_is_listed_first(seed: int) -> None:
    """With nobody else in the party and the lead acting throughout, who is present at
    each action is single play's, with the lead first; the actor's changes are noted
    wherever they fall, even between events."""
    rng = random.Random(seed)
    people, places = (TAL, TOBIN), (INN, MARKET)
    steps: list[Step] = []
    for depth in range(rng.randint(1, 25)):
        for _ in range(rng.randint(0, 2)):
            kind = rng.choice((EventKind.MOVED, EventKind.ARRIVED, EventKind.LEFT))
            who = None if kind is EventKind.MOVED and rng.random() < 0.5 else rng.choice(people)
            steps.append(at(depth, len(steps), kind, who, object=rng.choice(places)))
    changes = tuple(sorted(rng.sample(range(30), rng.randint(0, 6))))
    alone = Party(MARA, (), changes, tuple(PLAYER for _ in changes))
    single, shared = presence(steps), presence(steps, alone)
    first = min([*(d for d, _ in steps), *changes], default=0)
    for depth in range(first, 32):
        assert shared.at(depth) == (MARA, *single.at(depth)), (seed, depth)


def test_a_turn_is_shown_as_its_actor_stands() -> None:
    """What a world model is shown of a turn (``party_view.seen_by``): the host's view for
    the host; a member with the host sees the host's place and the host among those
    there; a member elsewhere sees their own place and carries their own things."""
    key = Ref(5, "the key", EntityKind.ITEM)
    facts = [f for _, f in STEPS[:2]]  # Mara and Tobin at the inn; Tal and Isk never placed
    together = project(facts, None, (TAL, ISK), "Mara")
    assert seen_by(together, None) == ("the Lamp House", ("Tal", "Isk", "Tobin"), ())
    assert seen_by(together, "Tal") == ("the Lamp House", ("Mara", "Isk", "Tobin"), ())
    apart = project(
        [*facts, STEPS[2][1], Fact(9, 103, EventKind.TOOK, TAL, key)], None, (TAL, ISK), "Mara"
    )
    assert seen_by(apart, "Tal") == ("the Salt Market", (), ("the key",))
    assert seen_by(apart, "Mara") == ("the Lamp House", ("Isk", "Tobin"), ())
