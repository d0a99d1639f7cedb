"""Who knows what beyond the Memories (docs/world.md, "Who knows what"): the secret cards
and the Current state's entries a turn addressing someone marks or leaves out, read from
the events the state was folded from."""

from __future__ import annotations

import pytest

from talekeeper.services.cards.rules import CardView, FiredCard
from talekeeper.services.world.knowing import Handling, Witness
from talekeeper.services.world.knowing_world import cards_note, cards_shown, setters, state_shown
from talekeeper.services.world.projection import Fact, Ref, project
from talekeeper.services.world.witnesses import Step, presence
from talekeeper.storage.vocabulary import EntityKind, EventKind, WitnessMode

pytestmark = pytest.mark.no_database

MARA, TOBIN = Ref(1, "Mara", EntityKind.PERSON), Ref(2, "Tobin", EntityKind.PERSON)
KEY, ROPE = Ref(3, "brass key", EntityKind.ITEM), Ref(4, "rope", EntityKind.ITEM)
HEIR, MAP = Ref(5, "Find the heir", EntityKind.QUEST), Ref(6, "Sell the map", EntityKind.QUEST)
PORT = Ref(7, "the port", EntityKind.PLACE)


def fact(id_: int, kind: EventKind, **roles: object) -> Fact:
    return Fact(id_, id_, kind, **roles)  # type: ignore[arg-type]


# Tobin is away from action 3 to action 6; the player takes the key at 4 (he is away), the
# rope at 7 (he is back); the heir quest opens at 4 and the map quest at 4 and ends at 7.
STEPS: list[Step] = [
    (0, fact(1, EventKind.MOVED, object=PORT)),
    (0, fact(2, EventKind.ARRIVED, subject=MARA, object=PORT)),
    (0, fact(3, EventKind.ARRIVED, subject=TOBIN, object=PORT)),
    (3, fact(4, EventKind.LEFT, subject=TOBIN)),
    (4, fact(5, EventKind.TOOK, object=KEY, evidence="You pocket the brass key.")),
    (4, fact(6, EventKind.QUEST, object=HEIR, value="opened")),
    (4, fact(7, EventKind.QUEST, object=MAP, value="opened")),
    (6, fact(8, EventKind.ARRIVED, subject=TOBIN, object=PORT)),
    (7, fact(9, EventKind.TOOK, object=ROPE)),
    (7, fact(10, EventKind.QUEST, object=MAP, value="done")),
]
STATE = project([f for _, f in STEPS], 7)


def knowing(who: Ref = TOBIN, mode: WitnessMode = WitnessMode.LABEL, **more: object) -> Witness:
    """A turn addressing ``who`` over the steps above."""
    return Witness(
        mode, who, "vocative", who.name, presence(STEPS), setters=setters(STEPS, ()), **more
    )  # type: ignore[arg-type]


def test_what_tobin_was_away_for_is_marked_and_a_closed_quest_is_not_looked_at() -> None:
    shown, marks = state_shown(STATE, knowing())
    assert [r.name for r in shown.inventory] == ["brass key (Tobin was not there)", "rope"]
    assert [(q.name, q.state) for q in shown.quests] == [
        ("Find the heir (Tobin was not there)", "opened"),
        ("Sell the map", "done"),  # done: the Current state does not show it
    ]
    assert [(m.event_id, m.entry, m.handling, m.why) for m in marks] == [
        (5, "brass key", Handling.LABELLED, "absent at action 4"),
        (6, "Find the heir", Handling.LABELLED, "absent at action 4"),
    ]
    assert STATE.inventory[0].name == "brass key"  # the state given is not changed
    assert state_shown(STATE, knowing(MARA)) == (STATE, ())

    strict, marks = state_shown(STATE, knowing(mode=WitnessMode.STRICT))
    assert [r.name for r in strict.inventory] == ["rope"]
    assert [q.name for q in strict.quests] == ["Sell the map"]
    assert {m.handling for m in marks} == {Handling.WITHHELD}
    assert state_shown(STATE, knowing(mode=WitnessMode.OFF)) == (STATE, ())
    assert state_shown(STATE, Witness()) == (STATE, ())


def test_a_telling_counts_from_its_action_on_and_a_secret_outweighs_presence() -> None:
    told_later = knowing(told=((5, "the brass key"),))
    assert [m.event_id for m in state_shown(STATE, told_later)[1]] == [6]
    told_before = knowing(told=((2, "the brass key"),))  # before he was away: not of this
    assert [m.event_id for m in state_shown(STATE, told_before)[1]] == [5, 6]
    secret = knowing(event_secrets={9: ["Mara"], 5: ["Tobin"]})
    shown, marks = state_shown(STATE, secret)
    assert [(m.event_id, m.why) for m in marks] == [  # what is carried, then the quests
        (9, "a secret: known only to Mara and you"),
        (6, "absent at action 4"),
    ]
    assert [r.name for r in shown.inventory] == ["brass key", "rope (a secret Tobin was not told)"]


def test_an_event_kept_but_not_applied_is_never_the_one_an_entry_is_there_by() -> None:
    assert setters(STEPS, ())[("holder", KEY.id)] == STEPS[4]
    assert ("holder", KEY.id) not in setters(STEPS, (5,))


def card(id_: int, name: str, known_by: tuple[str, ...] | None) -> FiredCard:
    view = CardView(id=id_, name=name, type="other", keywords=("x",), entry="", known_by=known_by)
    return FiredCard(view, "x", None)


def test_only_a_secret_card_not_theirs_is_marked_and_strict_leaves_it_out() -> None:
    cards = [card(1, "Cache", ("Mara",)), card(2, "Harbour", None), card(3, "Debt", ("Tobin",))]
    kept, marks = cards_shown(cards, knowing())
    assert kept == cards
    assert [(m.card_id, m.handling, m.why) for m in marks] == [
        (1, Handling.LABELLED, "a secret: known only to Mara and you")
    ]
    assert cards_note("Tobin", marks) == "(Tobin was not told what these Story Cards say: Cache.)"
    kept, marks = cards_shown(cards, knowing(mode=WitnessMode.STRICT))
    assert [f.card.id for f in kept] == [2, 3] and cards_note("Tobin", marks) == ""
    assert [m.card_id for m in cards_shown(cards, knowing(MARA))[1]] == [3]
    assert cards_shown(cards, Witness()) == (cards, ())
