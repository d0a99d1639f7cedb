"""The who-knows-what leak benchmark: its generator (moves the rules read, unique facts,
private tellings) and a quick run end to end through the engine (the loopback double
narrating and embedding, on the kit's own temporary SQLite file)."""

from __future__ import annotations

from pathlib import Path

import pytest
from benchmarks.kit.report import write_section
from benchmarks.knowing import report, run
from benchmarks.knowing.generator import ADJECTIVES, FILLER, NOUNS, generate
from benchmarks.knowing.measure import LABELLED, MEMORIES

from talekeeper.services.world.rules import derive
from talekeeper.storage.vocabulary import EventKind

pytestmark = pytest.mark.no_database


def test_a_seed_gives_the_same_story_and_moves_read_as_one_event_each() -> None:
    one, two = generate(7, 6), generate(7, 6)
    assert one.turns == two.turns and one.questions == two.questions
    assert generate(8, 6).turns != one.turns
    for turn in one.turns:
        kinds = [e.kind for e in derive("narration", turn.reply)]
        moves = [s for s in turn.reply.split(". ") if s.endswith(("arrives", "leaves"))]
        assert kinds.count(EventKind.ARRIVED) + kinds.count(EventKind.LEFT) == len(moves)
        assert set(kinds) <= {EventKind.ARRIVED, EventKind.LEFT, EventKind.LEARNED}
    for fact in one.facts:
        assert derive("narration", fact.sentence) == []
        assert one.turns[fact.depth - 1].reply.startswith(fact.sentence)
        assert fact.throughout <= fact.present
    words = set(ADJECTIVES) | set(NOUNS)
    assert not any(w.strip(".,").lower() in words for s in FILLER for w in s.split())


def test_a_quick_run_measures_every_kind_of_question(tmp_path: Path) -> None:
    result, seen = run.measure(run.TUNE_SEED, [], "double", run.QUICK_FACTS, quick=True)
    observations = seen[run.TUNE_SEED]
    kinds = {o.kind for o in observations}
    assert {"present", "absent", "told", "story"} <= kinds
    figures = result.tune.figures
    # Today's context gives the absent character every retrieved fact: a leak is counted.
    assert figures["off"].leak.value > 0
    assert figures["off"].leak_channels[MEMORIES] > 0
    # Strict leaves the unwitnessed fact out of the Memories section, labelled or not.
    strict_absent = [o for o in observations if o.mode == "strict" and o.kind == "absent"]
    assert strict_absent and not any(
        c in (MEMORIES, LABELLED) for o in strict_absent for c in o.found
    )
    # Label keeps it, under the label.
    label_absent = [o for o in observations if o.mode == "label" and o.kind == "absent"]
    assert any(LABELLED in o.found for o in label_absent)
    # Narration that addresses no one: the same prompt in every mode.
    story = [o for o in observations if o.kind == "story"]
    assert story and all(o.addressed is None and o.prompt for o in story)
    assert result.tune.counts.story_same == result.tune.counts.story_total > 0
    path = tmp_path / "benchmarks.md"
    write_section(path, "other", "Other", "before")
    write_section(path, report.SECTION, report.TITLE, report.markdown(result))
    text = path.read_text()
    body = text.split("<!-- bench:knowing -->", 1)[1].split("<!-- /bench:knowing -->", 1)[0]
    assert "**leak rate**" in body and "| (b) facts in the Memories section at all |" in body
    assert "<!-- bench:other -->" in text
