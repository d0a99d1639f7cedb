"""The real texts, cut into the actions of a story, and the regions the recall sets play.

The texts are read from a corpus folder outside the repository (``find_corpus``):
the repository holds only the questions, each pointing into a text by unit index and
by a few words where its evidence starts and ends (``questions``), never the text.

Units (the actions of the story), in reading order; invariants:

- **Novel** (``pride-and-prejudice.txt``): one unit per paragraph (blank-line
  separated), its line breaks joined by spaces and ``_italic_`` marks dropped.
- **Plays** (``shakespeare-plays.txt``): one unit per speech, written
  ``Speaker: words`` with the speaker in title case ("LADY CAPULET" -> "Lady Capulet")
  and the verse lines joined by spaces.
- A **region** is the units ``start``..``end`` (inclusive) of one text, played as one
  adventure: the first unit is the opening (depth 0), then turns of two units (the
  player's ``story`` action, the narrator's reply), so the unit at ``start + d`` is the
  action at depth ``d``. Questions are asked after the last unit, about units at least
  ``GAP`` actions back. Each region is either ``tune`` or ``held-out``, fixed here before
  any ranking was tuned: the held-out regions are other chapters and another play.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from pathlib import Path

NOVEL = "pride-and-prejudice.txt"
PLAYS = "shakespeare-plays.txt"
CORPUS_ENV = "TALEKEEPER_CORPUS"
GAP = 50  # a question is about a unit at least this many actions before the last


class Split(StrEnum):
    TUNE = "tune"
    HELD_OUT = "held-out"


@dataclass(frozen=True)
class Region:
    key: str
    file: str
    start: int  # unit index of the opening
    end: int  # unit index of the last action (inclusive)
    split: Split
    title: str
    protagonist: str  # the persona: the player's character
    cast: tuple[str, ...]  # story cards, as a player would keep them

    @property
    def length(self) -> int:
        return self.end - self.start + 1

    def askable(self, unit: int) -> bool:
        """Whether a question may be about ``unit`` (inside, and ``GAP`` back from the end)."""
        return self.start <= unit <= self.end - GAP


# Lengths are odd (the opening, then whole turns). Novel: chapters 1-9 tune, 29-38 held out;
# plays: the opening of Coriolanus tune, of Romeo and Juliet held out.
REGIONS: dict[str, Region] = {
    r.key: r
    for r in (
        Region(
            "pp-tune", NOVEL, 0, 326, Split.TUNE, "Pride and Prejudice, chapters 1-9",
            "Elizabeth", ("Elizabeth", "Jane", "Mr. Bennet", "Mrs. Bennet", "Mr. Bingley",
                          "Mr. Darcy", "Miss Bingley", "Charlotte Lucas", "Sir William Lucas"),
        ),
        Region(
            "pp-held", NOVEL, 907, 1167, Split.HELD_OUT, "Pride and Prejudice, chapters 29-38",
            "Elizabeth", ("Elizabeth", "Mr. Darcy", "Lady Catherine", "Mr. Collins",
                          "Charlotte", "Colonel Fitzwilliam", "Maria Lucas", "Mr. Wickham"),
        ),
        Region(
            "sh-tune", PLAYS, 0, 450, Split.TUNE, "Coriolanus, the opening",
            "Menenius", ("Menenius", "Caius Marcius", "Cominius", "Aufidius", "Volumnia",
                         "Virgilia", "Sicinius", "Brutus", "Titus Lartius"),
        ),
        Region(
            "sh-held", PLAYS, 2750, 3200, Split.HELD_OUT, "Romeo and Juliet, the opening",
            "Benvolio", ("Romeo", "Juliet", "Benvolio", "Mercutio", "Tybalt", "Nurse",
                         "Capulet", "Lady Capulet", "Montague", "Paris", "Friar Laurence"),
        ),
    )
}  # fmt: skip

_BLANK = re.compile(r"\n[ \t]*\n")
_SPACE = re.compile(r"\s+")
_ITALIC = re.compile(r"_([^_\n]+)_")


class CorpusMissing(FileNotFoundError):
    """The corpus folder (or one of its texts) is not where the benchmark looks."""


def find_corpus(given: str | Path | None = None) -> Path:
    """The corpus folder: ``given``, else ``$TALEKEEPER_CORPUS``, else a ``corpus`` folder
    beside the checkout or one level out. Raises ``CorpusMissing`` saying where it looked."""
    if given is None and os.environ.get(CORPUS_ENV):
        given = os.environ[CORPUS_ENV]
    root = Path(__file__).resolve().parents[3]
    tried = (
        [Path(given)]
        if given is not None
        else [root / "corpus", root.parent / "corpus", *sorted(root.parent.glob("*/corpus"))]
    )
    for folder in tried:
        if (folder / NOVEL).is_file() and (folder / PLAYS).is_file():
            return folder
    where = ", ".join(str(p) for p in tried) or str(root.parent)
    raise CorpusMissing(
        f"the real-text recall sets need {NOVEL} and {PLAYS}; looked in {where}. "
        f"Pass --corpus DIR or set {CORPUS_ENV}."
    )


def _speech(block: str) -> str:
    speaker, _, words = block.partition(":\n")
    if not words:  # a speech whose speaker line has no words under it
        return _SPACE.sub(" ", block).strip()
    return f"{_SPACE.sub(' ', speaker).strip().title()}: {_SPACE.sub(' ', words).strip()}"


@cache
def units(folder: Path, file: str) -> tuple[str, ...]:
    """The text's units (module docstring), in reading order."""
    raw = (folder / file).read_text(encoding="utf-8")
    blocks = [b.strip() for b in _BLANK.split(raw) if b.strip()]
    if file == PLAYS:
        return tuple(_speech(b) for b in blocks)
    return tuple(_SPACE.sub(" ", _ITALIC.sub(r"\1", b)) for b in blocks)


def region_units(folder: Path, region: Region) -> tuple[str, ...]:
    return units(folder, region.file)[region.start : region.end + 1]
