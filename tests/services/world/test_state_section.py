"""The Current state section (``services.prompt.state``): a line for each thing the world
knows, nothing for an empty world, and never more than its own budget, measured with the
real tokenizer."""

from __future__ import annotations

import pytest

from talekeeper.core.tokens import BpeCounter
from talekeeper.services.prompt.state import STATE_TOKENS, state_section
from talekeeper.services.world.projection import Fact, Quest, Ref, WorldState, project
from talekeeper.storage.vocabulary import EntityKind, EventKind

pytestmark = pytest.mark.no_database

COUNTER = BpeCounter()


def state(**given: object) -> WorldState:
    fields: dict[str, object] = {
        "at_action": None,
        "location": None,
        "present": (),
        "inventory": (),
        "time": None,
        "quests": (),
        "statuses": {},
        "entities": (),
    }
    fields.update(given)
    return WorldState(**fields)  # type: ignore[arg-type]


def ref(n: int, name: str, kind: EntityKind = EntityKind.PERSON) -> Ref:
    return Ref(n, name, kind)


def test_each_thing_the_world_knows_is_a_line_and_closed_quests_are_left_out() -> None:
    section = state_section(
        state(
            location=ref(1, "Gullreach", EntityKind.PLACE),
            present=(ref(2, "Old Maren"), ref(3, "Captain Rhys")),
            inventory=(ref(4, "the brass key", EntityKind.ITEM),),
            time="at dusk",
            quests=(Quest("The Drowned Bell", "opened"), Quest("The Lost Net", "done")),
        ),
        COUNTER,
    )
    assert section.name == "current_state" and section.reason
    assert section.text.splitlines() == [
        "Location: Gullreach",
        "Present: Old Maren, Captain Rhys",
        "Carrying: the brass key",
        "Time: at dusk",
        "Open quests: The Drowned Bell",
    ]


def test_an_empty_world_is_no_section() -> None:
    assert state_section(state(), COUNTER).text == ""


def test_a_crowded_world_keeps_within_its_budget_dropping_the_last_lines_first() -> None:
    crowd = tuple(ref(n, f"Sailor number {n} of the long crew") for n in range(40))
    kit = tuple(ref(100 + n, f"a coil of rope {n}", EntityKind.ITEM) for n in range(40))
    section = state_section(
        state(location=ref(1, "Gullreach", EntityKind.PLACE), present=crowd, inventory=kit),
        COUNTER,
    )
    assert COUNTER.count(section.text) <= STATE_TOKENS
    assert section.text.splitlines()[0] == "Location: Gullreach"
    huge = state_section(state(location=ref(1, "Harbour " * 300, EntityKind.PLACE)), COUNTER)
    assert 0 < COUNTER.count(huge.text) <= STATE_TOKENS


def test_a_smaller_budget_drops_more_lines_and_says_which() -> None:
    world = state(
        location=ref(1, "Gullreach", EntityKind.PLACE),
        present=(ref(2, "Old Maren"),),
        inventory=(ref(4, "the brass key", EntityKind.ITEM),),
        time="at dusk",
        quests=(Quest("The Drowned Bell", "opened"),),
    )
    whole = state_section(world, COUNTER)
    budget = COUNTER.count("Location: Gullreach\nPresent: Old Maren")
    small = state_section(world, COUNTER, budget)
    assert small.budget == budget and whole.budget == STATE_TOKENS
    assert small.text.splitlines() == ["Location: Gullreach", "Present: Old Maren"]
    assert small.reason.endswith(
        f"; 3 left out for its budget of {budget} tokens: Carrying, Time, Open quests"
    )
    assert "left out" not in whole.reason


def test_where_several_play_each_line_says_whose_and_each_other_character_has_theirs() -> None:
    """The host's character's lines name them; another player character stands with
    them (listed present) or elsewhere (a line for where), with a line for what they
    carry; the state folded from events says so too."""
    market, key = ref(2, "the Salt Market", EntityKind.PLACE), ref(5, "the key", EntityKind.ITEM)
    tal, isk = ref(3, "Tal"), ref(-7, "Isk")
    inn = ref(1, "the Lamp House", EntityKind.PLACE)
    facts = [
        Fact(1, 10, EventKind.MOVED, None, inn),
        Fact(2, 11, EventKind.MOVED, tal, market),
        Fact(3, 11, EventKind.TOOK, tal, key),
    ]
    folded = project(facts, None, (tal, isk), "Mara")
    assert state_section(folded, COUNTER).text.splitlines() == [
        "Mara is at: the Lamp House",
        "Present with Mara: Isk",
        "Tal is at: the Salt Market",
        "Tal carries: the key",
    ]
    gone = project([*facts, Fact(4, 12, EventKind.LEFT, tal)], None, (tal,), "Mara")
    assert "Tal is at: somewhere unknown" in state_section(gone, COUNTER).text
    # One player: the lines as ever, and no line for anyone else.
    alone = project(facts, None)
    assert state_section(alone, COUNTER).text.splitlines() == ["Location: the Lamp House"]
