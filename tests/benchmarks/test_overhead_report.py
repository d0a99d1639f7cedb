"""The overhead benchmark's bank plans and its report, on made-up timings."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks.kit.report import Clock
from benchmarks.overhead import BANK_CAPACITY, PARTS, SizeResult, _blocks, draw, markdown


def test_a_story_bank_is_one_memory_per_block_with_the_oldest_forgotten() -> None:
    blocks, forgotten = _blocks(10_000, None)
    assert blocks[:2] == [(1, 6), (7, 12)]
    assert all(end - start == 5 for start, end in blocks)
    assert len(blocks) - forgotten == BANK_CAPACITY
    small, none_forgotten = _blocks(100, None)
    assert none_forgotten == 0 and len(small) < BANK_CAPACITY


def test_a_sized_bank_spreads_that_many_active_memories_over_the_story() -> None:
    blocks, forgotten = _blocks(1_000, 5_000)
    assert forgotten == 0 and len(blocks) == 5_000
    assert blocks[0] == (1, 6) and max(end for _, end in blocks) <= 1_000
    assert blocks == sorted(blocks)


def _result(size: int, bank: int | None, median: float, retrieve: float) -> SizeResult:
    r = SizeResult(size, bank)
    r.totals, r.cpu = [median] * 3, [median] * 3
    r.timings = {k: [retrieve if k == "retrieve_ms" else 1.0] * 3 for k in PARTS}
    r.history_read = [63] * 3
    return r


def test_the_report_has_both_series_the_verdict_and_the_growth(tmp_path: Path) -> None:
    results = [
        _result(1_000, None, 9.0, 1.0),
        _result(10_000, None, 9.9, 1.1),
        _result(1_000, 25, 8.0, 1.0),
        _result(1_000, 5_000, 12.0, 4.0),
    ]
    clock = Clock("make bench", "test machine", load_before=0.1, load_after=0.2, seconds=1.0)
    text = markdown(results, 3, 1, clock, "benchmarks/overhead.png")
    assert "### By story length" in text and "### By bank size" in text
    assert "| 10,000 | 9.90 ms |" in text and "| 5,000 | 12.00 ms |" in text
    assert "**met** (9.00 ms)" in text
    assert "×1.10 in the median" in text
    assert (
        "From 25 to 5,000 active memories: ×1.50 in the median (retrieval 1.00 → 4.00 ms)" in text
    )
    assert (
        "On test machine, load average 0.1 before and 0.2 after, 1 s in all (`make bench`)." in text
    )
    pytest.importorskip("matplotlib")
    draw(results, tmp_path / "overhead.png")
    assert (tmp_path / "overhead.png").read_bytes().startswith(b"\x89PNG")
