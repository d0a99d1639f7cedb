"""When the rules lose track of where the player is (``services.world.unsure``): a sentence
that takes the player toward a known place in words no pattern reads makes the location
unknown, never wrong, and never undoes the player's own word. Pure: no database."""

from __future__ import annotations

import pytest

from talekeeper.services.world import rules
from talekeeper.services.world.derive import Written, derive_all
from talekeeper.services.world.projection import Fact, Ref, explicit, project
from talekeeper.services.world.unsure import UNSURE, unsure, unsure_items
from talekeeper.storage.vocabulary import EntityKind, EventKind, EventOrigin

pytestmark = pytest.mark.no_database

PLACES = ["the old mill", "Varn", "the Salt Market"]


def read(text: str, places: list[str] = PLACES) -> list[tuple[str | None, str | None]]:
    found = rules.derive("narration", text)
    return [(d.object, d.value) for d in unsure(text, places, found)]


@pytest.mark.parametrize(
    ("text", "place"),
    [
        ("Your boots carry you down into Varn.", "Varn"),
        ("Weary, you trudge on through the Salt Market.", "the Salt Market"),
        ("The cart rattles you toward the mill.", "the old mill"),  # told shorter
        ("My feet wander, and I come at length to the old mill.", "the old mill"),
    ],
)
def test_a_going_toward_a_known_place_in_unread_words_is_unsure(text: str, place: str) -> None:
    assert read(text) == [(place, UNSURE)]


@pytest.mark.parametrize(
    "text",
    [
        "You walk into Varn.",  # read by the rules: a going, not an unsure one
        "You will go to Varn tomorrow.",  # a plan
        "You cannot get through to Varn.",  # a denial
        "Should you go to Varn?",  # a question
        "Mara walks to Varn alone.",  # not the player
        "You picture Varn as it was when you were a child.",  # no word of direction
        '"Come to Varn with me," Mara says.',  # speech
        "You ride toward Gullreach.",  # a place the story does not know yet
    ],
)
def test_anything_else_is_not_unsure(text: str) -> None:
    assert read(text) == []


def test_a_short_name_two_places_share_names_neither() -> None:
    places = ["the north gate", "the south gate"]
    assert read("You drift toward the gate.", places) == []
    assert read("You drift toward the north gate.", places) == [("the north gate", UNSURE)]


MILL = Ref(1, "the old mill", EntityKind.PLACE)
VARN = Ref(2, "Varn", EntityKind.PLACE)


def moved(n: int, place: Ref, value: str | None = None, **kw: object) -> Fact:
    return Fact(n, 100 + n, EventKind.MOVED, None, place, value=value, **kw)  # type: ignore[arg-type]


def test_an_unsure_going_makes_the_location_unknown_until_a_read_one() -> None:
    assert project([moved(1, MILL), moved(2, VARN, UNSURE)], 102).location is None
    assert project([moved(1, MILL), moved(2, VARN, UNSURE), moved(3, VARN)], 103).location == VARN


def test_an_unsure_going_to_where_the_player_stands_changes_nothing() -> None:
    assert project([moved(1, VARN), moved(2, VARN, UNSURE)], 102).location == VARN


def test_an_unsure_going_never_undoes_where_the_player_said_they_are() -> None:
    mine = moved(1, MILL, origin=EventOrigin.PLAYER)
    guess = moved(2, VARN, UNSURE)
    assert not explicit(guess)
    state = project([mine, guess], 102)
    assert state.location == MILL and state.overrides == () and guess.id in state.ignored


def test_an_import_reads_unsure_goings_as_play_does() -> None:
    story = [
        Written(1, "narration", "You walk into Varn."),
        Written(2, "do", "walk into the old mill"),
        Written(3, "narration", "Your boots carry you back toward Varn."),
    ]
    found = derive_all(story)
    events = [(e.action, e.kind, found.things[e.object - 1].name, e.value) for e in found.events]
    assert events == [
        (1, EventKind.MOVED, "Varn", None),
        (2, EventKind.MOVED, "the old mill", None),
        (3, EventKind.MOVED, "Varn", UNSURE),
    ]


ITEMS, PEOPLE = ["the brass lantern", "the iron key"], ["Hob", "Captain Rhys"]


def holdings(text: str) -> list[tuple[EventKind, str | None, str | None]]:
    found = rules.derive("narration", text)
    return [(d.kind, d.object, d.value) for d in unsure_items(text, ITEMS, PEOPLE, found)]


def test_someone_known_handling_a_known_item_in_unread_words_is_unsure() -> None:
    assert holdings("Hob weighs the lantern in his hand and keeps it.") == [
        (EventKind.DROPPED, "the brass lantern", UNSURE)
    ]
    assert holdings("Rhys turns the iron key over, then the brass lantern.") == [
        (EventKind.DROPPED, "the brass lantern", UNSURE),
        (EventKind.DROPPED, "the iron key", UNSURE),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Hob takes the lantern.",  # read by the rules
        "Hob eyes the lantern but does not reach for it.",  # a denial
        "Will Hob want the lantern?",  # a question
        "You polish the lantern.",  # no one else
        "Hob waves from the door.",  # no item
        '"Give me the lantern," Hob says.',  # speech
        "Hob admires the copper kettle.",  # an item the story does not know
    ],
)
def test_anything_else_leaves_the_holder_alone(text: str) -> None:
    assert holdings(text) == []


LANTERN = Ref(3, "the brass lantern", EntityKind.ITEM)
HOB = Ref(4, "Hob", EntityKind.PERSON)


def test_an_unsure_holding_takes_the_item_out_of_what_the_player_carries_only() -> None:
    took = Fact(1, 101, EventKind.TOOK, None, LANTERN)
    guess = Fact(2, 102, EventKind.DROPPED, None, LANTERN, value=UNSURE)
    assert project([took, guess], 102).inventory == ()
    hobs = Fact(1, 101, EventKind.TOOK, HOB, LANTERN)
    assert project([hobs, guess], 102).inventory == ()  # Hob's lantern is still Hob's
    mine = Fact(1, 101, EventKind.TOOK, None, LANTERN, origin=EventOrigin.PLAYER)
    assert project([mine, guess], 102).inventory == (LANTERN,)  # the player's word stands
