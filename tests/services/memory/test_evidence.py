"""Evidence keys: which passages of a source block become keys, how a memory is scored by its
best key, and how the passages fit the Memories budget (hand-made inputs, exact results)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from talekeeper.core.tokens import CharCounter
from talekeeper.services.memory.arrays import Bank, BankRow, lineage_mask
from talekeeper.services.memory.bank import terms_of
from talekeeper.services.memory.base import (
    CarriedPassage,
    MatchedKey,
    Retrieval,
    UsedMemory,
)
from talekeeper.services.memory.evidence import (
    MAX_KEYS,
    MIN_KEY_TERMS,
    names,
    passages,
    said,
    sentences,
    stated,
)
from talekeeper.services.memory.keyset import KeyInput
from talekeeper.services.memory.ranking import rank
from talekeeper.services.memory.scoring import (
    FUSION_K,
    PASSAGE_CHOICES,
    SOURCE_WEIGHT,
    WEIGHTS,
    Stage,
)
from talekeeper.services.memory.terms import terms
from talekeeper.services.prompt.budgets import MEMORY_SLOT_FLOOR, MEMORY_SLOT_TOKENS
from talekeeper.services.prompt.context import HistoryEntry, Section, build_context
from talekeeper.services.prompt.inputs import memory_budget

pytestmark = pytest.mark.no_database

# -- passages ------------------------------------------------------------------------------


def test_sentences_keep_their_closing_quote_and_split_on_lines() -> None:
    text = 'You say "Tal sold me the mare." Mira laughs!\nIt rains. Is it late?'
    assert sentences(text) == [
        'You say "Tal sold me the mare."',
        "Mira laughs!",
        "It rains.",
        "Is it late?",
    ]


def test_a_title_or_an_initial_does_not_end_a_sentence() -> None:
    text = "His brother-in-law, Mr. Hurst, looked the gentleman. J. R. Tull met Mrs. Long."
    assert sentences(text) == [
        "His brother-in-law, Mr. Hurst, looked the gentleman.",
        "J. R. Tull met Mrs. Long.",
    ]
    # "I" and "A" are words; a line break is a break whatever came before it.
    assert sentences("It was I. Then Mr.\nDarcy came.") == ["It was I.", "Then Mr.", "Darcy came."]


def test_short_sentences_join_their_neighbours_and_never_stand_alone() -> None:
    block = [(3, "Yes. He nods. Tal's sister moved to Harrow in March. Fine.")]
    got = passages(block)
    assert [p.text for p in got] == ["Yes. He nods. Tal's sister moved to Harrow in March. Fine."]
    assert all(len(terms(p.text)) >= MIN_KEY_TERMS for p in got)
    long = [(4, "Tal's sister moved to Harrow in March. The mill burned down in the spring.")]
    assert [p.text for p in passages(long)] == [
        "Tal's sister moved to Harrow in March.",
        "The mill burned down in the spring.",
    ]


def test_a_short_sentence_that_states_something_is_a_key_of_its_own() -> None:
    # Four words, three terms: joined to the next sentence, half of the passage's vector
    # would be about a spindle, and "who is Hivura's daughter?" would pass it by.
    block = [(7, "Pozoll is Hivura's daughter. Sugork bought a pewter spindle at the fair.")]
    assert [p.text for p in passages(block)] == [
        "Pozoll is Hivura's daughter.",
        "Sugork bought a pewter spindle at the fair.",
    ]
    # Terms, not words, are counted: stop words say nothing of their own.
    assert [p.text for p in passages([(8, "He is not here at all. Tal sold the mare.")])] == [
        "He is not here at all. Tal sold the mare."
    ]


def test_every_passage_is_a_key_and_those_the_memory_states_are_marked() -> None:
    block = [
        (5, "Tal sold you the grey mare at the fair."),
        (6, "Tal's sister Edda keeps bees behind the chapel."),
    ]
    got = passages(block)
    assert [(p.depth, p.text) for p in got] == block
    assert got[1].terms == frozenset({"tal", "sister", "edda", "keep", "bees", "behind", "chapel"})
    memory = "Tal sold Mara the grey mare at the fair."
    assert [stated(p.text, memory) for p in got] == [True, False]


def test_a_passage_names_the_terms_of_its_capitalised_words() -> None:
    got = passages(
        [
            (
                2,
                "The blacksmith at Zabreen is called Toen Godend. "
                "It rains hard on O'Hara's old roof.",
            )
        ]
    )
    assert [p.names for p in got] == [
        frozenset({"zabreen", "toen", "godend"}),
        frozenset({"o'hara"}),
    ]
    # stop words are no names, however they are written
    assert names("You and The Old Mill met ÉMILE at dawn") == frozenset({"old", "mill", "émile"})
    assert names("nobody here is named") == frozenset()


def test_a_block_yields_at_most_max_keys_in_story_order() -> None:
    block = [(d, f"Captain number {d} counted {d} barrels on the quay.") for d in range(100)]
    got = passages(block)
    assert len(got) == MAX_KEYS
    assert [p.depth for p in got] == list(range(MAX_KEYS))


# -- ranking by the best key -----------------------------------------------------------------


def _row(id_: int, vector: list[float], terms: tuple[str, ...] = ()) -> BankRow:
    return BankRow(id_, 1, id_, np.array(vector, np.float32), False, False, frozenset(terms))


def _key(id_: int, memory: int, vector: list[float], terms: tuple[str, ...] = ()) -> KeyInput:
    return KeyInput(id_, memory, 100 + id_, np.array(vector, np.float32), frozenset(terms))


def test_a_memory_wins_through_a_passage_its_text_does_not_state() -> None:
    bank = Bank.build(
        [_row(1, [1, 0, 0]), _row(2, [0, 1, 0])],
        3,
        keys=[_key(10, 1, [0, 0, 1], ("harrow",)), _key(11, 2, [0.6, 0.8, 0])],
    )
    query = np.array([0, 0, 1], np.float32)
    got = rank(bank, lineage_mask(bank, [(1, None)]), query, None, ["harrow"], 2)
    top = got.chosen[0]
    assert (top.id, top.key, top.key_depth) == (1, 10, 110)
    assert top.semantic == pytest.approx(1.0)
    assert top.lexical == pytest.approx(1.0)
    # the final score is the winning key's; the text's own score is kept beside it
    assert top.final == pytest.approx(1.0 + WEIGHTS.lexical)
    assert top.own_final == pytest.approx(0.0)
    # memory 2: its own text (cos 0) against its key (cos 0 too): the text wins the tie
    second = got.chosen[1]
    assert (second.id, second.key, second.own_final) == (2, None, None)


def _unit(v: list[float]) -> np.ndarray:
    x = np.array(v, np.float64)
    return x / np.linalg.norm(x)


def test_the_order_fuses_the_text_ranking_and_the_passage_ranking() -> None:
    texts = {1: [1.0, 0.0], 2: [0.0, 1.0], 3: [0.8, 0.6]}
    passages_ = {2: [1.0, 0.05], 3: [0.95, 0.312]}
    bank = Bank.build(
        [_row(i, v) for i, v in texts.items()],
        2,
        keys=[_key(10 * i, i, v) for i, v in passages_.items()],
    )
    query = np.array([1.0, 0.0])
    got = rank(bank, lineage_mask(bank, [(1, None)]), query, None, [], 3).chosen
    own = {i: float(_unit(v) @ query) for i, v in texts.items()}
    final = {
        i: max(own[i], float(_unit(passages_[i]) @ query)) if i in passages_ else own[i]
        for i in texts
    }
    text_place = {i: 1 + sum(own[j] > own[i] for j in own) for i in own}
    key_place = {i: 1 + sum(final[j] > final[i] for j in final) for i in final}
    assert (text_place, key_place) == ({1: 1, 3: 2, 2: 3}, {1: 1, 2: 2, 3: 3})
    for s in got:
        assert (s.text_rank, s.key_rank) == (text_place[s.id], key_place[s.id])
        fused = 1 / (FUSION_K + text_place[s.id]) + SOURCE_WEIGHT / (FUSION_K + key_place[s.id])
        assert s.fused == pytest.approx(fused)
        assert s.final == pytest.approx(final[s.id], abs=1e-6)
    # 2 and 3 tie on the fused score (third and second, second and third): the higher final
    # score (2's passage) goes first
    assert [s.id for s in got] == [1, 2, 3]


def test_first_in_either_ranking_beats_second_in_both() -> None:
    # 1: first by its text, third by its best key; 2: first by its passage, third by its
    # text; 3: second in both. First in either comes before middling in both.
    bank = Bank.build(
        [_row(1, [1.0, 0.0]), _row(2, [-1.0, 0.0]), _row(3, [0.9, 0.436])],
        2,
        keys=[_key(20, 2, [1.0, 0.0], ("harrow",)), _key(30, 3, [0.9, 0.436])],
    )
    mask = lineage_mask(bank, [(1, None)])
    query = np.array([1.0, 0.0], np.float32)
    everyone = rank(bank, mask, query, None, ["harrow"], 3).chosen
    places = {s.id: (s.text_rank, s.key_rank) for s in everyone}
    assert places == {1: (1, 2), 2: (3, 1), 3: (2, 3)}
    got = rank(bank, mask, query, None, ["harrow"], 2)
    assert [s.id for s in got.chosen] == [1, 2]  # 1/2 + 1/3 before 1/4 + 1/2
    # ranked by the text alone, the memory that is second there comes in instead
    text_only = rank(bank, mask, query, None, ["harrow"], 2, WEIGHTS._replace(source=0.0))
    assert [s.id for s in text_only.chosen] == [1, 3]


def _hop_bank(hop_key_vector: list[float]) -> Bank:
    """Memory 1's passage names Toen; memory 2's passage says what Toen hates; memories 3 and
    4 are closer to the question than memory 2 by meaning but name no one."""
    axis = np.eye(6, dtype=np.float32)
    pad = [0.0, 0.0, 0.0, 0.0]
    return Bank.build(
        [_row(i, axis[i + 1].tolist()) for i in (1, 2, 3, 4)],  # texts far from the question
        6,
        keys=[
            KeyInput(
                10,
                1,
                5,
                np.array([1.0, 0, *pad], np.float32),
                frozenset({"blacksmith", "zabreen", "toen", "godend"}),
                frozenset({"zabreen", "toen", "godend"}),
            ),
            KeyInput(
                20,
                2,
                9,
                np.array([*hop_key_vector, *pad], np.float32),
                frozenset({"toen", "hate", "cabbage"}),
                frozenset({"toen"}),
            ),
            KeyInput(30, 3, 12, np.array([0.5, 0.866, *pad], np.float32), frozenset({"hate"})),
            KeyInput(40, 4, 14, np.array([0.45, 0.893, *pad], np.float32), frozenset({"hate"})),
        ],
    )


def test_a_hop_follows_the_names_of_the_best_passage_into_the_last_slot() -> None:
    bank = _hop_bank([0.35, 0.937])
    mask = lineage_mask(bank, [(1, None)])
    query = np.eye(6, dtype=np.float32)[0]  # "what does the blacksmith at Zabreen hate?"
    asked = ["blacksmith", "zabreen", "hate"]
    without = rank(bank, mask, query, None, asked, 2, WEIGHTS._replace(hop=False))
    assert [s.id for s in without.chosen] == [1, 3]
    got = rank(bank, mask, query, None, asked, 2)
    assert [s.id for s in got.chosen] == [1, 2]
    hop = got.chosen[1]
    assert (hop.key, hop.key_depth, hop.via, hop.names) == (20, 9, 1, ("godend", "toen"))
    assert hop.passages[0][0] == 20 and hop.stage is Stage.HOP  # the hop's key leads
    # its score: the key's meaning for the question, and its share of the hop's terms (the
    # question's terms the bridge lacks, "hate", plus the names): toen and hate are held
    assert hop.semantic == pytest.approx(0.35, abs=1e-3)
    # over the 4 candidate keys: hate in 3 of them, toen in 2, godend in 1
    weight = {"hate": math.log(5 / 4), "toen": math.log(5 / 3), "godend": math.log(5 / 2)}
    share = (weight["hate"] + weight["toen"]) / sum(weight.values())
    assert hop.lexical == pytest.approx(share)
    assert hop.final == pytest.approx(hop.semantic + WEIGHTS.lexical * share, abs=1e-3)
    # no room for a hop with one slot; no hop when the question already names them all
    assert [s.id for s in rank(bank, mask, query, None, asked, 1).chosen] == [1]
    named = rank(bank, mask, query, None, [*asked, "toen", "godend"], 2)
    assert all(s.via is None for s in named.chosen)


def test_a_hop_never_lands_off_the_path_or_on_a_chosen_memory() -> None:
    bank = _hop_bank([0.35, 0.937])
    query = np.eye(6, dtype=np.float32)[0]
    asked = ["blacksmith", "zabreen", "hate"]
    mask = lineage_mask(bank, [(1, None)])
    mask[1] = False  # memory 2 (row 1) is off the path: forgotten, or on another branch
    got = rank(bank, mask, query, None, asked, 2)
    assert 2 not in [s.id for s in got.chosen]
    assert all(s.via is None or s.id != 2 for s in got.chosen)
    # with room for all, the hop's memory is one of them and is chosen once
    everyone = rank(bank, lineage_mask(bank, [(1, None)]), query, None, asked, 4)
    assert sorted(s.id for s in everyone.chosen) == [1, 2, 3, 4]


def test_keys_of_memories_off_the_path_are_never_scored_or_counted() -> None:
    rows = [_row(1, [0, 1]), BankRow(2, 2, 5, np.array([1, 0], np.float32), False, False, ())]
    keys = [_key(10, 1, [1, 0], ("bee",)), _key(12, 1, [0, 1]), _key(11, 2, [1, 0], ("harrow",))]
    bank = Bank.build(rows, 2, keys=keys)
    mask = lineage_mask(bank, [(1, None)])
    got = rank(bank, mask, np.array([1, 0], np.float32), None, ["bee", "harrow"], 5)
    assert [s.id for s in got.chosen] == [1]
    assert got.chosen[0].key == 10
    # over the 2 candidate keys: "bee" in 1, "harrow" in none (memory 2's key is not counted)
    bee, harrow = math.log(3 / 2), math.log(3 / 1)
    assert got.chosen[0].lexical == pytest.approx(bee / (bee + harrow))


def test_a_source_weight_of_zero_ranks_by_the_text_alone() -> None:
    bank = Bank.build(
        [_row(1, [1, 0]), _row(2, [0.8, 0.6])], 2, keys=[_key(10, 1, [0, 1], ("harrow",))]
    )
    mask = lineage_mask(bank, [(1, None)])
    query = np.array([0, 1], np.float32)
    with_keys = rank(bank, mask, query, None, ["harrow"], 2, WEIGHTS._replace(source=1.0))
    without = rank(bank, mask, query, None, ["harrow"], 2, WEIGHTS._replace(source=0.0))
    assert [s.id for s in with_keys.chosen] == [1, 2]
    assert [s.id for s in without.chosen] == [2, 1]
    assert all(s.key is None for s in without.chosen)


def test_a_chosen_memory_offers_its_best_passages_for_the_question_best_first() -> None:
    keys = [_key(10 + i, 1, [1.0, i / 10, 0.0]) for i in range(PASSAGE_CHOICES + 2)]
    bank = Bank.build([_row(1, [0, 1, 0]), _row(2, [0.5, 0, 0.5])], 3, keys=keys)
    got = rank(bank, lineage_mask(bank, [(1, None)]), np.array([1, 0, 0], np.float32), None, [], 2)
    first = next(s for s in got.chosen if s.id == 1)
    offered = [k for k, _, _ in first.passages]
    # Closest to the query first (the smaller second component), at most PASSAGE_CHOICES.
    assert offered == [10 + i for i in range(PASSAGE_CHOICES)]
    assert [d for _, _, d in first.passages] == [110 + i for i in range(PASSAGE_CHOICES)]
    scores = [score for _, score, _ in first.passages]
    assert scores == sorted(scores, reverse=True)
    assert first.key == 10 and first.stage is Stage.PASSAGE
    other = next(s for s in got.chosen if s.id == 2)
    assert other.passages == () and other.stage is Stage.TEXT  # first by its text, no keys


def test_keys_of_another_size_or_memory_are_left_out_of_the_bank() -> None:
    bank = Bank.build(
        [_row(1, [1, 0])],
        2,
        keys=[_key(10, 1, [1, 0, 0]), _key(11, 9, [1, 0]), _key(12, 1, [0, 1])],
    )
    assert bank.keys is not None
    assert bank.keys.ids.tolist() == [12]
    assert bank.keys.starts.tolist() == [0, 1]


# -- the Memories budget -----------------------------------------------------------------------


def _used(id_: int, text: str, evidence: str = "", *more: tuple[str, float, int]) -> UsedMemory:
    """A used memory that won through ``evidence`` (when given), offering ``more`` passages
    (text, score, depth) besides."""
    used = UsedMemory(id_, text, 0.5, 0.0, 0.5, False, "accepted_story")
    if evidence:
        used.matched, used.evidence, used.evidence_depth = MatchedKey.SOURCE, evidence, 7
        used.evidence_key = id_ * 10
        used.passages.append(CarriedPassage(id_ * 10, evidence, 7, 0.9))
    for i, (passage, score, depth) in enumerate(more, start=1):
        used.passages.append(CarriedPassage(id_ * 10 + i, passage, depth, score))
    return used


def test_passages_go_in_by_rank_while_the_section_fits_its_budget() -> None:
    counter = CharCounter()
    retrieval = Retrieval(
        used=[
            _used(1, "Mara met Tal at the mill.", "Tal's sister Edda lives in Harrow."),
            _used(2, "Mara crossed the ford."),
            _used(3, "Wen lost a boot.", "Wen's boot was found in the cistern at dawn."),
        ]
    )
    retrieval.fit_evidence(counter, 10_000)
    assert [m.evidence_in_context for m in retrieval.used] == [True, False, True]
    assert retrieval.section_text() == (
        "- (established) Mara met Tal at the mill.\n"
        "  from the story: Tal's sister Edda lives in Harrow.\n"
        "- (established) Mara crossed the ford.\n"
        "- (established) Wen lost a boot.\n"
        "  from the story: Wen's boot was found in the cistern at dawn."
    )
    with_one = counter.count(retrieval.section_text(1))
    retrieval.fit_evidence(counter, with_one)  # room for the first passage only
    assert [m.evidence_in_context for m in retrieval.used] == [True, False, False]
    assert counter.count(retrieval.section_text()) <= with_one
    retrieval.fit_evidence(counter, 1)  # no room at all: the memories still go in
    assert not any(m.evidence_in_context for m in retrieval.used)
    assert retrieval.section_text().count("- (established)") == 3


def test_after_the_winning_passages_the_rest_go_in_best_first_in_story_order() -> None:
    counter = CharCounter()
    retrieval = Retrieval(
        used=[
            _used(1, "Mara met Tal.", "Tal's sister lives in Harrow.", ("Tal limps.", 0.2, 3),
                  ("Edda keeps bees.", 0.7, 9)),
            _used(2, "Wen lost a boot.", "", ("Wen's boot was in the cistern.", 0.8, 20),
                  ("Tal's sister lives in Harrow.", 0.6, 21)),
        ]
    )  # fmt: skip
    retrieval.fit_evidence(counter, 10_000)
    orders = [[p.order for p in m.passages] for m in retrieval.used]
    # The winner first; then 0.8, 0.7, 0.2 across memories; the repeated sentence once.
    assert orders == [[0, 3, 2], [1, None]]
    assert retrieval.section_text() == (
        "- (established) Mara met Tal.\n"
        "  from the story: Tal limps.\n"
        "  from the story: Tal's sister lives in Harrow.\n"
        "  from the story: Edda keeps bees.\n"
        "- (established) Wen lost a boot.\n"
        "  from the story: Wen's boot was in the cistern."
    )
    assert retrieval.section_variants()[0] == retrieval.section_text(3)  # "Tal limps." first out
    retrieval.keep_evidence(1)
    assert retrieval.carried() == 1 and retrieval.used[0].evidence_in_context
    retrieval.fit_evidence(counter, 10_000, fill=False)  # a budget at the floor: winners only
    assert [[p.order for p in m.passages] for m in retrieval.used] == [
        [0, None, None],
        [None, None],
    ]


def test_a_passage_from_the_history_is_chosen_and_charged_as_before_but_not_written() -> None:
    counter = CharCounter()

    def retrieval() -> Retrieval:
        return Retrieval(
            used=[
                _used(1, "Mara met Tal.", "Tal's sister lives in Harrow.",
                      ("Tal limps.", 0.2, 3), ("Edda keeps bees.", 0.7, 9)),
                _used(2, "Wen lost a boot.", "", ("Wen's boot was in the cistern.", 0.8, 20)),
            ]
        )  # fmt: skip

    for budget in (10_000, 120, 100):
        alone, beside = retrieval(), retrieval()
        alone.fit_evidence(counter, budget)
        beside.fit_evidence(counter, budget, history={9, 20})
        orders = [[p.order for p in m.passages] for m in alone.used]
        # The same passages, in the same order: the history's are not written again.
        assert [[p.order for p in m.passages] for m in beside.used] == orders
        written = [p.text for m in beside.used for p in m.passages if p.order is not None]
        held = [p for m in beside.used for p in m.passages if p.depth in {9, 20}]
        assert all(p.in_history for p in held)
        text = beside.section_text()
        for passage in held:
            assert passage.text not in text
        for line in written:
            assert (line in text) == (line not in {p.text for p in held})
        assert counter.count(text) <= counter.count(alone.section_text())


def test_the_memories_budget_is_a_quarter_of_the_prompt_within_the_memories_alone_and_118() -> None:
    assert memory_budget(3_800, 5) == MEMORY_SLOT_TOKENS * 5 == 590  # the default context
    assert memory_budget(1_800, 5) == 450  # a quarter of the prompt
    assert memory_budget(900, 5) == MEMORY_SLOT_FLOOR * 5 == 360  # never below the memories
    assert memory_budget(100_000, 10) == 1_180


class _LineBreaksCost(CharCounter):
    """A tokenizer under which joining lines costs more than the lines alone."""

    def count(self, text: str) -> int:
        return len(text) + 10 * text.count("\n")


def test_the_section_stays_in_its_budget_when_the_lines_alone_price_it_low() -> None:
    counter = _LineBreaksCost()
    retrieval = Retrieval(
        used=[
            _used(
                1, "Mara met Tal.", "Tal's sister lives in Harrow.", ("Edda keeps bees.", 0.7, 9)
            ),
            _used(2, "Wen lost a boot.", "", ("Wen's boot was in the cistern.", 0.8, 20)),
        ]
    )
    # Room for the memories and the lines alone, not for the line breaks they bring.
    every = "\n".join(["- (established) Mara met Tal.", "- (established) Wen lost a boot."])
    lines = ["Tal's sister lives in Harrow.", "Edda keeps bees.", "Wen's boot was in the cistern."]
    budget = counter.count(every) + sum(len(f"  from the story: {x}") for x in lines)
    retrieval.fit_evidence(counter, budget)
    assert counter.count(retrieval.section_text()) <= budget
    assert 0 < retrieval.carried() < 3  # the last to go in left; the first stayed
    assert retrieval.used[0].evidence_in_context


def test_a_passage_the_memory_already_says_is_never_carried() -> None:
    retrieval = Retrieval(used=[_used(1, "Tal sold Mara the mare.", "Tal sold you the mare.")])
    retrieval.used[0].passages[0].stated = True
    retrieval.fit_evidence(CharCounter(), 10_000)
    assert not retrieval.used[0].evidence_in_context
    assert "from the story" not in retrieval.section_text()


def test_an_overflowing_context_drops_passages_before_it_cuts_a_memory() -> None:
    counter = CharCounter()
    retrieval = Retrieval(
        used=[
            _used(1, "Mara met Tal at the mill.", "Tal's sister Edda lives in Harrow."),
            _used(2, "Wen lost a boot.", "Wen's boot was found in the cistern at dawn."),
        ]
    )
    retrieval.fit_evidence(counter, 10_000)
    variants = retrieval.section_variants()
    # Fewer passages first, then fewer memories (the last dropped first), down to one.
    assert variants == [
        retrieval.section_text(1),
        retrieval.section_text(0),
        retrieval.section_text(0, 1),
    ]
    full = Section("memories", retrieval.section_text(), "", tuple(variants))
    action = "look"
    needed = build_context([full], [], "", action, budget=10_000, counter=counter).report.used
    room = needed - counter.count("  from the story: Wen's boot was found in the cistern at dawn.")
    room += counter.count("x\n\n")  # the history's one action keeps its room (its reserve)
    built = build_context(
        [full], [HistoryEntry(1, "narrator", "x")], "", action, budget=room, counter=counter
    )
    section = next(s for s in built.report.sections if s.name == "memories")
    assert section.cut
    assert "Wen lost a boot." in section.text and "Harrow" in section.text
    assert "cistern" not in section.text


def test_each_sentence_of_a_memory_is_placed_at_the_actions_its_words_come_from() -> None:
    keys = [
        (2, terms_of("The tide turns. Gulls cry over the harbour wall.")),  # two joined
        (3, terms_of("Maren hides the brass key under the third piling.")),
        (5, terms_of("Odo sells the grey mare at the fair.")),
    ]
    text = (
        "The tide turns. Maren hides the brass key under the third piling and Odo sells the "
        "grey mare at the fair. Everyone is sad. Yes."
    )
    assert said(text, keys) == (
        ("The tide turns.", (2,)),  # within a key that holds more
        (  # the keys it states hold all its words together
            "Maren hides the brass key under the third piling and Odo sells the grey mare "
            "at the fair.",
            (3, 5),
        ),
        ("Everyone is sad.", ()),  # words from no passage: from no action known
        ("Yes.", ()),
    )
    assert said("Maren hides the brass key.", []) == (("Maren hides the brass key.", ()),)
