"""A reply that refuses what the player tried (``services.world.refusal``) and how the fold
takes it (``projection``): pure functions, no database."""

from __future__ import annotations

import pytest

from talekeeper.services.world.projection import Fact, Ref, project
from talekeeper.services.world.refusal import REFUSED, refusals
from talekeeper.storage.vocabulary import EntityKind, EventKind

pytestmark = pytest.mark.no_database

REFUSED_CASES = [
    (
        "pocket the copper compass",
        "The compass is fixed fast to the wall, and it will not come free.",
    ),
    ("make for Varn", "The gate of Varn is locked, so you go no further."),
    ("go to the Salt Market", "You set out for the market, but the storm drives you back."),
    ("take the rope", "You do not take the rope."),
    ("enter the inn", "You set out for the Drowned Bell, but the storm drives you back."),
]


@pytest.mark.parametrize(("tried", "reply"), REFUSED_CASES)
def test_a_reply_that_says_no_to_the_thing_tried_refuses_it(tried: str, reply: str) -> None:
    found = refusals(tried, reply)
    assert [(f.kind, f.value) for f in found] == [(found[0].kind, REFUSED)]
    assert found[0].kind in (EventKind.TOOK, EventKind.MOVED)
    assert found[0].evidence in reply


@pytest.mark.parametrize(
    ("tried", "reply"),
    [
        ("take the rope", "You almost drop the lantern."),  # a hedge is no refusal
        ("take the rope", "The gate is locked."),  # says no, of something else
        ("take the rope", "You coil the rope over your shoulder."),  # names it, says no no
        ("look around", "Nothing is here and the door is locked."),  # nothing was tried
        ("take the key", "You are not sure about the monkey."),  # a word is not a name
        ("take the rope", "The storm drives you back."),  # turned back: a going, not a taking
    ],
)
def test_a_reply_refuses_nothing_it_does_not_say_no_to(tried: str, reply: str) -> None:
    assert refusals(tried, reply) == []


HERE = Ref(1, "the harbour", EntityKind.PLACE)
VARN = Ref(2, "Varn", EntityKind.PLACE)
ROPE = Ref(3, "the rope", EntityKind.ITEM)
MARA = Ref(4, "Mara", EntityKind.PERSON)


def test_the_fold_undoes_a_refused_change_where_it_still_stands() -> None:
    went = [Fact(1, 10, EventKind.MOVED, object=HERE), Fact(2, 11, EventKind.MOVED, object=VARN)]
    refused = Fact(3, 12, EventKind.MOVED, object=VARN, value=REFUSED)
    assert project([*went, refused], 12).location == HERE
    took = [
        Fact(4, 13, EventKind.TOOK, subject=MARA, object=ROPE),
        Fact(5, 14, EventKind.TOOK, object=ROPE),
    ]
    state = project([*took, Fact(6, 15, EventKind.TOOK, object=ROPE, value=REFUSED)], 15)
    assert state.inventory == ()  # back with Mara, who held it before
    # A refusal of a change that no longer stands changes nothing.
    later = [*went, Fact(7, 13, EventKind.MOVED, object=HERE), refused]
    assert project(later, 13).location == HERE
    assert project([Fact(8, 10, EventKind.TOOK, object=ROPE, value=REFUSED)], 10).inventory == ()
