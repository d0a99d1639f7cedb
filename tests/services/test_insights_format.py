"""The stored Insights format (``services.prompt.insights.Snapshot``): a snapshot of any version
reads, writes back exactly as it was stored, and prints; a text that is not one reads as
None."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from talekeeper.cli.play import Terminal
from talekeeper.services.prompt import insights
from talekeeper.services.prompt.insights import INSIGHTS_VERSION, Snapshot

pytestmark = pytest.mark.no_database

# Before ``version``, ``knowledge``, ``layout`` and the prompt's cache figures, with a key
# this version does not declare, in a part too.
OLDER: dict[str, Any] = {
    "sections": [
        {"name": "memories", "title": "Memories", "tokens": 0, "text": "", "reason": "none"},
        {"name": "history", "title": "Recent history", "tokens": 12, "text": "x", "cut": False},
    ],
    "memories": {
        "used": [{"id": 4, "text": "Mara owes the harbourmaster.", "final_score": 0.5}],
        "considered": 3,
        "suppressed": [],
        "query": {"input": "ask Mara", "weights": {"input": 0.6, "hop": True, "window": 50}},
        "note": "",
    },
    "cards": [{"id": 1, "name": "Mara", "keyword": "mara", "where": "story", "weight": 2}],
    "history": {"kept": 1, "dropped": 0},
    "budget": {"available": 3848, "used": 120},
    "model": "old-narrator",
    "mode": "chat",
    "timings": {"read_ms": 0.5},
    "tokens": {"prompt": 120, "reply": 9},
    "retry_of": None,
    "branch_id": 1,
    "dry_run": False,
    "written_by": "0.0.9",
}


def compact(data: object) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def test_a_snapshot_from_before_the_version_reads_and_writes_back_as_stored() -> None:
    read = insights.loads(compact(OLDER))
    assert read is not None
    assert read.version == 0 and read.layout.name == "" and read.knowledge.used == []
    assert read.memories.used[0].final_score == 0.5 and read.cards[0].always_on is False
    assert read.memories.query.weights == {"input": 0.6, "hop": True, "window": 50}
    assert insights.dumps(read) == compact(OLDER)  # nothing added, nothing dropped
    assert read.for_action(7).public() == {**OLDER, "action_id": 7}


def test_a_snapshot_keeps_only_the_keys_it_was_given_and_says_its_version() -> None:
    snapshot = Snapshot(version=INSIGHTS_VERSION, model="m")
    assert snapshot.public() == {"version": INSIGHTS_VERSION, "model": "m"}
    timed = snapshot.with_timing("save_ms", 2.5).for_action(3)
    assert timed.public() == {
        "version": INSIGHTS_VERSION,
        "model": "m",
        "timings": {"save_ms": 2.5},
        "action_id": 3,
    }
    assert insights.loads(insights.dumps(timed)) == timed


@pytest.mark.parametrize(
    "text",
    [
        "{not json",
        "[1, 2]",
        '"a string"',
        compact({"sections": "all of them"}),
        compact({"budget": {"used": "many"}}),
        compact({"cards": [{"id": "first"}]}),
    ],
)
def test_a_text_that_is_not_a_snapshot_reads_as_none(text: str) -> None:
    assert insights.loads(text) is None


def test_the_terminal_prints_a_snapshot_from_before_the_version() -> None:
    read = insights.loads(compact(OLDER))
    assert read is not None
    out = io.StringIO()
    Terminal(None, 1, 1, None, out).print_insights(read)  # type: ignore[arg-type]
    lines = out.getvalue().splitlines()
    assert lines[0] == "model old-narrator (chat), 120/3848 tokens"
    assert not any("context layout" in line or "prompt evaluated" in line for line in lines)
    assert "  card Mara: 'mara' in the story" in lines
    assert "  memory #4 0.50: Mara owes the harbourmaster." in lines
