"""The real-text recall benchmark's rules on a made-up corpus: how texts become actions, how a
question is checked against its text, what counts as the answering sentence, and that the
benchmark says so (and writes nothing) when the corpus is missing. The shipped question
files are checked against the real corpus where it is present."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from benchmarks.recall.real import run as real_run
from benchmarks.recall.real.play import actions, sentence_in, sentence_share
from benchmarks.recall.real.questions import (
    FOLDER,
    MAX_SPAN_WORDS,
    QuestionError,
    load,
    parse,
    tally,
)
from benchmarks.recall.real.texts import (
    CORPUS_ENV,
    GAP,
    NOVEL,
    PLAYS,
    REGIONS,
    CorpusMissing,
    find_corpus,
    units,
)

from talekeeper.core.tokens import BpeCounter

RARE = "The quartermaster hid the brass astrolabe beneath the ninth piling."


def fake_corpus(root: Path) -> Path:
    """A corpus folder whose novel and plays are long enough for every region."""
    folder = root / "corpus"
    folder.mkdir()
    paragraphs = [f"Paragraph {i} says _little_ of\nnote." for i in range(1300)]
    paragraphs[10] = f"Mrs. Long called. {RARE} Then she left."
    (folder / NOVEL).write_text("\n\n".join(paragraphs), encoding="utf-8")
    speeches = [f"FIRST CITIZEN:\nSpeech {i} is\nshort." for i in range(3300)]
    speeches[5] = "LADY CAPULET:\nWhere is my daughter?\nCall her forth."
    (folder / PLAYS).write_text("\n\n".join(speeches), encoding="utf-8")
    return folder


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    units.cache_clear()
    return fake_corpus(tmp_path)


def question(**changes: Any) -> dict[str, Any]:
    evidence = {"unit": 10, "from": "The quartermaster", "to": "ninth piling.",
                "answer": ["astrolabe"]}  # fmt: skip
    base: dict[str, Any] = {
        "id": "q1",
        "kind": "where",
        "as": "say",
        "text": "Where did the sailor put the navigation instrument?",
        "evidence": [evidence | changes.pop("evidence", {})],
    }
    return base | changes


def test_units_are_paragraphs_and_speeches_as_a_player_reads_them(corpus: Path) -> None:
    novel = units(corpus, NOVEL)
    assert novel[0] == "Paragraph 0 says little of note."  # lines joined, italics dropped
    plays = units(corpus, PLAYS)
    assert plays[5] == "Lady Capulet: Where is my daughter? Call her forth."
    assert plays[0] == "First Citizen: Speech 0 is short."


def test_a_question_resolves_to_its_span_and_depth(corpus: Path) -> None:
    [q] = parse(corpus, {"region": "pp-tune", "questions": [question()]})
    [evidence] = q.evidence
    assert evidence.span == RARE and evidence.offset == 10 and evidence.answer == ("astrolabe",)
    assert tally([q]) == {
        "where": 1, "say": 1, "paraphrased": 0, "once_named": 0, "two_passage": 0, "total": 1
    }  # fmt: skip


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"evidence": {"from": "The harbourmaster"}}, "is not in the unit"),
        ({"evidence": {"to": "Mrs. Long"}}, "does not follow"),
        ({"evidence": {"answer": ["Astrolabe"]}}, "one lowercase word"),
        ({"evidence": {"answer": ["compass"]}}, "is not in the span"),
        ({"evidence": {"answer": ["brass"]}, "text": "Where is the brass thing?"}, "question"),
        ({"evidence": {"unit": 320}}, "is not askable"),  # within GAP of the region's end
        (
            {"evidence": {"unit": 5, "from": "Paragraph", "to": "note.", "answer": ["paragraph"]}},
            "held by",
        ),  # fmt: skip
        ({"as": "shout"}, "say or do"),
        ({"kind": "how"}, "how"),
    ],
)
def test_a_question_that_breaks_a_rule_is_refused_saying_which(
    corpus: Path, changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(QuestionError, match=message):
        parse(corpus, {"region": "pp-tune", "questions": [question(**changes)]})


def test_a_span_longer_than_a_sentence_or_two_is_refused(corpus: Path) -> None:
    long = " ".join(["word"] * (MAX_SPAN_WORDS + 5))
    text = (corpus / NOVEL).read_text(encoding="utf-8").replace(RARE, f"{RARE} {long} end.")
    (corpus / NOVEL).write_text(text, encoding="utf-8")
    units.cache_clear()
    with pytest.raises(QuestionError, match="words"):
        parse(corpus, {"region": "pp-tune", "questions": [question(evidence={"to": "end."})]})


def test_questions_are_askable_only_gap_actions_before_the_end() -> None:
    for region in REGIONS.values():
        assert region.askable(region.start)
        assert region.askable(region.end - GAP) and not region.askable(region.end - GAP + 1)
        assert region.length % 2 == 1  # the opening, then whole turns


def test_long_units_are_cut_at_sentence_ends_but_never_inside_evidence() -> None:
    counter = BpeCounter()
    sentence = "The lantern swung over the quay while the tide ran out fast. "
    unit = sentence * 12 + RARE + " " + sentence * 12
    pieces = actions((unit,), {0: [RARE]}, counter, 60)
    assert len(pieces) > 2 and "".join(p for _, p in pieces).replace(" ", "") == unit.replace(
        " ", ""
    )
    assert sum(RARE in p for _, p in pieces) == 1  # the span stays whole
    assert all(counter.count(p) <= 60 or RARE in p for _, p in pieces)
    assert actions(("Short.",), {}, counter, 60) == [(0, "Short.")]


def test_the_answering_sentence_counts_when_most_of_its_terms_share_one_line() -> None:
    span = "The quartermaster hid the brass astrolabe beneath the ninth piling."
    assert sentence_share("quartermaster hid astrolabe beneath ninth piling", span) == 6 / 7
    assert sentence_in(["- the quartermaster hid the brass astrolabe beneath"], [span])  # 5 of 7
    assert not sentence_in(["- the quartermaster hid the brass astrolabe"], [span])  # 4 of 7
    # The same words spread over two lines are no sentence.
    assert not sentence_in(
        ["quartermaster hid the brass", "astrolabe beneath ninth piling"], [span]
    )
    assert not sentence_in(["anything"], [])


def test_the_corpus_is_found_where_told_or_the_benchmark_says_where_it_looked(
    corpus: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert find_corpus(corpus) == corpus
    monkeypatch.setenv(CORPUS_ENV, str(corpus))
    assert find_corpus() == corpus
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CorpusMissing, match="looked in"):
        find_corpus(empty)
    out = tmp_path / "bench.md"
    assert real_run.main(["--corpus", str(empty), "--write", str(out)]) == 0
    assert "Real-text recall skipped" in capsys.readouterr().err
    assert not out.exists()


def test_the_shipped_question_files_hold_to_every_rule_on_the_real_corpus() -> None:
    try:
        folder = find_corpus()
    except CorpusMissing as exc:
        pytest.skip(str(exc))
    units.cache_clear()
    total = 0
    for key, region in REGIONS.items():
        questions = load(folder, key)
        made = tally(questions)
        assert made["total"] >= 40 and made["two_passage"] >= 6 and made["paraphrased"] >= 12
        assert {q.region for q in questions} == {key}
        assert all(region.askable(e.unit) for q in questions for e in q.evidence)
        total += made["total"]
    assert total >= 150
    assert sorted(p.stem for p in FOLDER.glob("*.json")) == sorted(REGIONS)
    json.loads((FOLDER / "pp-tune.json").read_text(encoding="utf-8"))  # plain JSON
