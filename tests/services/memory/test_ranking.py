"""Hybrid scoring and selection over a bank: exact arithmetic on hand-made banks."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from talekeeper.services.memory.arrays import Bank, BankRow, lineage_mask
from talekeeper.services.memory.keyset import KeyInput
from talekeeper.services.memory.ranking import rank
from talekeeper.services.memory.scoring import (
    CONTEXT_WEIGHT,
    DUPLICATE_COSINE,
    INPUT_WEIGHT,
    LEXICAL_WEIGHT,
    WEIGHTS,
    Ranking,
    Weights,
)

pytestmark = pytest.mark.no_database


def row(
    id_: int,
    vector: Sequence[float],
    *,
    branch: int = 1,
    depth: int | None = None,
    pinned: bool = False,
    heuristic: bool = False,
    terms: Sequence[str] = (),
) -> BankRow:
    return BankRow(
        id=id_,
        branch_id=branch,
        depth=id_ if depth is None else depth,
        vector=np.array(vector, dtype=np.float32),
        pinned=pinned,
        heuristic=heuristic,
        terms=frozenset(terms),
    )


def vec(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def everything(bank: Bank) -> np.ndarray:
    return np.ones(bank.size, dtype=np.bool_)


def ids(ranking: Ranking) -> list[int]:
    return [s.id for s in ranking.chosen]


# -- the bank ------------------------------------------------------------------------------


def test_build_normalises_rows_and_indexes_terms() -> None:
    bank = Bank.build([row(1, [3, 4], terms=["mara"]), row(2, [0, 2], terms=["mara", "key"])], 2)
    assert bank.vectors.dtype == np.float32
    np.testing.assert_allclose(bank.vectors, [[0.6, 0.8], [0.0, 1.0]], rtol=1e-6)
    assert bank.postings["mara"].tolist() == [0, 1]
    assert bank.postings["key"].tolist() == [1]
    assert bank.ids.dtype == np.int64


def test_build_keeps_a_zero_vector_zero() -> None:
    bank = Bank.build([row(1, [0, 0])], 2)
    assert bank.vectors.tolist() == [[0.0, 0.0]]


def test_build_refuses_a_vector_of_another_size() -> None:
    with pytest.raises(ValueError, match="re-embed"):
        Bank.build([row(1, [1, 0, 0])], 2)


def test_build_refuses_a_vector_with_nan() -> None:
    with pytest.raises(ValueError, match="NaN"):
        Bank.build([row(1, [float("nan"), 0])], 2)


def test_empty_bank() -> None:
    bank = Bank.build([], 4)
    assert bank.vectors.shape == (0, 4)
    assert lineage_mask(bank, [(1, None)]).shape == (0,)
    ranking = rank(bank, everything(bank), vec(1, 0, 0, 0), vec(0, 1, 0, 0), ["mara"], 5)
    assert ranking.chosen == [] and ranking.considered == 0 and ranking.suppressed == []
    assert ranking.term_weights == {"mara": 0.0}  # ln((0+1)/(0+1))


# -- semantic ------------------------------------------------------------------------------


def test_semantic_blends_input_and_context_cosines() -> None:
    bank = Bank.build([row(1, [1, 0]), row(2, [0, 1]), row(3, [0.6, 0.8])], 2)
    ranking = rank(bank, everything(bank), vec(1, 0), vec(0, 1), [], 3)
    semantic = {s.id: s.semantic for s in ranking.chosen}
    assert semantic[1] == pytest.approx(INPUT_WEIGHT)
    assert semantic[2] == pytest.approx(CONTEXT_WEIGHT)
    assert semantic[3] == pytest.approx(INPUT_WEIGHT * 0.6 + CONTEXT_WEIGHT * 0.8)
    assert ids(ranking) == sorted(semantic, key=lambda i: -semantic[i])
    assert all(s.final == s.semantic and s.lexical == 0.0 for s in ranking.chosen)


def test_the_weights_in_use_are_the_default_and_others_can_be_asked_for() -> None:
    assert Weights(INPUT_WEIGHT, CONTEXT_WEIGHT, LEXICAL_WEIGHT) == WEIGHTS
    bank = Bank.build([row(1, [1, 0], terms=["oar"]), row(2, [0, 1]), row(3, [0.6, 0.8])], 2)
    ranking = rank(bank, everything(bank), vec(1, 0), vec(0, 1), ["oar"], 3, Weights(0.2, 0.8, 1))
    final = {s.id: s.final for s in ranking.chosen}
    assert final[1] == pytest.approx(0.2 + 1.0 * 1.0)
    assert final[2] == pytest.approx(0.8)
    assert final[3] == pytest.approx(0.2 * 0.6 + 0.8 * 0.8)
    assert ids(ranking) == [1, 2, 3]


def test_query_vectors_need_not_be_normalised() -> None:
    bank = Bank.build([row(1, [0.6, 0.8])], 2)
    ranking = rank(bank, everything(bank), vec(10, 0), vec(0, 0.5), [], 1)
    assert ranking.chosen[0].semantic == pytest.approx(INPUT_WEIGHT * 0.6 + CONTEXT_WEIGHT * 0.8)


def test_only_the_input_vector_uses_its_cosine_alone() -> None:
    bank = Bank.build([row(1, [0.6, 0.8])], 2)
    ranking = rank(bank, everything(bank), vec(1, 0), None, [], 1)
    assert ranking.chosen[0].semantic == pytest.approx(0.6)


def test_only_the_context_vector_uses_its_cosine_alone() -> None:
    bank = Bank.build([row(1, [0.6, 0.8])], 2)
    ranking = rank(bank, everything(bank), None, vec(1, 0), [], 1)
    assert ranking.chosen[0].semantic == pytest.approx(0.6)


def test_a_zero_query_vector_counts_as_absent() -> None:
    bank = Bank.build([row(1, [0.6, 0.8])], 2)
    ranking = rank(bank, everything(bank), vec(0, 0), vec(0, 1), [], 1)
    assert ranking.chosen[0].semantic == pytest.approx(0.8)


def test_no_query_vector_gives_semantic_zero() -> None:
    bank = Bank.build([row(1, [0.6, 0.8]), row(2, [1, 0])], 2)
    ranking = rank(bank, everything(bank), None, None, [], 2)
    assert [s.semantic for s in ranking.chosen] == [0.0, 0.0]
    assert ids(ranking) == [1, 2]  # all tied: lower id first


def test_a_query_vector_of_another_size_is_refused() -> None:
    bank = Bank.build([row(1, [1, 0])], 2)
    with pytest.raises(ValueError, match="dimensions"):
        rank(bank, everything(bank), vec(1, 0, 0), None, [], 1)


# -- lexical -------------------------------------------------------------------------------


def lexical_bank() -> Bank:
    # Four orthogonal memories so that nothing is a duplicate of anything.
    return Bank.build(
        [
            row(1, [1, 0, 0, 0], terms=["lantern", "mara"]),
            row(2, [0, 1, 0, 0], terms=["mara"]),
            row(3, [0, 0, 1, 0], terms=["mara", "well"]),
            row(4, [0, 0, 0, 1], terms=["well"]),
        ],
        4,
    )


def test_lexical_is_the_share_of_the_input_rarity() -> None:
    bank = lexical_bank()
    ranking = rank(bank, everything(bank), None, None, ["lantern", "mara", "door"], 4)
    # N = 4: lantern df 1, mara df 3, door df 0.
    w_lantern, w_mara, w_door = math.log(5 / 2), math.log(5 / 4), math.log(5 / 1)
    assert ranking.term_weights == pytest.approx(
        {"lantern": w_lantern, "mara": w_mara, "door": w_door}
    )
    total = w_lantern + w_mara + w_door
    lexical = {s.id: s.lexical for s in ranking.chosen}
    assert lexical[1] == pytest.approx((w_lantern + w_mara) / total)
    assert lexical[2] == pytest.approx(w_mara / total)
    assert lexical[3] == pytest.approx(w_mara / total)
    assert lexical[4] == 0.0
    final = {s.id: s.final for s in ranking.chosen}
    assert final[1] == pytest.approx(LEXICAL_WEIGHT * (w_lantern + w_mara) / total)
    assert ids(ranking) == [1, 2, 3, 4]


def test_lexical_adds_to_semantic() -> None:
    bank = lexical_bank()
    ranking = rank(bank, everything(bank), vec(0, 0, 0, 1), None, ["lantern"], 4)
    final = {s.id: s.final for s in ranking.chosen}
    assert final[4] == pytest.approx(1.0)
    assert final[1] == pytest.approx(0.0 + LEXICAL_WEIGHT * 1.0)  # the only lantern: full share


def test_lexical_counts_only_candidates_under_the_mask() -> None:
    bank = lexical_bank()
    mask = np.array([True, True, False, False])
    ranking = rank(bank, mask, None, None, ["mara", "well"], 4)
    # N = 2: mara df 2 (weight 0), well df 0 (row 3 and 4 are masked out).
    assert ranking.term_weights == pytest.approx({"mara": 0.0, "well": math.log(3)})
    assert [s.lexical for s in ranking.chosen] == [0.0, 0.0]
    assert ranking.considered == 2


def test_lexical_is_zero_when_every_candidate_holds_every_input_term() -> None:
    bank = lexical_bank()
    mask = np.array([True, True, True, False])
    ranking = rank(bank, mask, None, None, ["mara"], 4)
    assert ranking.term_weights == {"mara": 0.0}
    assert all(s.lexical == 0.0 for s in ranking.chosen)


def test_repeated_input_terms_count_once_and_keep_their_order() -> None:
    bank = lexical_bank()
    once = rank(bank, everything(bank), None, None, ["well", "lantern"], 4)
    twice = rank(bank, everything(bank), None, None, ["well", "lantern", "well", "well"], 4)
    assert twice.input_terms == ["well", "lantern"]
    assert [s.lexical for s in twice.chosen] == [s.lexical for s in once.chosen]


def test_no_input_terms_gives_lexical_zero() -> None:
    bank = lexical_bank()
    ranking = rank(bank, everything(bank), None, None, [], 4)
    assert ranking.input_terms == [] and ranking.term_weights == {}
    assert all(s.lexical == 0.0 for s in ranking.chosen)


def test_a_memory_holding_all_input_terms_has_share_one() -> None:
    bank = lexical_bank()
    ranking = rank(bank, everything(bank), None, None, ["lantern", "mara"], 1)
    assert ranking.chosen[0].id == 1
    assert ranking.chosen[0].lexical == pytest.approx(1.0)
    assert ranking.chosen[0].lexical <= 1.0


# -- selection -----------------------------------------------------------------------------

NEAR = [0.999, 0.0447]  # cos with [1, 0] ~ 0.999: a near-duplicate
APART = [0.92, 0.392]  # cos with [1, 0] ~ 0.92: just below the duplicate line


def test_the_duplicate_line_is_where_these_fixtures_assume() -> None:
    assert NEAR[0] / math.hypot(*NEAR) >= DUPLICATE_COSINE > APART[0] / math.hypot(*APART)


def test_a_same_authority_near_duplicate_is_suppressed() -> None:
    bank = Bank.build([row(1, [1, 0]), row(2, NEAR), row(3, [0, 1])], 2)
    ranking = rank(bank, everything(bank), vec(1, 0), None, [], 3)
    assert ids(ranking) == [1, 3]
    assert ranking.suppressed == [(2, 1)]
    assert ranking.considered == 3


def test_below_the_duplicate_line_both_are_kept() -> None:
    bank = Bank.build([row(1, [1, 0]), row(2, APART)], 2)
    ranking = rank(bank, everything(bank), vec(1, 0), None, [], 2)
    assert ids(ranking) == [1, 2] and ranking.suppressed == []


@pytest.mark.parametrize("first_heuristic", [True, False])
def test_different_authorities_never_suppress_each_other(first_heuristic: bool) -> None:
    bank = Bank.build(
        [row(1, [1, 0], heuristic=first_heuristic), row(2, NEAR, heuristic=not first_heuristic)],
        2,
    )
    ranking = rank(bank, everything(bank), vec(1, 0), None, [], 2)
    assert ids(ranking) == [1, 2] and ranking.suppressed == []
    assert [s.heuristic for s in ranking.chosen] == [first_heuristic, not first_heuristic]


def test_heuristic_duplicates_suppress_each_other() -> None:
    bank = Bank.build([row(1, [1, 0], heuristic=True), row(2, NEAR, heuristic=True)], 2)
    ranking = rank(bank, everything(bank), vec(1, 0), None, [], 2)
    assert ids(ranking) == [1] and ranking.suppressed == [(2, 1)]


def test_a_suppressed_memory_frees_its_slot_for_the_next_best() -> None:
    rows = [row(1, [1, 0, 0]), row(2, [0.999, 0.0447, 0]), row(3, [0.5, 0, 0.866])]
    bank = Bank.build(rows, 3)
    ranking = rank(bank, everything(bank), vec(1, 0, 0), None, [], 2)
    assert ids(ranking) == [1, 3] and ranking.suppressed == [(2, 1)]


def test_many_suppressions_reach_past_the_first_sorted_window() -> None:
    rows = [row(i, [1, 0]) for i in range(1, 31)] + [row(31, [0, 1]), row(32, [-1, 0])]
    bank = Bank.build(rows, 2)
    ranking = rank(bank, everything(bank), vec(1, 0), None, [], 3)
    assert ids(ranking) == [1, 31, 32]
    assert ranking.suppressed == [(i, 1) for i in range(2, 31)]


def test_suppression_names_the_closest_chosen_memory() -> None:
    rows = [
        row(1, [1, 0, 0], pinned=True),
        row(2, [0.97, 0.243, 0], pinned=True),
        row(3, [0.985, 0.172, 0]),  # cos 0.985 with 1, 0.997 with 2
    ]
    bank = Bank.build(rows, 3)
    ranking = rank(bank, everything(bank), None, None, [], 3)
    assert ranking.suppressed == [(3, 2)]


def test_pinned_count_toward_top_k() -> None:
    rows = [
        row(1, [0, 0, 1, 0], pinned=True),
        row(2, [1, 0, 0, 0]),
        row(3, [0.6, 0.8, 0, 0]),
        row(4, [0, 0, 0, 1]),
    ]
    bank = Bank.build(rows, 4)
    ranking = rank(bank, everything(bank), vec(1, 0, 0, 0), None, [], 2)
    assert ids(ranking) == [2, 1]  # ordered by final: the pinned one scored 0
    assert ranking.chosen[1].pinned


def test_every_pinned_memory_is_chosen_even_past_top_k() -> None:
    rows = [row(i, np.eye(5)[i - 1], pinned=i <= 3) for i in range(1, 6)]
    bank = Bank.build(rows, 5)
    ranking = rank(bank, everything(bank), vec(0, 0, 0, 1, 1), None, [], 2)
    assert sorted(ids(ranking)) == [1, 2, 3]


def test_pinned_memories_are_never_suppressed_but_suppress_the_rest() -> None:
    rows = [row(1, [1, 0], pinned=True), row(2, NEAR, pinned=True), row(3, [0.998, 0.0632])]
    bank = Bank.build(rows, 2)
    ranking = rank(bank, everything(bank), vec(1, 0), None, [], 5)
    assert sorted(ids(ranking)) == [1, 2]
    assert [s for s, _ in ranking.suppressed] == [3]


def test_a_pinned_memory_outside_the_mask_is_not_chosen() -> None:
    bank = Bank.build([row(1, [1, 0], pinned=True), row(2, [0, 1])], 2)
    ranking = rank(bank, np.array([False, True]), None, None, [], 5)
    assert ids(ranking) == [2]


def test_ties_break_by_lower_id() -> None:
    rows = [row(5, [0.6, 0.8]), row(2, [0.6, -0.8]), row(9, [1, 0])]
    bank = Bank.build(rows, 2)
    ranking = rank(bank, everything(bank), vec(1, 0), None, [], 3)
    assert ids(ranking) == [9, 2, 5]


def test_ties_at_the_cut_keep_the_lower_ids() -> None:
    ids_ = [17, 3, 11, 40, 8, 25, 1, 30, 12, 6, 19, 2]
    bank = Bank.build([row(i, np.eye(len(ids_))[n]) for n, i in enumerate(ids_)], len(ids_))
    ranking = rank(bank, everything(bank), None, None, [], 3)
    assert ids(ranking) == [1, 2, 3]


def test_top_k_larger_than_the_bank_takes_everything() -> None:
    bank = lexical_bank()
    ranking = rank(bank, everything(bank), vec(1, 1, 1, 1), None, [], 50)
    assert sorted(ids(ranking)) == [1, 2, 3, 4]


def test_top_k_zero_chooses_only_pinned() -> None:
    bank = Bank.build([row(1, [1, 0], pinned=True), row(2, [0, 1])], 2)
    assert ids(rank(bank, everything(bank), None, None, [], 0)) == [1]


def test_a_mask_of_nothing_considers_nothing() -> None:
    bank = lexical_bank()
    ranking = rank(bank, np.zeros(4, dtype=np.bool_), vec(1, 0, 0, 0), None, ["mara"], 3)
    assert ranking.chosen == [] and ranking.considered == 0


def test_a_mask_of_the_wrong_shape_is_refused() -> None:
    bank = lexical_bank()
    with pytest.raises(ValueError, match="mask"):
        rank(bank, np.ones(3, dtype=np.bool_), None, None, [], 3)


# -- lineage -------------------------------------------------------------------------------


def test_lineage_mask_follows_two_branches_the_older_one_limited_by_depth() -> None:
    rows = [
        row(1, [1, 0], branch=1, depth=2),
        row(2, [1, 0], branch=1, depth=5),
        row(3, [1, 0], branch=1, depth=6),  # past the fork: another branch's future
        row(4, [1, 0], branch=2, depth=6),
        row(5, [1, 0], branch=2, depth=40),
        row(6, [1, 0], branch=3, depth=3),  # a sibling branch: not on the path
    ]
    bank = Bank.build(rows, 2)
    mask = lineage_mask(bank, [(2, None), (1, 5)])
    assert mask.tolist() == [True, True, False, True, True, False]
    ranking = rank(bank, mask, None, None, [], 10)
    assert ranking.considered == 4
    assert set(ids(ranking)) <= {1, 2, 4, 5}


def test_an_empty_lineage_masks_everything_out() -> None:
    bank = lexical_bank()
    assert not lineage_mask(bank, []).any()


# -- properties ----------------------------------------------------------------------------


def row_terms(bank: Bank) -> list[set[str]]:
    held: list[set[str]] = [set() for _ in range(bank.size)]
    for term, rows in bank.postings.items():
        for r in rows:
            held[int(r)].add(term)
    return held


def reference_scores(
    bank: Bank,
    mask: np.ndarray,
    input_vec: np.ndarray | None,
    context_vec: np.ndarray | None,
    input_terms: list[str],
) -> dict[int, tuple[float, float, float]]:
    """Row -> (semantic, lexical, final), from the formulas, in plain Python."""
    rows = [int(r) for r in np.flatnonzero(mask)]
    held = row_terms(bank)
    unique = list(dict.fromkeys(input_terms))
    weights = {t: math.log((len(rows) + 1) / (sum(t in held[r] for r in rows) + 1)) for t in unique}
    total = sum(weights.values())

    def cos(q: np.ndarray | None, r: int) -> float | None:
        if q is None or not np.any(q):
            return None
        q64 = q.astype(np.float64)
        return float(bank.vectors[r].astype(np.float64) @ (q64 / np.linalg.norm(q64)))

    out = {}
    for r in rows:
        ci, cc = cos(input_vec, r), cos(context_vec, r)
        if ci is not None and cc is not None:
            semantic = INPUT_WEIGHT * ci + CONTEXT_WEIGHT * cc
        else:
            semantic = ci if ci is not None else cc if cc is not None else 0.0
        share = 0.0
        for t in unique:  # the order rank adds them in, so the sums agree to the bit
            if t in held[r]:
                share += weights[t]
        lexical = min(share / total, 1.0) if total > 0 else 0.0
        out[r] = (semantic, lexical, semantic + LEXICAL_WEIGHT * lexical)
    return out


def reference_selection(bank: Bank, finals: dict[int, float], top_k: int) -> list[int]:
    """The selection rules written out plainly: ids, by final desc then id."""
    chosen = [r for r in finals if bank.pinned[r]]
    rest = sorted(
        (r for r in finals if not bank.pinned[r]), key=lambda r: (-finals[r], bank.ids[r])
    )
    for r in rest:
        if len(chosen) >= top_k:
            break
        same = [c for c in chosen if bank.heuristic[c] == bank.heuristic[r]]
        if any(float(bank.vectors[c] @ bank.vectors[r]) >= DUPLICATE_COSINE for c in same):
            continue
        chosen.append(r)
    return [int(bank.ids[r]) for r in sorted(chosen, key=lambda r: (-finals[r], bank.ids[r]))]


VOCAB = ["mara", "lantern", "well", "key", "tower"]
coords = st.integers(min_value=-2, max_value=2)


@st.composite
def banks(draw: st.DrawFn) -> tuple[Bank, np.ndarray, np.ndarray | None, np.ndarray | None]:
    n = draw(st.integers(min_value=0, max_value=30))
    rows = [
        row(
            i + 1,
            [draw(coords), draw(coords)],
            pinned=draw(st.booleans()) and draw(st.booleans()),
            heuristic=draw(st.booleans()),
            terms=draw(st.lists(st.sampled_from(VOCAB), max_size=3)),
        )
        for i in range(n)
    ]
    bank = Bank.build(rows, 2)
    mask = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=np.bool_)
    query = st.none() | st.tuples(coords, coords).map(lambda c: vec(*c))
    return bank, mask, draw(query), draw(query)


@settings(max_examples=200, deadline=None)
@given(
    banks(),
    st.lists(st.sampled_from([*VOCAB, "door"]), max_size=4),
    st.integers(min_value=0, max_value=12),
)
def test_selection_properties(
    drawn: tuple[Bank, np.ndarray, np.ndarray | None, np.ndarray | None],
    input_terms: list[str],
    top_k: int,
) -> None:
    bank, mask, input_vec, context_vec = drawn
    ranking = rank(bank, mask, input_vec, context_vec, input_terms, top_k)
    chosen_rows = [s.row for s in ranking.chosen]
    pinned_count = int((bank.pinned & mask).sum())
    assert all(mask[r] for r in chosen_rows)
    assert len(set(chosen_rows)) == len(chosen_rows)
    assert len(chosen_rows) <= max(top_k, pinned_count)
    keys = [(-s.fused, -s.final, s.id) for s in ranking.chosen]
    assert keys == sorted(keys)
    assert ranking.considered == int(mask.sum())
    assert all(0.0 <= s.lexical <= 1.0 for s in ranking.chosen)
    suppressed = {i for i, _ in ranking.suppressed}
    assert not suppressed & {s.id for s in ranking.chosen}
    if len(chosen_rows) < top_k:  # nothing left out except duplicates
        assert len(chosen_rows) + len(suppressed) == int(mask.sum())


@settings(max_examples=200, deadline=None)
@given(banks(), st.lists(st.sampled_from([*VOCAB, "door"]), max_size=4), st.integers(0, 12))
def test_selection_matches_the_rules_written_plainly(
    drawn: tuple[Bank, np.ndarray, np.ndarray | None, np.ndarray | None],
    input_terms: list[str],
    top_k: int,
) -> None:
    # Lexical scores only: they are exact in both, so even ties must agree (duplicate-heavy
    # banks and many tied scores push the selection past its first sorted window).
    bank, mask, _, _ = drawn
    ranking = rank(bank, mask, None, None, input_terms, top_k)
    expected = reference_scores(bank, mask, None, None, input_terms)
    assert ids(ranking) == reference_selection(
        bank, {r: f for r, (_, _, f) in expected.items()}, top_k
    )
    for s in ranking.chosen:
        assert (s.semantic, s.lexical, s.final) == expected[s.row]


@settings(max_examples=200, deadline=None)
@given(banks(), st.lists(st.sampled_from([*VOCAB, "door"]), max_size=4))
def test_scores_match_the_formulas(
    drawn: tuple[Bank, np.ndarray, np.ndarray | None, np.ndarray | None],
    input_terms: list[str],
) -> None:
    bank, mask, input_vec, context_vec = drawn
    ranking = rank(bank, mask, input_vec, context_vec, input_terms, bank.size)
    expected = reference_scores(bank, mask, input_vec, context_vec, input_terms)
    for s in ranking.chosen:
        assert (s.semantic, s.lexical, s.final) == pytest.approx(expected[s.row], abs=1e-6)


NAMES = ["toen", "mara", "edda"]


@st.composite
def keyed_banks(draw: st.DrawFn) -> tuple[Bank, np.ndarray, np.ndarray | None]:
    """Banks whose memories have evidence keys (some naming people)."""
    n = draw(st.integers(min_value=0, max_value=12))
    rows = [
        row(
            i + 1,
            [draw(coords), draw(coords)],
            pinned=draw(st.booleans()) and draw(st.booleans()),
            heuristic=draw(st.booleans()),
            terms=draw(st.lists(st.sampled_from(VOCAB), max_size=3)),
        )
        for i in range(n)
    ]
    keys = []
    for i in range(n):
        for j in range(draw(st.integers(min_value=0, max_value=3))):
            named = draw(st.lists(st.sampled_from(NAMES), max_size=2))
            words = draw(st.lists(st.sampled_from(VOCAB), max_size=3))
            keys.append(
                KeyInput(
                    100 * (i + 1) + j,
                    i + 1,
                    i + 1,
                    np.array([draw(coords), draw(coords)], np.float32),
                    frozenset(words + named),
                    frozenset(named),
                )
            )
    bank = Bank.build(rows, 2, keys=keys)
    mask = np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=np.bool_)
    query = st.none() | st.tuples(coords, coords).map(lambda c: vec(*c))
    return bank, mask, draw(query)


@settings(max_examples=300, deadline=None)
@given(keyed_banks(), st.lists(st.sampled_from([*VOCAB, *NAMES]), max_size=4), st.integers(0, 8))
def test_selection_with_keys_keeps_the_invariants(
    drawn: tuple[Bank, np.ndarray, np.ndarray | None], input_terms: list[str], top_k: int
) -> None:
    bank, mask, query = drawn
    ranking = rank(bank, mask, query, None, input_terms, top_k)
    chosen = ranking.chosen
    rows = [s.row for s in chosen]
    assert all(mask[r] for r in rows)  # never off the path, the hop's memory included
    assert len(set(rows)) == len(rows)
    assert len(rows) <= max(top_k, int((bank.pinned & mask).sum()))
    order = [(-s.fused, -s.final, s.id) for s in chosen]
    assert order == sorted(order)
    keys = bank.keys
    owners = {int(k): int(bank.ids[keys.owner[i]]) for i, k in enumerate(keys.ids)} if keys else {}
    for s in chosen:
        assert s.key is None or owners[s.key] == s.id  # a memory carries only its own passage
        if s.key_rank is not None:
            fused = 1 / (WEIGHTS.fusion_k + s.text_rank) + WEIGHTS.source / (
                WEIGHTS.fusion_k + s.key_rank
            )
            assert s.fused == pytest.approx(fused)
    hops = [s for s in chosen if s.via is not None]
    assert len(hops) <= 1
    for s in hops:
        assert s.key is not None and s.names  # found through a passage, by names
        assert not set(s.names) & set(input_terms)  # names the question did not hold
        assert mask[[int(i) for i in bank.ids].index(s.via)]  # the bridge is on the path
    # with the hop off, the selection is the fused order (duplicates passed over)
    plain = rank(bank, mask, query, None, input_terms, top_k, WEIGHTS._replace(hop=False))
    everyone = rank(bank, mask, query, None, input_terms, bank.size, WEIGHTS._replace(hop=False))
    fused_order = [s.id for s in everyone.chosen]
    picked = [s.id for s in plain.chosen if not s.pinned]
    assert picked == [i for i in fused_order if i in set(picked)]
