"""The world's projection (``services.world.projection``) and its names
(``services.world.names``): pure functions, no database.

A fold's rules: where the player is, who is here, what the player carries, statuses,
time and quests; and that the same events give the same state, and a prefix of them the
state at that earlier action.
"""

from __future__ import annotations

import random

import pytest

from talekeeper.core.errors import InvalidInput
from talekeeper.services.world.names import clean_name, key_of, told_shorter, trailing
from talekeeper.services.world.projection import Fact, Override, Quest, Ref, Why, explicit, project
from talekeeper.storage.vocabulary import EntityKind, EventKind, EventOrigin

pytestmark = pytest.mark.no_database

HARBOUR = Ref(1, "the Harbour", EntityKind.PLACE)
LIGHTHOUSE = Ref(2, "the Lighthouse", EntityKind.PLACE)
MARA = Ref(3, "Mara", EntityKind.PERSON)
TOBIN = Ref(4, "Tobin", EntityKind.PERSON)
KEY = Ref(5, "the brass key", EntityKind.ITEM)
LAMP = Ref(6, "a lamp", EntityKind.ITEM)
BELL = Ref(7, "The Drowned Bell", EntityKind.QUEST)


def fact(
    n: int, kind: EventKind, subject: Ref | None = None, obj: Ref | None = None, **kw: object
) -> Fact:
    return Fact(n, 100 + n, kind, subject, obj, **kw)  # type: ignore[arg-type]


STORY = [
    fact(1, EventKind.MOVED, obj=HARBOUR),
    fact(2, EventKind.ARRIVED, MARA),
    fact(3, EventKind.ARRIVED, TOBIN, HARBOUR),
    fact(4, EventKind.TOOK, obj=KEY),
    fact(5, EventKind.TOOK, obj=LAMP),
    fact(6, EventKind.GAVE, obj=LAMP, target=MARA),
    fact(7, EventKind.TIME, value="dusk"),
    fact(8, EventKind.QUEST, obj=BELL, value="opened"),
]


def test_the_fold_says_where_the_player_is_who_is_here_and_what_they_carry() -> None:
    state = project(STORY, 108)
    assert state.at_action == 108
    assert state.location == HARBOUR
    assert state.present == (MARA, TOBIN)  # in the order they came
    assert state.inventory == (KEY,)  # the lamp went to Mara
    assert state.time == "dusk"
    assert state.quests == (Quest("The Drowned Bell", "opened"),)
    assert BELL not in state.entities and {MARA, KEY, HARBOUR} <= set(state.entities)


def test_moving_on_leaves_the_others_behind_and_a_death_takes_someone_out() -> None:
    moved = [
        *STORY,
        fact(9, EventKind.MOVED, obj=LIGHTHOUSE),
        fact(10, EventKind.MOVED, MARA, LIGHTHOUSE),
    ]
    state = project(moved, None)
    assert state.location == LIGHTHOUSE and state.present == (MARA,)
    dead = project([*moved, fact(11, EventKind.STATUS, MARA, value="dead")], None)
    assert dead.present == () and dead.statuses == {MARA.id: "dead"}
    left = project([*STORY, fact(9, EventKind.LEFT, TOBIN)], None)
    assert left.present == (MARA,)


def test_items_are_dropped_only_by_their_holder_and_used_up_for_good() -> None:
    state = project([*STORY, fact(9, EventKind.DROPPED, MARA, KEY)], None)
    assert state.inventory == (KEY,)  # Mara never held it
    state = project([*STORY, fact(9, EventKind.DROPPED, obj=KEY)], None)
    assert state.inventory == ()
    state = project(
        [*STORY, fact(9, EventKind.USED_UP, obj=KEY), fact(10, EventKind.TOOK, obj=LAMP)], None
    )
    assert state.inventory == (LAMP,)
    state = project([*STORY, fact(9, EventKind.GAVE, MARA, LAMP)], None)  # back to the player
    assert state.inventory == (KEY, LAMP)


def test_the_state_at_an_earlier_action_is_the_fold_of_the_events_up_to_it() -> None:
    rng = random.Random(7)
    kinds = list(EventKind)
    refs = [HARBOUR, LIGHTHOUSE, MARA, TOBIN, KEY, LAMP, BELL, None]
    facts = [
        fact(
            n,
            rng.choice(kinds),
            rng.choice(refs),
            rng.choice(refs),
            value=rng.choice([None, "dead", "done", "noon"]),
        )
        for n in range(1, 200)
    ]
    whole = project(facts, None)
    assert project(list(facts), None) == whole  # the same events, the same state
    for cut in (0, 1, 50, 120):
        assert project(facts[:cut], None) == project(iter(facts[:cut]), None)
    assert project([], None).location is None and project([], None).inventory == ()


def test_names_match_across_case_articles_titles_and_width() -> None:
    assert key_of("The Brass Key") == key_of("brass key") == key_of("  BRASS   KEY ")
    assert key_of("Captain Mara") == key_of("mara")
    assert key_of("Ｍａｒａ") == key_of("Mara")  # full-width letters (NFKC)
    assert key_of("The") == "the"  # a lone article is a name
    assert key_of("明") != key_of("暗") and key_of("明") == "明"  # no case: never folded away
    assert key_of("Ольга") == key_of("ОЛЬГА") != key_of("Олег")
    assert key_of("!!!") == ""


def test_a_name_is_cleaned_and_refused_when_it_names_nothing_or_is_too_long() -> None:
    assert clean_name("  the\tbrass\u200b key\n") == "the brass key"
    assert clean_name("Ｍａｒａ") == "Mara"
    with pytest.raises(InvalidInput, match="letter or digit"):
        clean_name("\x00\x1b\x07 \u200b", "subject")
    with pytest.raises(InvalidInput, match="at most 120"):
        clean_name("x" * 121)


PLAYER, RULES, MODEL = EventOrigin.PLAYER, EventOrigin.RULES, EventOrigin.MODEL
CELLAR = Ref(8, "the cellar", EntityKind.PLACE)


def on(action: int, n: int, kind: EventKind, **kw: object) -> Fact:
    """Event ``n`` on action ``action`` (several events may share one)."""
    return Fact(n, action, kind, **kw)  # type: ignore[arg-type]


def test_a_derived_event_of_the_players_own_action_never_undoes_the_players_event() -> None:
    # The player says they hold the key; an edit re-derives the action's events after it.
    mine = on(1, 1, EventKind.TOOK, object=KEY, origin=PLAYER)
    derived = on(1, 2, EventKind.DROPPED, object=KEY, origin=RULES, evidence="You drop it.")
    state = project([mine, derived], 1)
    assert state.inventory == (KEY,)
    assert state.why == {2: Why.HELD} and state.ignored == (2,)
    assert state.overrides == ()


def test_a_later_explicit_event_changes_the_players_fact_and_is_named() -> None:
    mine = on(1, 1, EventKind.MOVED, object=CELLAR, origin=PLAYER)
    said = on(2, 2, EventKind.MOVED, object=HARBOUR, evidence="You walk to the Harbour.")
    state = project([mine, said], 2)
    assert state.location == HARBOUR
    assert state.overrides == (Override(event_id=2, player_event_id=1),)
    # The hold is released: the next derived move needs no more than any other.
    guess = on(3, 3, EventKind.MOVED, object=LIGHTHOUSE, origin=MODEL, evidence="Time passes.")
    assert project([mine, said, guess], 3).location == LIGHTHOUSE


def test_a_models_guess_does_not_change_what_the_player_set() -> None:
    mine = on(1, 1, EventKind.MOVED, object=CELLAR, origin=PLAYER)
    guess = on(2, 2, EventKind.MOVED, object=HARBOUR, origin=MODEL, evidence="You go up.")
    stated = on(
        3, 3, EventKind.MOVED, object=HARBOUR, origin=MODEL, evidence="You reach the harbour."
    )
    assert not explicit(guess) and explicit(stated)
    held = project([mine, guess], 2)
    assert held.location == CELLAR and held.why == {2: Why.HELD} and held.overrides == ()
    changed = project([mine, guess, stated], 3)
    assert changed.location == HARBOUR and changed.overrides == (Override(3, 1),)
    # Without a player's event at that coordinate, a model's event needs no more than that.
    assert project([guess], 2).location == HARBOUR


def test_an_event_that_changes_nothing_the_player_set_leaves_the_hold() -> None:
    mine = on(1, 1, EventKind.TOOK, object=KEY, origin=PLAYER)
    theirs = on(2, 2, EventKind.DROPPED, subject=MARA, object=KEY, evidence="Mara drops it.")
    guess = on(3, 3, EventKind.DROPPED, object=KEY, origin=MODEL, evidence="Your hands are empty.")
    state = project([mine, theirs, guess], 3)
    assert state.inventory == (KEY,)  # Mara never held it; the guess names no key
    assert state.overrides == () and state.why == {3: Why.HELD}


def test_explicit_reads_names_in_any_script_and_whole_words_only() -> None:
    town = Ref(9, "Новгород", EntityKind.PLACE)
    assert explicit(
        on(1, 1, EventKind.MOVED, object=town, origin=MODEL, evidence="Вы входите в НОВГОРОД.")
    )
    inn = Ref(10, "the Inn", EntityKind.PLACE)
    assert not explicit(on(1, 1, EventKind.MOVED, object=inn, origin=MODEL, evidence="Innocent."))
    time = on(1, 1, EventKind.TIME, value="dawn", origin=MODEL, evidence="At dawn, you wake.")
    assert explicit(time)


def test_a_name_told_shorter_is_its_last_words_never_part_of_a_word() -> None:
    assert told_shorter(key_of("the vial"), key_of("the glass vial"))
    assert told_shorter(key_of("Old Maren"), key_of("Maren"))
    assert not told_shorter("key", "monkey")
    assert not told_shorter("vial", "vial")  # the same key is not told shorter
    assert not told_shorter("glass", "glass vial")  # first words are not the thing
    assert trailing("old glass vial") == ["glass vial", "vial"]
    assert trailing("vial") == []
