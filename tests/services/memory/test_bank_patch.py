"""A bank patched with the rows that changed is the bank built again from scratch
(``Bank.patched``, ``Keys.patched``, ``Postings``, ``Codes.patched``): the rule that lets the
cache refresh a large bank without building it all again."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.kit.bank import as_lists, same_bank

from talekeeper.services.memory.arrays import Bank, BankRow, lineage_mask
from talekeeper.services.memory.int8 import Codes
from talekeeper.services.memory.keyset import KeyInput, Keys
from talekeeper.services.memory.postings import Postings
from talekeeper.services.memory.ranking import rank

pytestmark = pytest.mark.no_database

DIMS = 4
WORDS = ("mara", "key", "well", "bees", "toen", "harbour", "ring", "lamp")


def naive(texts: list[str]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, text in enumerate(texts):
        for term in dict.fromkeys(text.split()):
            out.setdefault(term, []).append(i)
    return out


# -- postings --------------------------------------------------------------------------------

texts_st = st.lists(
    st.lists(st.sampled_from(WORDS), max_size=5).map(" ".join)
    | st.sampled_from(["", " ", "key  key", " mara "]),
    max_size=12,
)


@given(texts_st)
def test_postings_of_stored_terms_are_each_terms_ascending_rows(texts: list[str]) -> None:
    postings = Postings.of_texts(texts)
    assert as_lists(postings) == naive(texts)
    assert len(postings) == len(naive(texts))
    assert "" not in postings and postings.get("absent") is None


@given(texts_st, texts_st, st.data())
def test_patched_postings_are_the_postings_built_again(
    old: list[str], added: list[str], data: st.DataObject
) -> None:
    keep = np.array(data.draw(st.lists(st.booleans(), min_size=len(old), max_size=len(old))))
    keep = keep.astype(np.bool_).reshape(len(old))
    patched = Postings.of_texts(old).patched(keep, Postings.of_texts(added))
    kept = [t for t, k in zip(old, keep.tolist(), strict=True) if k]
    assert as_lists(patched) == naive(kept + added)
    # A term whose rows all went reads as absent, and leaves the vocabulary.
    assert set(patched.vocab) == set(naive(kept + added))


def test_a_keep_mask_shorter_than_the_rows_is_refused() -> None:
    with pytest.raises(ValueError, match="keep mask"):
        Postings.of_texts(["a", "b"]).patched(np.ones(1, dtype=np.bool_), Postings.empty())


# -- banks -----------------------------------------------------------------------------------


def vector(draw: st.DrawFn) -> np.ndarray:
    values = draw(st.lists(st.integers(-3, 3), min_size=DIMS, max_size=DIMS))
    return np.array(values, dtype=np.float32)


@st.composite
def memories(draw: st.DrawFn, first_id: int) -> tuple[list[BankRow], list[KeyInput]]:
    count = draw(st.integers(0, 6))
    rows, keys = [], []
    for i in range(count):
        memory_id = first_id + i
        rows.append(
            BankRow(
                id=memory_id,
                branch_id=draw(st.sampled_from([1, 2])),
                depth=draw(st.integers(0, 30)),
                vector=vector(draw),
                pinned=draw(st.booleans()),
                heuristic=draw(st.booleans()),
                terms=frozenset(draw(st.lists(st.sampled_from(WORDS), max_size=4))),
            )
        )
        for k in range(draw(st.integers(0, 3))):
            keys.append(
                KeyInput(
                    id=memory_id * 10 + k,
                    memory_id=memory_id,
                    depth=draw(st.integers(0, 30)),
                    vector=vector(draw),
                    terms=frozenset(draw(st.lists(st.sampled_from(WORDS), max_size=4))),
                    names=frozenset(draw(st.lists(st.sampled_from(["Mara", "Toen"]), max_size=2))),
                )
            )
    return rows, keys


QUANTIZE = 4  # small, so that patches cross the codes' threshold both ways


@settings(max_examples=150, deadline=None)
@given(memories(1), memories(100), st.data())
def test_a_patched_bank_is_the_bank_built_again(
    old: tuple[list[BankRow], list[KeyInput]],
    new: tuple[list[BankRow], list[KeyInput]],
    data: st.DataObject,
) -> None:
    old_rows, old_keys = old
    new_rows, new_keys = new
    # Some old memories changed (their new version among the added, same id) or went.
    dropped = data.draw(st.sets(st.sampled_from([r.id for r in old_rows]))) if old_rows else set()
    changed = data.draw(st.sets(st.sampled_from(sorted(dropped)))) if dropped else set()
    again = [r._replace(depth=r.depth + 1) for r in old_rows if r.id in changed]
    again_keys = [k for k in old_keys if k.memory_id in changed][:1]
    added_rows, added_keys = again + new_rows, again_keys + new_keys
    bank = Bank.build(old_rows, DIMS, old_keys, quantize_at=QUANTIZE)
    added = Bank.build(added_rows, DIMS, added_keys, quantize_at=QUANTIZE)
    drop = np.array(sorted(dropped | {r.id for r in new_rows}), dtype=np.int64)
    patched = bank.patched(drop, added, quantize_at=QUANTIZE)
    kept = [r for r in old_rows if r.id not in dropped]
    kept_keys = [k for k in old_keys if k.memory_id not in dropped]
    want = Bank.build(kept + added_rows, DIMS, kept_keys + added_keys, quantize_at=QUANTIZE)
    same_bank(patched, want)
    # And it ranks the same.
    if want.size:
        query = np.array([1.0, 0.5, -0.25, 0.0], dtype=np.float32)
        lineage = [(1, None), (2, 20)]
        got = rank(patched, lineage_mask(patched, lineage), query, query, ["mara", "key"], 3)
        ref = rank(want, lineage_mask(want, lineage), query, query, ["mara", "key"], 3)
        assert [(s.id, s.key, s.passages) for s in got.chosen] == [
            (s.id, s.key, s.passages) for s in ref.chosen
        ]


def test_a_patch_of_another_vector_size_is_refused() -> None:
    one = BankRow(1, 1, 0, np.ones(DIMS, dtype=np.float32), False, False, frozenset())
    other = BankRow(2, 1, 0, np.ones(DIMS + 1, dtype=np.float32), False, False, frozenset())
    with pytest.raises(ValueError, match="dimensions"):
        Bank.build([one], DIMS).patched(np.zeros(0, dtype=np.int64), Bank.build([other], DIMS + 1))


def test_patched_codes_are_the_codes_made_again() -> None:
    rng = np.random.default_rng(3)
    matrix = rng.standard_normal((9, 16)).astype(np.float32)
    keep = np.array([True, False, True, True, False, True, True, True, False])
    extra = rng.standard_normal((2, 16)).astype(np.float32)
    got = Codes.of(matrix).patched(keep, Codes.of(extra))
    want = Codes.of(np.concatenate((matrix[keep], extra)))
    for name in ("columns", "sums", "scale", "error", "norm"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name))


def test_keys_patched_into_a_bank_without_keys() -> None:
    bank = Bank.build(
        [BankRow(1, 1, 0, np.ones(DIMS, dtype=np.float32), False, False, frozenset())], DIMS
    )
    assert bank.keys is None
    key: Any = KeyInput(20, 2, 0, np.ones(DIMS, dtype=np.float32), frozenset({"ring"}))
    added = Bank.build(
        [BankRow(2, 1, 0, np.ones(DIMS, dtype=np.float32), False, False, frozenset())],
        DIMS,
        [key],
    )
    patched = bank.patched(np.zeros(0, dtype=np.int64), added)
    assert patched.keys is not None and isinstance(patched.keys, Keys)
    assert patched.keys.starts.tolist() == [0, 0, 1]
    assert patched.keys.postings["ring"].tolist() == [0]
