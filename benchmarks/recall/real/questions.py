"""The real-text recall questions: loaded, checked against the text, resolved to evidence.

A question file (``questions/<region>.json``) holds one region's questions, written by
reading the text (never generated from it). Each question:

- ``id``; ``kind``: who / what / where / when / why; ``as``: ``say`` or ``do`` (how the
  player asks it); ``text``: the player's words;
- ``paraphrased``: the question avoids the evidence's own words for what it asks;
  ``once_named``: it names a person or thing the region names only once;
- ``evidence``: one or two passages (two: the question needs both), each ``unit`` (the
  text's unit index), ``from``/``to`` (a few words where the evidence starts and ends in
  that unit: the repository keeps pointers, the corpus the sentence) and ``answer`` (the
  answer's own words, lowercase).

Rules (``parse`` enforces them and says which is broken):

- the unit is askable in the region (``Region.askable``), ``from`` occurs in it once and
  ``to`` after it; the span between is at most ``MAX_SPAN_WORDS`` words;
- every answer word is a word of the span, none is a word of the question, none is a
  pronoun the extractive writer may rewrite (``you``, ``your``);
- the answer is specific: at most ``MAX_HOLDERS`` units of the region hold all its words
  (otherwise finding them proves nothing).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from benchmarks.recall.dense.measure import words
from benchmarks.recall.real.texts import GAP, REGIONS, Region, region_units, units

FOLDER = Path(__file__).with_name("questions")
MAX_SPAN_WORDS = 90
MAX_ANCHOR_WORDS = 10
MAX_HOLDERS = 3
_BANNED = frozenset({"you", "your", "yours"})
KINDS = ("who", "what", "where", "when", "why")


@dataclass(frozen=True)
class Evidence:
    unit: int
    offset: int  # the unit's place in the region (0: the opening)
    span: str  # the evidence, resolved from the text
    answer: tuple[str, ...]


@dataclass(frozen=True)
class Question:
    id: str
    region: str
    kind: str  # one of KINDS
    asked_as: str
    text: str
    paraphrased: bool
    once_named: bool
    evidence: tuple[Evidence, ...]

    @property
    def two_passage(self) -> bool:
        return len(self.evidence) > 1


class QuestionError(ValueError):
    pass


def _span(text: str, start: str, end: str) -> str:
    if not start or not end:
        raise QuestionError("'from' and 'to' must be non-empty")
    for anchor in (start, end):
        if len(anchor.split()) > MAX_ANCHOR_WORDS:
            raise QuestionError(f"anchor {anchor!r} is over {MAX_ANCHOR_WORDS} words")
    at = text.find(start)
    if at < 0:
        raise QuestionError(f"'from' {start!r} is not in the unit")
    if text.find(start, at + 1) >= 0:
        raise QuestionError(f"'from' {start!r} occurs more than once in the unit")
    stop = text.find(end, at)
    if stop < 0:
        raise QuestionError(f"'to' {end!r} does not follow 'from' in the unit")
    span = text[at : stop + len(end)]
    if len(span.split()) > MAX_SPAN_WORDS:
        raise QuestionError(f"the span is {len(span.split())} words (at most {MAX_SPAN_WORDS})")
    return span


@cache
def _words_of(texts: tuple[str, ...]) -> tuple[frozenset[str], ...]:
    """Each unit's words, read once for every question of a region (keyed by the texts, so
    it follows ``units``)."""
    return tuple(frozenset(words(u)) for u in texts)


def _evidence(folder: Path, region: Region, text: str, raw: dict[str, object]) -> Evidence:
    unit = raw.get("unit")
    if not isinstance(unit, int) or not region.askable(unit):
        raise QuestionError(
            f"unit {unit!r} is not askable in {region.key} "
            f"({region.start}..{region.end - GAP} by index into the whole text)"
        )
    span = _span(units(folder, region.file)[unit], str(raw.get("from", "")), str(raw.get("to", "")))
    answer = raw.get("answer")
    if not isinstance(answer, list) or not 1 <= len(answer) <= 4:
        raise QuestionError("'answer' must be a list of 1 to 4 words")
    answer_words = tuple(str(a) for a in answer)
    in_span, asked = words(span), words(text)
    for word in answer_words:
        if word != word.lower() or words(word) != {word}:
            raise QuestionError(f"answer word {word!r} must be one lowercase word")
        if word not in in_span:
            raise QuestionError(f"answer word {word!r} is not in the span {span!r}")
        if word in asked:
            raise QuestionError(f"answer word {word!r} is in the question itself")
        if word in _BANNED:
            raise QuestionError(f"answer word {word!r} may be rewritten by the writer")
    holders = sum(
        1 for held in _words_of(region_units(folder, region)) if set(answer_words) <= held
    )
    if holders > MAX_HOLDERS:
        raise QuestionError(
            f"answer {list(answer_words)} is held by {holders} units of the region "
            f"(at most {MAX_HOLDERS}): add a more specific word"
        )
    return Evidence(unit, unit - region.start, span, answer_words)


def parse(folder: Path, data: dict[str, object]) -> list[Question]:
    """The questions of one file, every rule checked (``QuestionError`` names the first
    broken rule and the question)."""
    key = data.get("region")
    if key not in REGIONS:
        raise QuestionError(f"unknown region {key!r}: one of {sorted(REGIONS)}")
    region = REGIONS[str(key)]
    raw_questions = data.get("questions")
    if not isinstance(raw_questions, list):
        raise QuestionError("'questions' must be a list")
    out: list[Question] = []
    seen: set[str] = set()
    for raw in raw_questions:
        qid = str(raw.get("id", ""))
        try:
            if not qid or qid in seen:
                raise QuestionError("missing or repeated id")
            seen.add(qid)
            kind = str(raw.get("kind"))
            if kind not in KINDS:
                raise QuestionError(f"'kind' {kind!r} is not one of {', '.join(KINDS)}")
            asked_as = str(raw.get("as"))
            if asked_as not in ("say", "do"):
                raise QuestionError("'as' must be say or do")
            text = str(raw.get("text", "")).strip()
            if not text:
                raise QuestionError("'text' is empty")
            ev = raw.get("evidence")
            if not isinstance(ev, list) or not 1 <= len(ev) <= 2:
                raise QuestionError("'evidence' must hold one or two passages")
            evidence = tuple(_evidence(folder, region, text, e) for e in ev)
        except (QuestionError, ValueError) as exc:
            raise QuestionError(f"{region.key} question {qid or '?'}: {exc}") from exc
        out.append(
            Question(
                qid, region.key, kind, asked_as, text,
                bool(raw.get("paraphrased")), bool(raw.get("once_named")), evidence,
            )
        )  # fmt: skip
    return out


def load(folder: Path, region: str) -> list[Question]:
    """The checked questions of ``region`` (from ``FOLDER``/<region>.json)."""
    path = FOLDER / f"{region}.json"
    return parse(folder, json.loads(path.read_text(encoding="utf-8")))


def tally(questions: list[Question]) -> dict[str, int]:
    """How many questions of each kind and flag (the set's make-up, for the report)."""
    counts: Counter[str] = Counter(q.kind for q in questions)
    counts["say"] = sum(q.asked_as == "say" for q in questions)
    counts["paraphrased"] = sum(q.paraphrased for q in questions)
    counts["once_named"] = sum(q.once_named for q in questions)
    counts["two_passage"] = sum(q.two_passage for q in questions)
    counts["total"] = len(questions)
    return dict(counts)
