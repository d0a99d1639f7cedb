"""Who saw what (``services.world.witnesses``): pure, no database.

Those present at an action are those the projection shows present after its events; a
memory's witnesses are those present at every action of its source stretch. A path that
changes (undo, retry, fork) changes them, since they are only ever derived from it.
"""

from __future__ import annotations

import random

import pytest

from talekeeper.services.world.projection import Fact, Ref, project
from talekeeper.services.world.refusal import REFUSED
from talekeeper.services.world.unsure import UNSURE
from talekeeper.services.world.witnesses import Presence, Step, presence
from talekeeper.storage.vocabulary import EntityKind, EventKind, EventOrigin

pytestmark = pytest.mark.no_database

HARBOUR = Ref(1, "the Harbour", EntityKind.PLACE)
LIGHTHOUSE = Ref(2, "the Lighthouse", EntityKind.PLACE)
MARA = Ref(3, "Mara", EntityKind.PERSON)
TOBIN = Ref(4, "Tobin", EntityKind.PERSON)
RHYS = Ref(5, "Captain Rhys", EntityKind.PERSON)
KEY = Ref(6, "the brass key", EntityKind.ITEM)


def step(depth: int, n: int, kind: EventKind, subject: Ref | None = None, **kw: object) -> Step:
    """Event ``n`` on the action of ``depth`` (its id is 100 + depth)."""
    return depth, Fact(n, 100 + depth, kind, subject, **kw)  # type: ignore[arg-type]


# The Harbour at depth 0 with Mara; Tobin comes at 2; Rhys comes at 3 and leaves at 5.
OPENING = [
    step(0, 1, EventKind.MOVED, object=HARBOUR),
    step(0, 2, EventKind.ARRIVED, MARA),
    step(2, 3, EventKind.ARRIVED, TOBIN),
    step(3, 4, EventKind.ARRIVED, RHYS),
    step(5, 5, EventKind.LEFT, RHYS),
]


def names(refs: tuple[Ref, ...]) -> list[str]:
    return [r.name for r in refs]


def test_present_at_an_action_is_after_its_own_events() -> None:
    seen = presence(OPENING)
    assert names(seen.at(0)) == ["Mara"]
    assert names(seen.at(1)) == ["Mara"]  # an action with no events: as before it
    assert names(seen.at(2)) == ["Mara", "Tobin"]  # Tobin arrives in it: he saw it
    assert names(seen.at(4)) == ["Mara", "Tobin", "Captain Rhys"]
    assert names(seen.at(5)) == ["Mara", "Tobin"]  # Rhys leaves in it: he did not
    assert names(seen.at(40)) == ["Mara", "Tobin"]
    assert presence([]) == Presence((), ()) and presence([]).at(3) == ()
    before = presence([step(2, 1, EventKind.MOVED, object=HARBOUR)])
    assert before.at(0) == () and before.at(1) == ()


def test_a_memory_is_witnessed_by_those_present_throughout_its_stretch() -> None:
    seen = presence(OPENING)
    assert names(seen.throughout(0, 1)) == ["Mara"]
    assert names(seen.throughout(0, 5)) == ["Mara"]  # Tobin came in the middle
    assert names(seen.throughout(2, 5)) == ["Mara", "Tobin"]  # ... and was there from 2 on
    assert names(seen.throughout(3, 4)) == ["Mara", "Tobin", "Captain Rhys"]
    assert names(seen.throughout(3, 5)) == ["Mara", "Tobin"]  # Rhys left at its end
    assert names(seen.throughout(4, 4)) == names(seen.at(4))


def test_the_dead_and_those_left_behind_witness_nothing() -> None:
    died = presence([*OPENING, step(6, 6, EventKind.STATUS, TOBIN, value="dead")])
    assert names(died.at(6)) == ["Mara"] and names(died.throughout(2, 6)) == ["Mara"]
    assert names(died.throughout(2, 5)) == ["Mara", "Tobin"]  # before he died
    moved = presence([*OPENING, step(6, 6, EventKind.MOVED, object=LIGHTHOUSE)])
    assert moved.at(6) == () and moved.throughout(5, 6) == ()  # the player went on alone
    back = presence(
        [
            *OPENING,
            step(6, 6, EventKind.MOVED, object=LIGHTHOUSE),
            step(7, 7, EventKind.MOVED, object=HARBOUR),
        ]
    )
    assert names(back.at(7)) == ["Mara", "Tobin"]
    assert back.throughout(5, 7) == ()  # away at 6: not there throughout
    lost = presence([*OPENING, step(6, 6, EventKind.MOVED, object=LIGHTHOUSE, value=UNSURE)])
    assert lost.at(6) == ()  # where the player is is unknown: nobody is known to be there


def test_a_fork_keeps_its_own_witnesses_and_undo_and_retry_change_them() -> None:
    shared = OPENING[:3]  # depths 0-2
    main = presence([*shared, step(3, 10, EventKind.ARRIVED, RHYS)])
    fork = presence([*shared, step(3, 20, EventKind.LEFT, MARA)])
    assert names(main.at(3)) == ["Mara", "Tobin", "Captain Rhys"]
    assert names(fork.at(3)) == ["Tobin"]
    assert main.at(2) == fork.at(2)  # the shared past saw the same people
    assert names(fork.throughout(0, 3)) == [] and names(main.throughout(0, 3)) == ["Mara"]

    undone = presence(OPENING[:4])  # the action at 5, where Rhys left, undone
    assert names(undone.at(5)) == ["Mara", "Tobin", "Captain Rhys"]
    retried = presence([*OPENING[:4], step(5, 30, EventKind.LEFT, MARA)])  # another take
    assert names(retried.at(5)) == ["Tobin", "Captain Rhys"]
    assert names(retried.throughout(3, 5)) == ["Tobin", "Captain Rhys"]


def test_the_players_word_holds_for_witnesses_as_for_the_state() -> None:
    # The player says Mara left; the same action's reading that she is here is held back.
    held = presence(
        [
            *OPENING[:2],
            step(1, 3, EventKind.LEFT, MARA, origin=EventOrigin.PLAYER),
            step(1, 4, EventKind.ARRIVED, MARA),
        ]
    )
    assert held.at(1) == ()


PEOPLE = (MARA, TOBIN, RHYS)


def random_step(rng: random.Random, depth: int, n: int) -> Step:
    who = rng.choice(PEOPLE)
    where = rng.choice((HARBOUR, LIGHTHOUSE))
    origin = rng.choice((EventOrigin.RULES, EventOrigin.RULES, EventOrigin.PLAYER))
    kinds = [
        (EventKind.MOVED, {"object": where}),
        (EventKind.MOVED, {"object": where, "value": rng.choice((UNSURE, REFUSED))}),
        (EventKind.MOVED, {"subject": who, "object": where}),
        (EventKind.ARRIVED, {"subject": who}),
        (EventKind.LEFT, {"subject": who}),
        (EventKind.STATUS, {"subject": who, "value": rng.choice(("dead", "wounded"))}),
        (EventKind.TOOK, {"object": KEY}),
    ]
    kind, roles = rng.choice(kinds)
    return depth, Fact(n, 100 + depth, kind, origin=origin, **roles)  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", range(40))
def test_presence_at_each_depth_is_the_projections_at_that_depth(seed: int) -> None:
    rng = random.Random(seed)
    steps: list[Step] = []
    for depth in range(rng.randint(1, 30)):
        steps += [random_step(rng, depth, len(steps)) for _ in range(rng.randint(0, 3))]
    seen = presence(steps)
    for depth in range(-1, 32):
        expected = project((f for d, f in steps if d <= depth), None).present
        assert seen.at(depth) == expected, (seed, depth)
    for first in range(30):
        for last in range(first, 31):
            everyone = [set(seen.at(d)) for d in range(first, last + 1)]
            assert set(seen.throughout(first, last)) == set.intersection(*everyone)
