"""Two ranking banks (``Bank``) compared field by field: rows, vectors, postings, keys and
their int8 codes; a patched bank must be the bank built again from scratch."""

from __future__ import annotations

import numpy as np

from talekeeper.services.memory.arrays import Bank
from talekeeper.services.memory.postings import Postings


def as_lists(postings: Postings) -> dict[str, list[int]]:
    return {term: rows.tolist() for term, rows in postings.items()}


def same_bank(got: Bank, want: Bank) -> None:
    for name in ("ids", "branch_ids", "depths", "pinned", "heuristic"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
    np.testing.assert_array_equal(got.vectors, want.vectors)
    assert as_lists(got.postings) == as_lists(want.postings)
    if want.keys is None or not want.keys.size:
        assert got.keys is None or not got.keys.size
        return
    assert got.keys is not None
    for name in ("ids", "owner", "depths", "starts"):
        np.testing.assert_array_equal(getattr(got.keys, name), getattr(want.keys, name), name)
    np.testing.assert_array_equal(got.keys.vectors, want.keys.vectors)
    assert got.keys.names == want.keys.names
    assert as_lists(got.keys.postings) == as_lists(want.keys.postings)
    assert (got.keys.codes is None) == (want.keys.codes is None)
    if got.keys.codes is not None and want.keys.codes is not None:
        for name in ("columns", "sums", "scale", "error", "norm"):
            np.testing.assert_array_equal(
                getattr(got.keys.codes, name), getattr(want.keys.codes, name), name
            )
