"""When a story card's keywords appear in a turn's text: the one definition, and its index.

Invariants:

- ``keyword_in`` is the one definition of "appears", ignoring case. A keyword in a
  script written without spaces between words (Chinese, Japanese kana, Korean Hangul,
  Thai: ``SPACELESS``) appears wherever it is a substring of the text ("東京" in
  "我们去東京吧"); any other keyword appears only as a whole word or phrase ("Mara" fires
  on "mara's boat" and "MARA", never on "Marathon"). In both, the words of a phrase may
  be apart by any run of white space.
- A card fires when one of its primary keywords appears and its secondary keywords, if
  it has any, satisfy its ``SecondaryRule``: ANY, at least one of them appears; ALL,
  every one; NONE, not one. The text scanned is the same for both: the player's input
  and the recent story. The primary keyword reported is the card's first in its own order
  that appears in the input, else in the story; the secondary ones reported are all of
  those that appear (none, for NONE).
- A card set is matched by one ``CardMatcher``, built once per set of card keys and
  cached by exactly those, so any change to a card's keywords or rule, a card added or a
  card deleted builds a new one. A turn costs the words (and, for the spaceless scripts,
  the character pairs) of its text plus the keywords that could fire, not the number of
  cards.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import lru_cache
from typing import Literal, NamedTuple

MATCHERS_KEPT = 4  # card sets whose matcher stays built: the adventures being played now

# Where a keyword was found: the player's input, the recent story, or (``earlier``: a card
# the context layout ``cache`` keeps heading the history after its keyword left the recent
# story, until the history moves) the story before.
Where = Literal["input", "story", "earlier"]
WORD = re.compile(r"\w+")
# Scripts whose words are not set apart by spaces, so ``\w`` joins a keyword to its
# neighbours: Thai, Hangul (jamo, compatibility jamo, syllables), the ideographic marks
# 々〆〇, kana (with the halfwidth forms), CJK ideographs (every extension, and the
# compatibility ones). None of their letters has another case (a test checks).
_SPACELESS_LETTERS = (
    "\u0e00-\u0e7f\u1100-\u11ff\u3005-\u3007\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7af\ud7b0-\ud7ff\uf900-\ufaff"
    "\uff66-\uff9f\U00020000-\U0003134f"
)

CARD_TYPES = ("character", "location", "item", "faction", "lore", "other")  # what a card may be
SPACELESS = re.compile(f"[{_SPACELESS_LETTERS}]")
_SPACELESS_RUN = re.compile(f"[{_SPACELESS_LETTERS}]+")
# Under IGNORECASE, ``re`` treats I, i, İ and ı as one letter, but ``casefold`` keeps ı and
# İ apart; every other case class of Unicode casefolds to one string (a test checks every
# code point against ``re``'s own tables).
_DOTTED_I = str.maketrans({"İ": "i", "ı": "i"})
# The one case class that mixes a word character with a non-word one (ι, Ι, ι and the
# combining ypogegrammeni): a keyword with it can match across what ``\w+`` splits.
_IOTA = "ι"


class SecondaryRule(StrEnum):
    """How a card's secondary keywords join its primary ones (lorebooks' "selective" keys):
    it fires when a primary keyword appears and ANY / ALL / NONE of the secondary ones do.
    A card with no secondary keywords fires on a primary one alone, whatever its rule."""

    ANY = "any"
    ALL = "all"
    NONE = "none"


def spaceless(keyword: str) -> bool:
    """Whether ``keyword`` matches as a substring (it holds a letter of ``SPACELESS``)."""
    return SPACELESS.search(keyword) is not None


def _compile(word: str) -> re.Pattern[str]:
    phrase = r"\s+".join(re.escape(w) for w in word.split())
    if spaceless(word):
        return re.compile(phrase, re.IGNORECASE)
    return re.compile(r"(?<!\w)" + phrase + r"(?!\w)", re.IGNORECASE)


_pattern = lru_cache(maxsize=4096)(_compile)


def _found(word: str, pattern: re.Pattern[str], text: str, folded: str) -> bool:
    # A plain substring test first: most keywords are absent, and the regex is the slow part.
    if len(word.split()) == 1 and word.casefold() not in folded:
        return False
    return pattern.search(text) is not None


def keyword_in(keyword: str, text: str, folded: str | None = None) -> bool:
    """Whether ``keyword`` appears in ``text``, ignoring case: as a substring for a keyword
    of a spaceless script, else as a whole word or phrase. ``folded``: ``text.casefold()``,
    when the caller checks many keywords against it."""
    word = keyword.strip()
    if not word:
        return False
    return _found(word, _pattern(word), text, folded or text.casefold())


def fold(text: str) -> str:
    """``text`` folded so that two words ``re`` matches ignoring case fold alike."""
    return text.translate(_DOTTED_I).casefold()


def _gram(word: str) -> str:
    """What a spaceless keyword is indexed by: its first two spaceless letters side by side
    (a substring of the text wherever the keyword is), else its first spaceless letter."""
    runs = _SPACELESS_RUN.findall(word)
    return str(next((run[:2] for run in runs if len(run) > 1), runs[0][:1]))


def _grams(text: str) -> set[str]:
    """Every spaceless letter of ``text``, and every pair of them side by side."""
    out: set[str] = set()
    for run in _SPACELESS_RUN.findall(text):
        out.update(run)
        out.update(run[i : i + 2] for i in range(len(run) - 1))
    return out


class CardKeys(NamedTuple):
    """One card's keys, as a matcher is built from them: each list a tuple, or the JSON
    list a row stores (parsed only when the matcher is built)."""

    id: int
    keywords: tuple[str, ...] | str
    secondary: tuple[str, ...] | str = ()
    rule: str = SecondaryRule.ANY


@dataclass(frozen=True)
class Hit:
    card: int  # the card's position in the set
    keyword: str  # the primary keyword that fired it
    where: Where
    secondary: tuple[str, ...]  # the secondary keywords that appear, in the card's order


def _keys(value: tuple[str, ...] | str) -> tuple[str, ...]:
    return tuple(json.loads(value)) if isinstance(value, str) else value


class CardMatcher:
    """The keywords, primary and secondary, of a card set, indexed by one word each.

    A keyword made of words can only appear where its longest word is a whole word of
    the text (its words are bounded by the keyword's own edges, spaces or punctuation),
    so it is indexed by that word, folded; a text's words, folded, name the only
    keywords worth checking, and ``keyword_in``'s test decides. A spaceless keyword is
    indexed by ``_gram`` instead, looked up by the text's ``_grams``. Keywords without a
    word character, or with the iota class, are checked on every text. A keyword is
    named by one number, ``card * stride + position`` (a card's primary keywords first,
    then its secondary ones), to keep a large set small in memory.
    """

    def __init__(self, given: Sequence[CardKeys | tuple[int, tuple[str, ...]]]) -> None:
        # (card id, keywords) pairs: a card set without secondary keywords
        cards = [card if isinstance(card, CardKeys) else CardKeys(*card) for card in given]
        self.card_ids = [card.id for card in cards]
        primaries = [_keys(card.keywords) for card in cards]
        self._primary = [len(keys) for keys in primaries]
        self._cards = [p + _keys(c.secondary) for p, c in zip(primaries, cards, strict=True)]
        self._rules = [SecondaryRule(card.rule) for card in cards]
        self._stride = max(map(len, self._cards), default=0) + 1
        self._index: dict[str, list[int]] = {}
        self._spaceless: dict[str, list[int]] = {}
        self._always: list[int] = []
        self._patterns: dict[str, re.Pattern[str]] = {}
        buckets: dict[str, list[int] | None] = {}  # each distinct keyword: where it is kept
        for card, keywords in enumerate(self._cards):
            for position, keyword in enumerate(keywords):
                word = keyword.strip()
                if word not in buckets:
                    buckets[word] = self._bucket(word)
                bucket = buckets[word]
                if bucket is not None:  # None: an empty keyword fires on nothing
                    bucket.append(card * self._stride + position)

    def _bucket(self, word: str) -> list[int] | None:
        if not word:
            return None
        if spaceless(word):
            return self._spaceless.setdefault(_gram(word), [])
        atoms = WORD.findall(word)
        if not atoms or _IOTA in fold(word):
            return self._always
        return self._index.setdefault(max(map(fold, atoms), key=len), [])

    def _options(self, text: str) -> dict[int, list[int]]:
        """Per card, the positions of its keywords that could appear in ``text``, in order."""
        codes = [c for w in {fold(w) for w in WORD.findall(text)} for c in self._index.get(w, ())]
        if self._spaceless:
            codes += [c for g in _grams(text) for c in self._spaceless.get(g, ())]
        options: dict[int, list[int]] = {}
        for code in (*codes, *self._always):
            card, position = divmod(code, self._stride)
            options.setdefault(card, []).append(position)
        for positions in options.values():
            positions.sort()
        return options

    def _compiled(self, word: str) -> re.Pattern[str]:
        pattern = self._patterns.get(word)
        if pattern is None:
            pattern = self._patterns[word] = _compile(word)
        return pattern

    def fire(self, recent_story: str, player_input: str) -> list[Hit]:
        """Every card that fires, in card order: its first primary keyword in the input,
        else its first in the recent story, and the secondary keywords that appear."""
        places: tuple[tuple[Where, str], ...] = (("input", player_input), ("story", recent_story))
        scans = [_Scan(where, text, text.casefold(), self._options(text)) for where, text in places]
        fired: dict[int, tuple[int, Where]] = {}
        for scan in scans:
            for card, positions in scan.options.items():
                if card in fired:
                    continue
                # A card costs one check per keyword up to the first that appears.
                for position in positions:
                    if position >= self._primary[card]:
                        break
                    if scan.has(self._cards[card][position], self._compiled):
                        fired[card] = (position, scan.where)
                        break
        hits: list[Hit] = []
        for card in sorted(fired):
            position, where = fired[card]
            secondary = self._secondary(card, scans)
            if secondary is not None:
                hits.append(Hit(card, self._cards[card][position], where, secondary))
        return hits

    def _secondary(self, card: int, scans: list[_Scan]) -> tuple[str, ...] | None:
        """The card's secondary keywords that appear, or None when its rule is not met."""
        keys = self._cards[card]
        start = self._primary[card]
        if start == len(keys):
            return ()
        held = tuple(
            keys[position]
            for position in range(start, len(keys))
            if any(
                position in scan.options.get(card, ()) and scan.has(keys[position], self._compiled)
                for scan in scans
            )
        )
        rule = self._rules[card]
        if rule is SecondaryRule.ALL:
            met = len(held) == len(keys) - start
        elif rule is SecondaryRule.NONE:
            met = not held
        else:
            met = bool(held)
        return held if met else None


@dataclass
class _Scan:
    """One text of a turn, with what was already found in it."""

    where: Where
    text: str
    folded: str
    options: dict[int, list[int]]
    seen: dict[str, bool] = field(default_factory=dict)

    def has(self, keyword: str, compiled: Callable[[str], re.Pattern[str]]) -> bool:
        word = keyword.strip()
        found = self.seen.get(word)
        if found is None:
            found = self.seen[word] = _found(word, compiled(word), self.text, self.folded)
        return found


@lru_cache(maxsize=MATCHERS_KEPT)
def matcher_for(cards: tuple[CardKeys, ...]) -> CardMatcher:
    """The matcher of a card set, given as its cards' keys in card order."""
    return CardMatcher(cards)
