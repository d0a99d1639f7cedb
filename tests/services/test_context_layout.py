"""The ``cache`` layout: a prompt that changes at its end.

Played turn by turn as the engine plays them (each turn's placement is the next turn's
``previous``), with a 1-char = 1-token counter so the budget arithmetic is exact. The
rule under test is the one a model server's prompt cache needs: when nothing floating
changed and the history did not drop, the next prompt starts with the whole of the
previous one; when something changed, the prompt changes only from where it sat.
"""

from __future__ import annotations

import random

import pytest

from talekeeper.core.tokens import CharCounter
from talekeeper.services.endpoints.models import ContextLayout
from talekeeper.services.prompt import placement as placement_record
from talekeeper.services.prompt.context import (
    BuiltContext,
    HistoryEntry,
    Placement,
    Section,
    build_context,
)
from talekeeper.services.prompt.floating import FLOATING_ORDER, HEAD_SECTIONS, MAX_FLOAT_ACTIONS
from talekeeper.services.prompt.history import CHUNK_FRACTION
from talekeeper.services.prompt.sections import SEPARATOR
from talekeeper.storage.models import ContextPlacement

pytestmark = pytest.mark.no_database

C = CharCounter()
CACHE = ContextLayout.CACHE


def fixed(memories: str = "- Mara owes the harbourmaster.", knowledge: str = "") -> list[Section]:
    sections = [
        Section("ai_instructions", "Narrate in second person."),
        Section("plot_essentials", "A port city."),
        Section("story_summary", "You came to Vell to pay a debt."),
        Section("story_cards", "Mara: a smuggler.", "keyword 'Mara'"),
        Section("memories", memories),
    ]
    if knowledge:
        sections.append(Section("knowledge", knowledge))
    return sections


def entries(count: int, start: int = 0) -> list[HistoryEntry]:
    return [
        HistoryEntry(
            100 + depth,
            "player" if depth % 2 else "narrator",
            f"> You act ({depth})." if depth % 2 else f"Something happens at step {depth}.",
            depth,
        )
        for depth in range(start, start + count)
    ]


class Game:
    """Turns of one story: each adds the player's last action and a reply to the history."""

    def __init__(self, budget: int = 10_000, opening: int = MAX_FLOAT_ACTIONS + 1) -> None:
        self.budget = budget
        self.history = entries(opening)
        self.previous: Placement | None = None

    def turn(
        self,
        sections: list[Section] | None = None,
        note: str = "Keep it tense.",
        rebuilt: list[Section] | None = None,
    ) -> BuiltContext:
        depth = len(self.history)
        built = build_context(
            fixed() if sections is None else sections,
            self.history,
            note,
            f"> You act ({depth}).",
            budget=self.budget,
            counter=C,
            layout=CACHE,
            previous=self.previous,
            rebuilt=rebuilt,
        )
        self.previous = built.report.placement
        self.history = self.history + entries(2, depth)  # the action, then the reply
        return built


def common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def test_the_stable_sections_open_the_prompt_and_the_floating_ones_go_before_the_action() -> None:
    state = Section("current_state", "Location: the Vell docks")
    built = Game().turn([*fixed(knowledge="The Vell lighthouse is older than the city."), state])
    assert built.system == (
        "Narrate in second person.\n\n[Plot Essentials]\nA port city.\n\n"
        "[Story Summary]\nYou came to Vell to pay a debt."
    )
    prompt = built.prompt()
    # The Story Cards head the history; the other floating sections follow it, in
    # FLOATING_ORDER, then the action.
    assert prompt.index("[World]") < prompt.index("Something happens at step 0.")
    marks = ["[Author's Note:", "[Memories]", "[Current state]", "[Knowledge]", "> You act (9)."]
    places = [prompt.index(mark) for mark in marks]
    assert places == sorted(places)
    assert prompt.index("Something happens at step 8.") < places[0]
    assert prompt.endswith("> You act (9).")
    assert built.report.layout is CACHE
    placement = built.report.placement
    assert placement is not None
    assert {name: at for name, (at, _) in placement.sections.items()} == {
        name: 0 if name in HEAD_SECTIONS else 9
        for name in FLOATING_ORDER
        if name != "story_cards_new"
    }


def test_a_turn_that_changes_nothing_floating_only_appends_to_the_previous_prompt() -> None:
    game = Game()
    prompts = [game.turn().prompt() for _ in range(MAX_FLOAT_ACTIONS // 2)]
    for before, after in zip(prompts, prompts[1:], strict=False):
        assert after.startswith(before)
        assert len(after) > len(before)


def test_a_changed_section_moves_to_the_end_and_the_ones_before_it_stay() -> None:
    game = Game()
    first = game.turn(fixed(knowledge="The lighthouse is old."))
    second = game.turn(fixed(knowledge="The lighthouse is old."))
    third = game.turn(fixed(knowledge="The customs house burned last spring."))
    assert third.report.placement is not None and first.report.placement is not None
    spots = {n: at for n, (at, _) in third.report.placement.sections.items()}
    assert spots["knowledge"] == third.report.tail_depth == 13
    assert {spots[n] for n in ("authors_note", "memories")} == {9} and spots["story_cards"] == 0
    # The new prompt differs from the previous one only from where the knowledge sat.
    before, after = second.prompt(), third.prompt()
    shared = common_prefix(before, after)
    assert before[:shared].endswith("- Mara owes the harbourmaster." + SEPARATOR)
    assert after[shared:].startswith("> You act (9).")
    assert after.endswith("[Knowledge]\nThe customs house burned last spring.\n\n> You act (13).")
    # Removed, a section changes the prompt from where it sat too.
    fourth = game.turn(fixed(memories="- Mara sold the map."))
    assert fourth.report.placement is not None
    assert set(fourth.report.placement.sections) == {"authors_note", "story_cards", "memories"}
    assert fourth.report.placement.sections["memories"][0] == 15
    assert fourth.report.placement.sections["story_cards"][0] == 0


def test_a_section_left_in_place_too_long_moves_to_the_end() -> None:
    game = Game()
    spots = []
    for _ in range(MAX_FLOAT_ACTIONS):
        built = game.turn()
        assert built.report.placement is not None
        back = built.report.tail_depth - built.report.placement.sections["memories"][0]
        spots.append(back)
    assert max(spots) <= MAX_FLOAT_ACTIONS
    assert spots[0] == 0 and 0 in spots[1:]  # it came back to the end
    assert spots[: MAX_FLOAT_ACTIONS // 2 + 1] == list(range(0, MAX_FLOAT_ACTIONS + 1, 2))


def test_an_overflowing_history_drops_a_chunk_whole_actions_then_only_appends() -> None:
    game = Game(budget=900)
    drops = 0
    previous: BuiltContext | None = None
    for _ in range(40):
        built = game.turn()
        report = built.report
        assert report.used <= report.budget
        assert len(built.prompt()) <= report.budget  # the separators are charged too
        assert report.history_cut is None  # never a part of an action
        if previous is not None:
            placement, before = report.placement, previous.report.placement
            assert placement is not None and before is not None
            if report.history_kept[0] == previous.report.history_kept[0]:
                if placement.sections == before.sections:  # no section went stale
                    assert built.prompt().startswith(previous.prompt())
            else:
                drops += 1
                room = report.budget - report.used  # what the drop left free
                history = next(s for s in report.sections if s.name == "history")
                assert room >= (history.tokens + room) // CHUNK_FRACTION - 40
        previous = built
    # Each drop frees a chunk: several turns only append before the next one.
    assert 3 <= drops <= 40 // 3


def test_with_a_short_history_the_floating_sections_head_it_and_outlast_its_drops() -> None:
    game = Game(budget=420, opening=1)
    built = game.turn()
    prompt = built.prompt()
    # At most MAX_FLOAT_ACTIONS actions of history: the sections go before all of it.
    assert prompt.index("[Memories]") < prompt.index("Something happens at step 0.")
    drops = kept = 0
    previous = built
    for _ in range(12):
        built = game.turn()
        dropped = built.report.history_kept[0] != previous.report.history_kept[0]
        before, after = previous.report.placement, built.report.placement
        assert before is not None and after is not None
        if dropped and after.sections == before.sections:
            drops += 1
            # Older actions went, the sections stayed: the prompt is the same up to the
            # history's new head.
            head = built.history[0].text
            shared = previous.prompt()[: previous.prompt().index(previous.history[0].text)]
            assert built.prompt().startswith(shared)
            assert built.prompt()[len(shared) :].startswith(head)
            kept += 1
        previous = built
    assert drops >= 3 and kept == drops


def test_a_single_action_larger_than_all_the_room_keeps_its_end() -> None:
    long = HistoryEntry(1, "narrator", "Waves. " * 200, 0)
    built = build_context(
        fixed(), [long], "", "> Go.", budget=400, counter=C, layout=CACHE, previous=None
    )
    assert built.report.history_cut == 1
    assert built.history[0].text.endswith("Waves.")
    assert len(built.prompt()) <= 400


def test_a_changed_summary_or_history_start_places_everything_anew() -> None:
    game = Game()
    game.turn()
    game.turn()
    assert game.previous is not None
    kept = game.previous
    # As if the previous prompt had started its history before this one's.
    game.previous = Placement(-5, kept.sections, kept.top)
    built = game.turn()

    def spots(built: BuiltContext) -> dict[str, int]:
        assert built.report.placement is not None
        return {name: at for name, (at, _) in built.report.placement.sections.items()}

    # The cards at the history's head (depth 0), the rest just before the action.
    assert spots(built) == {"story_cards": 0, "authors_note": 13, "memories": 13}
    assert spots(game.turn())["memories"] == 13
    sections = fixed()
    sections[2] = Section("story_summary", "You came to Vell and paid the debt.")
    built = game.turn(sections)  # a new Story Summary
    assert spots(built) == {"story_cards": 0, "authors_note": 17, "memories": 17}


@pytest.mark.parametrize("seed", range(6))
def test_any_game_stays_within_its_budget_and_appends_when_nothing_moved(seed: int) -> None:
    rng = random.Random(seed)
    game = Game(budget=rng.randrange(500, 2500))
    knowledge = "Vell's lighthouse."
    for _ in range(30):
        if rng.random() < 0.3:
            knowledge = rng.choice(["Vell's lighthouse.", "The customs house.", ""])
        memories = rng.choice(["- Mara owes a debt.", "- Mara owes a debt.\n- Oren lies."])
        before = game.previous
        built = game.turn(fixed(memories, knowledge), note=rng.choice(["", "Tense."]))
        assert built.report.used <= built.report.budget
        assert len(built.prompt()) <= built.report.budget
        placement = built.report.placement
        assert placement is not None
        for name, (at, _) in placement.sections.items():
            back = built.report.actions_back(name)
            assert back is not None and 0 <= back <= built.report.tail_depth
            if name in HEAD_SECTIONS:  # heading the history, however long it is
                assert placement.history_start is None or at <= placement.history_start
            else:
                assert back <= MAX_FLOAT_ACTIONS
        if before is not None and before.sections == placement.sections:
            assert before.history_start == placement.history_start


def test_a_placement_survives_its_record_and_odd_or_unknown_records_are_ignored() -> None:
    placement = Placement(4, {"memories": (9, "ab12"), "story_cards": (7, "cd34")}, "ef56")
    row = placement_record.record(12, placement, [3, 1])
    assert (row.action_id, row.version) == (12, placement_record.PLACEMENT_VERSION)
    assert placement_record.read(row) == placement_record.Carried(placement, (3, 1))
    assert placement_record.read(None) is None  # no record: nothing is known

    def odd(**columns: object) -> ContextPlacement:
        fields = {
            "action_id": 12,
            "version": placement_record.PLACEMENT_VERSION,
            "history_start": 4,
            "top_digest": "ef56",
            "floating": '{"memories": [9, "ab12"]}',
            "cards_held": "[3]",
        }
        return ContextPlacement(**(fields | columns))

    assert placement_record.read(odd()) == placement_record.Carried(
        Placement(4, {"memories": (9, "ab12")}, "ef56"), (3,)
    )
    # The cards were not recorded (a placement from a snapshot older than held cards).
    assert placement_record.read(odd(cards_held=None)) == placement_record.Carried(
        Placement(4, {"memories": (9, "ab12")}, "ef56"), None
    )
    # Another version's record, newer or older, is no placement known; so is one that
    # does not parse. None of them raises.
    for version in (0, placement_record.PLACEMENT_VERSION + 1):
        assert placement_record.read(odd(version=version)) is None
    for broken in (
        {"floating": "not json"},
        {"floating": "[1, 2]"},
        {"floating": '{"memories": [9]}'},
        {"floating": '{"memories": ["9", "ab12"]}'},
        {"floating": '{"memories": [true, "ab12"]}'},
        {"cards_held": '{"a": 1}'},
        {"cards_held": '["3"]'},
        {"cards_held": "[3"},
        {"history_start": True},
    ):
        assert placement_record.read(odd(**broken)) is None, broken


def test_the_classic_layout_keeps_every_section_above_the_history() -> None:
    built = build_context(
        fixed(knowledge="Old."),
        entries(9),
        "Keep it tense.",
        "> Go.",
        budget=10_000,
        counter=C,
        layout=ContextLayout.CLASSIC,
    )
    assert "[Memories]" in built.system and "[Knowledge]" in built.system
    assert built.report.placement is None
    prompt = built.prompt()
    # The Author's Note three actions before the end, as before.
    assert prompt.index("[Author's Note:") < prompt.index("Something happens at step 6.")
    assert prompt.index("[Author's Note:") > prompt.index("> You act (5).")


def test_new_cards_go_to_the_end_and_the_held_ones_change_only_when_the_history_moves() -> None:
    game = Game(budget=760)
    mara = Section("story_cards", "Mara: a smuggler.")
    both = Section("story_cards", "Mara: a smuggler.\nOren: a guard of the customs house.")
    oren = Section("story_cards_new", "Oren: a guard of the customs house.")
    rebuilt = [both, Section("story_cards_new", "")]

    def sections(*cards: Section) -> list[Section]:
        return [s for s in fixed() if s.name != "story_cards"] + list(cards)

    first = game.turn(sections(mara), rebuilt=[mara, Section("story_cards_new", "")])
    prompts, rebuilds = [first], []
    for _ in range(12):
        # As the engine does: the cards held are the previous prompt's section.
        held = (mara, oren) if not rebuilds else (both,)
        built = game.turn(sections(*held), rebuilt=rebuilt)
        before = prompts[-1]
        moved = built.report.history_kept[0] != before.report.history_kept[0]
        # Rebuilt exactly on the turns whose history's head moved: the whole history is
        # evaluated again then anyway.
        assert built.report.rebuilt == moved
        text = built.prompt()
        if built.report.rebuilt:
            rebuilds.append(built)
            assert "[World]\nMara: a smuggler.\nOren: a guard" in text
            assert text.count("Oren: a guard") == 1
        elif not rebuilds:
            # Held as it was, heading the history; the new card near the end.
            head = text.index("[World]\nMara: a smuggler.\n\n")
            assert head < text.index(built.history[0].text) < text.rindex("[World]\nOren")
            assert text.startswith(before.prompt()[: before.prompt().index("[Author's Note")])
        prompts.append(built)
    assert rebuilds, "the game must drop older actions at least once"
    # Once rebuilt, the held section has both and no new-cards section is needed.
    after = rebuilds[-1].report.placement
    assert after is not None and "story_cards_new" not in after.sections


def test_a_rebuild_keeps_the_drop_that_called_for_it() -> None:
    """Held cards and newly fired ones overflow the history, so it drops a chunk and the
    cards heading it are brought up to date, smaller: the dropped actions are not taken
    back, or the whole history would be evaluated again for no room freed, and again on
    the next turn, when it overflows once more."""
    game = Game(budget=900)
    held = Section("story_cards", "Mara: a smuggler who owes the harbourmaster. " * 3)
    new = Section("story_cards_new", "Oren: a guard of the customs house, who is bribed. " * 3)
    small = Section("story_cards", "Mara: a smuggler.")
    rebuilt = [small, Section("story_cards_new", "")]
    sections = [s for s in fixed() if s.name != "story_cards"] + [held, new]
    before = game.turn(sections, rebuilt=rebuilt)
    rebuilds = 0
    for _ in range(30):
        built = game.turn(sections, rebuilt=rebuilt)
        if built.report.rebuilt:
            rebuilds += 1
            assert built.report.history_kept[0] != before.report.history_kept[0]
        before = built
    assert rebuilds, "the game must overflow at least once"
