"""Terms: the words lexical retrieval matches on (docs/memory.md §5).

A term is a lowercase run of letters and digits, with apostrophes allowed
inside a word ("don't"). Then, in this order:

1. a possessive ``'s`` (or ``’s``) is dropped: "mara's" -> "mara";
2. a stop word is removed (checked before and after step 3, so "always" and
   "perhaps" never become "alway" / "perhap" and leak through);
3. a trailing plural ``s`` is folded on words of at least
   ``PLURAL_MIN_LENGTH`` characters that do not end in ``ss``:
   "lanterns" -> "lantern"; "glass" and "keys" stay.

There is no stemmer beyond that: the same rules run on the player's input and
on every memory, so a word and its plural meet, and nothing cleverer can make
two unrelated words collide. ``terms`` keeps order and duplicates (callers
that count need them); ``term_set`` is what a memory is indexed by.

Invariants: every term is non-empty, lowercase, has no stop word, and
``terms(text)`` is a function of ``text`` alone.
"""

from __future__ import annotations

import re

# Letters and digits (Unicode-aware, no underscore), apostrophes only between them.
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_CURLY_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "ʼ": "'"})
_POSSESSIVE = "'s"

# Words that end with a full stop without ending a sentence ("Mr. Darcy", "St. Ives"); with
# single capital initials ("J. R. Smith"), every sentence splitter of the memory system keeps
# them in their sentence.
ABBREVIATIONS = frozenset(
    ("mr", "mrs", "ms", "dr", "st", "mt", "capt", "lt", "sgt", "col", "gen", "prof", "sr", "jr")
    + ("vs",)
)


def abbreviation(word: str) -> bool:
    """Whether ``word`` followed by a full stop leaves its sentence open: a title of
    ``ABBREVIATIONS`` or a capital initial. "I" and "A" are words ("It was I. Then...")."""
    return word.lower() in ABBREVIATIONS or (len(word) == 1 and word.isupper() and word not in "AI")


PLURAL_MIN_LENGTH = 5  # "keys", "arms", "eyes": too short to tell a plural from a word
_NOT_PLURAL_ENDING = "ss"  # "glass", "princess", "fortress" end in s but are singular

# Function words that say nothing about which memory is meant, plus the pieces a
# contraction leaves when split elsewhere ("s", "t", "ll", ...).
_STOP_TEXT = """
a about above after again against all almost already also always am an and another any
anyway are aren't around as at away
be because been before being below between both but by
can can't cannot could couldn't
did didn't do does doesn't doing don't down during
each either else ever every
few for from further
had hadn't has hasn't have haven't having he he'd he'll her here hers herself him himself
his how however
i i'd i'll i'm i've if in into is isn't it it's its itself
just let let's
may me might more most must mustn't my myself
neither no nor not now
of off on once only or other ought our ours ourselves out over own
perhaps quite rather
same shall shan't she she'd she'll should shouldn't so some such
than that that's the their theirs them themselves then there there's these they they'd
they'll they're they've this those though through to too
under until up upon us very
was wasn't we we'd we'll we're we've were weren't what what's when where where's whether
which while who who's whom whose why will with within without won't would wouldn't
yet you you'd you'll you're you've your yours yourself yourselves
s t d ll m re ve
"""
STOP_WORDS: frozenset[str] = frozenset(_STOP_TEXT.split())


def _normalise(word: str) -> str | None:
    """One raw word as a term, or None when it carries no meaning of its own."""
    if word.endswith(_POSSESSIVE) and len(word) > len(_POSSESSIVE):
        word = word[: -len(_POSSESSIVE)]
    if word in STOP_WORDS:
        return None
    if (
        len(word) >= PLURAL_MIN_LENGTH
        and word.endswith("s")
        and not word.endswith(_NOT_PLURAL_ENDING)
    ):
        word = word[:-1]
        if word in STOP_WORDS:
            return None
    return word


def terms(text: str) -> list[str]:
    """The terms of ``text`` in order, duplicates kept."""
    lowered = text.translate(_CURLY_APOSTROPHES).lower()
    out: list[str] = []
    for match in _WORD.finditer(lowered):
        term = _normalise(match.group(0))
        if term:
            out.append(term)
    return out


def term_set(text: str) -> frozenset[str]:
    """The distinct terms of ``text``: what a memory is indexed by."""
    return frozenset(terms(text))
