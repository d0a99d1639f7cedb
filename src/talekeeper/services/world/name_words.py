"""The words of names, read in code (docs/world.md, "The lore clerk"): which words are never
a name, which open sentences without being one, what a script's speaker line names, and
each text's sentences and keys, kept for the texts read again.

Invariants: every function here is a pure function of its text; what is kept
(``SENTENCE_CACHE`` texts for each) is bounded, whatever the story's length.
"""

from __future__ import annotations

import re
from functools import lru_cache

from talekeeper.services.memory.evidence import sentences
from talekeeper.services.world.names import ARTICLES, TITLES, key_of

_ANY_WORD = re.compile(r"[^\W\d_][\w'’]*")
_SPEAKER_LINE = re.compile(r"[ \t]*([^\W\d_][\w'’.]*(?:[ \t]+[\w'’.]+){0,3}):[ \t]*")
# A contraction's ending: "I'll" and "They'd" are pronouns, no names.
_CONTRACTED = re.compile(r"['’](?:ll|ld|d|m|ve|re|s)$")
_POSSESSIVE = re.compile(r"['’]s$")  # "Darcy's" is Darcy
# Words a full stop may follow inside a name: titles, and "St." of a saint's place.
ABBREVIATED = TITLES | {"st", "mt", "ft"}
CONNECTORS = frozenset({"of", "de", "van", "von", "la", "le", "du", "del", "da"})
NOT_NAMES = frozenset(
    {
        *ARTICLES, "i", "you", "he", "she", "it", "we", "they", "me", "him", "her", "us",
        "them", "my", "your", "his", "its", "our", "their", "mine", "yours", "this", "that",
        "these", "those", "yes", "no", "oh", "ah", "well", "sir", "madam", "ma'am", "lord",
        "lady", "god", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday",
        "sunday", "january", "february", "march", "april", "may", "june", "july", "august",
        "september", "october", "november", "december", "chapter", "act", "scene", "enter",
        "exit", "exeunt", "christmas", "easter", "st", "mt", "ft", "what", "who", "where",
        "when", "why", "how", "there", "here", "then", "now", "if", "but", "and", "or", "so",
        "not", "all", "one", "o", "tis", "twas", "twere", "twill", "twould", "heaven",
        "heavens", "hell",
    }
)  # fmt: skip


# Words that open sentences without being names (beside ``NOT_NAMES``): a story may use one
# capitalised and never in lower case, and must still not make it a name.
OPENERS = frozenset(
    {
        "after", "again", "above", "across", "along", "also", "although", "another", "any",
        "around", "at", "before", "behind", "below", "beside", "besides", "beyond", "both",
        "by", "did", "do", "does", "down", "during", "each", "even", "every", "everyone",
        "everything", "few", "for", "from", "had", "has", "have", "however", "in", "inside",
        "instead", "is", "later", "let", "many", "maybe", "meanwhile", "more", "most", "much",
        "near", "never", "next", "nobody", "none", "nothing", "of", "on", "once", "only",
        "other", "outside", "over", "perhaps", "please", "since", "some", "someone",
        "something", "somewhere", "soon", "still", "such", "thank", "thanks", "the", "though",
        "through", "to", "today", "tomorrow", "tonight", "under", "until", "up", "upon",
        "was", "were", "while", "with", "within", "without", "yesterday", "yet", "word",
        "news", "rumour", "rumor", "everybody", "somebody", "anybody", "because", "lest",
        "unless", "whether", "whilst", "till", "ere", "whereas",
    }
)  # fmt: skip
# Headings a narrator puts on a line of their own before a list or a block ("Inventory:",
# "Status:"): a line that is one of them and a colon is no speaker.
HEADINGS = frozenset(
    {
        "inventory", "status", "stats", "location", "locations", "note", "notes", "summary",
        "options", "choices", "objective", "objectives", "quest", "quests", "health", "time",
        "date", "warning", "hint", "hints", "result", "results", "items", "equipment", "goal",
        "goals", "mood", "setting", "characters", "party", "skills", "abilities", "map",
        "exits", "actions", "ooc", "narrator", "story", "memory", "memories", "world",
    }
)  # fmt: skip
# Sentences whose reading is kept (``split``, ``_read``): a long story's worth (a 10,000-action
# story has about 50,000), some tens of megabytes at most.
SENTENCE_CACHE = 50_000


@lru_cache(maxsize=SENTENCE_CACHE)
def split(text: str) -> tuple[str, ...]:
    """``text``'s sentences (``evidence.sentences``), kept for the texts read again: the
    clerk reads the whole path after every turn, and all but the newest action are the
    same texts as the turn before."""
    return tuple(sentences(text))


@lru_cache(maxsize=SENTENCE_CACHE)
def key_kept(text: str) -> str:
    """``names.key_of(text)``, kept for the texts read again (as ``split``)."""
    return key_of(text)


@lru_cache(maxsize=SENTENCE_CACHE)
def capitals_key(text: str) -> str:
    """``text``'s key with each word written in lower case (a connector aside) standing
    apart as "0": a capitalised name's key is in it only where the text capitalises it
    ("Rivers" said, not "the rivers")."""
    return key_of(_ANY_WORD.sub(_held_apart, text))


def _held_apart(match: re.Match[str]) -> str:
    word = match.group(0)
    return "0" if word[0].islower() and word not in CONNECTORS else word


def without_possessive(name: str) -> str:
    """``name`` without a possessive's "'s" ("Darcy's" is Darcy)."""
    return _POSSESSIVE.sub("", name)


def bare(word: str) -> str:
    """A word as the census counts it: folded, a possessive's "'s" aside."""
    return _POSSESSIVE.sub("", word).casefold()


def no_name(word: str) -> bool:
    """Whether a word is never a name on its own (``NOT_NAMES``), a contraction's ending
    aside ("I'll", "They'd")."""
    return _CONTRACTED.sub("", bare(word)) in NOT_NAMES


def speaker_of(line: str) -> str:
    """The speaker a line names when it is only a name and a colon ("PETRUCHIO:", "First
    Citizen:"): one to four words, each capitalised (a connector aside), the first no
    pronoun or the like, and no heading a narrator prints ("Inventory:", ``HEADINGS``);
    else "". A name in capitals is told with capitals only at the start of each word."""
    match = _SPEAKER_LINE.fullmatch(line)
    if match is None:
        return ""
    words = match.group(1).split()
    if not all(w[0].isupper() or w.casefold() in CONNECTORS for w in words):
        return ""
    if no_name(words[0]) or (len(words) == 1 and words[0].casefold() in HEADINGS):
        return ""
    name = " ".join(words)
    return name.title() if name.isupper() else name
