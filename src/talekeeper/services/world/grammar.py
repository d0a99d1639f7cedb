"""The pieces the world's rules build their patterns from (``rules``, ``patterns``,
``people``): a bounded noun phrase, someone named, the player as a sentence's subject, and
the words that are never an item or a place.

Invariants: every piece reads a bounded stretch of text (``NP_CHARS``), so no pattern built
from them costs more than linear time in its sentence; names are told in any cased script
and in scripts without case.
"""

from __future__ import annotations

import re

# At most ``NP_CHARS`` characters: each match reads a bounded stretch of its sentence, so a
# sentence of many "you give ..." without a "to" costs linear time, not quadratic.
NP_CHARS = 80
END = (
    r"(?=\s*(?:[,;:.!?\"“”()]|$|\s(?:and|then|from|off|with|before|after|as|while|but|at|on|"
    r"in|by|for|through|toward|towards|under|over|near|behind|beside|into|onto|to|again|too|"
    r"back|quickly|carefully|slowly|gently|now|instead|also|once more|out of|just|when)\b))"
)
YOU = r"(?:^|[\s\"“>])(?i:you|i)\s+"
MINE = r"(?:your|my)"
# A capitalised word of a cased script, or a word of a script without case.
UPPER = "A-ZÀ-ÖØ-ÞΆΈ-ΏΑ-ΩЀ-Я"
CASELESS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
CAP = rf"(?:[{UPPER}{CASELESS}][\w'’-]*)"
CONTAINERS = (
    r"(?:belt|pack|pocket|pockets|coat|bag|satchel|cloak|boot|sleeve|shirt|purse|pouch|"
    r"jacket|rucksack|knapsack|sack|tunic|apron)"
)


def np(name: str) -> str:
    """A noun phrase named ``name``: up to the next clause boundary (``END``), at most
    ``NP_CHARS`` characters."""
    return rf"(?P<{name}>(?:the |a |an |your |my |some )?[^,;:.!?\"“”()]{{1,{NP_CHARS}}}?)"


def named(name: str) -> str:
    """Someone named: up to four capitalised (or caseless-script) words."""
    return rf"(?<![\w'’])(?P<{name}>{CAP}(?: {CAP}){{0,3}})"


def you(verbs: str, rest: str) -> re.Pattern[str]:
    return re.compile(YOU + rf"(?:{verbs})\s+" + rest, re.IGNORECASE)


# What a verb of taking, giving or going also takes, that is no item or place.
NOT_THINGS = frozenset({
    "road", "path", "way", "stairs", "steps", "step", "breath", "breaths", "seat", "turn",
    "chance", "look", "glance", "moment", "lead", "time", "note", "aim", "care", "rest", "cover",
    "shelter", "hand", "hands", "left", "right", "notice", "leave", "smile", "nod", "grin",
    "wink", "shrug", "hug", "kiss", "warning", "answer", "pause", "creeps", "idea", "advice",
    "news", "word", "reason", "tears", "knees", "senses", "attention", "conclusion", "choice",
    "decision", "arm", "arms", "shoulder", "shoulders", "wrist", "elbow", "head", "face", "down",
    "awake", "doubt", "task", "halt", "stop", "end", "terms", "understanding", "agreement",
    "work", "sleep", "bed", "door", "doorway", "window", "fire", "edge", "corner", "side",
    "middle", "centre", "center", "front", "rail", "railing", "life", "feet", "yourself",
    "myself", "blows",
})  # fmt: skip
