"""The named things of a story, found in code (docs/world.md, "The lore clerk").

A **name** is a run of capitalised words ("Mara", "Old Maren", "Mr. Darcy", "Duke of
Orsino"), read sentence by sentence. Invariants:

- A word opening a sentence or a quotation is capitalised by grammar, not by being a
  name: it counts when the story also writes it capitalised inside a sentence more often
  than in lower case, or when it opens several sentences, is never written otherwise and
  is no common opener (``Census.a_name``): "Suddenly" or "Yes" never become names, "Mara"
  opening every sentence she is in still is.
- Pronouns, articles, days, months and words of address (``NOT_NAMES``) are never a name
  on their own; a title ("Mr.", "Captain") joins the name after it and is no name alone.
- Two runs are one entity when their keys are equal (``names.key_of``: case, Unicode
  form, a leading article or title aside) or when one is a single word that is the first
  or last word of exactly one longer name ("Elizabeth" and "Elizabeth Bennet"); the
  entity's name is its most frequent longest form, its keys all its forms.
- An entity's **actions** are those of the path that name it in any form (whole words).
  Scripts without case (Chinese, Japanese, Arabic…) have no capitals to find: their names
  come only from the world's entities (``services.world``), given in ``known``.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from talekeeper.services.memory.evidence import sentences
from talekeeper.services.world.names import ARTICLES, TITLES, key_of

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
# What may stand between two words of one name: a space; after a title, its full stop.
_GAP = re.compile(r"\s+")
_TITLE_GAP = re.compile(r"\.?\s+")
_POSSESSIVE = re.compile(r"['’]s$")  # "Darcy's" is Darcy
# Words a full stop may follow inside a name: titles, and "St." of a saint's place.
ABBREVIATED = TITLES | {"st", "mt", "ft"}
_OPENERS = "\"'“‘(["
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
        "not", "all", "one",
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
        "news", "rumour", "rumor", "everybody", "somebody", "anybody",
    }
)  # fmt: skip
# Sentences whose reading is kept (``split``, ``_read``): a long story's worth (a 10,000-action
# story has about 50,000), some tens of megabytes at most.
SENTENCE_CACHE = 50_000
OPENINGS_FOR_A_NAME = 2  # sentences a word never written otherwise must open to be a name


@dataclass(frozen=True)
class Mention:
    action: int  # the index of the action in the texts given
    form: str  # the name as written, titles kept ("Mr. Darcy")
    before: str  # the word before it, lower case ("" at a sentence's start)


@dataclass
class Entity:
    name: str
    keys: list[str]  # its forms without a leading article or title, most frequent first
    actions: list[int]  # indexes of the actions that name it, ascending
    kind: str = ""  # an ``EntityKind`` value when the world knows it; else guessed
    forms: Counter[str] = field(default_factory=Counter)
    before: Counter[str] = field(default_factory=Counter)


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


@dataclass(frozen=True)
class _Run:
    """A run of capitalised words (connectors inside) as a sentence has it."""

    words: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]  # each word's place in the sentence
    before: tuple[str, ...]  # the word before each one, folded ("" at the start)
    opening: bool  # it opens the sentence or a quotation


@dataclass(frozen=True)
class _Read:
    """What a sentence says for the census and the names, read once (``_read``)."""

    inside: tuple[str, ...]
    opening: tuple[str, ...]
    lower: tuple[str, ...]
    runs: tuple[_Run, ...]


@lru_cache(maxsize=SENTENCE_CACHE)
def _read(sentence: str) -> _Read:
    words = list(_WORD.finditer(sentence))
    inside: list[str] = []
    opening: list[str] = []
    lower: list[str] = []
    for i, match in enumerate(words):
        word = match.group(0)
        if word[0].islower():
            lower.append(_bare(word))
        elif i > 0 and not _opens(sentence, match.start()):
            inside.append(_bare(word))
        else:
            opening.append(_bare(word))
    runs: list[_Run] = []
    i = 0
    while i < len(words):
        run = _run_at(sentence, words, i)
        if not run:
            i += 1
            continue
        runs.append(
            _Run(
                tuple(words[k].group(0) for k in run),
                tuple(words[k].span() for k in run),
                tuple(words[k - 1].group(0).casefold() if k > 0 else "" for k in run),
                run[0] == 0 or _opens(sentence, words[run[0]].start()),
            )
        )
        i = run[-1] + 1
    return _Read(tuple(inside), tuple(opening), tuple(lower), tuple(runs))


class Census:
    """How the story writes each word: capitalised inside a sentence, at an opening, or in
    lower case."""

    def __init__(self, texts: Iterable[str]) -> None:
        self.inside: Counter[str] = Counter()
        self.opening: Counter[str] = Counter()
        self.lower: Counter[str] = Counter()
        for text in texts:
            for sentence in split(text):
                read = _read(sentence)
                self.inside.update(read.inside)
                self.opening.update(read.opening)
                self.lower.update(read.lower)

    def a_name(self, word: str) -> bool:
        """Whether a capitalised word at an opening is a name: the story writes it
        capitalised inside sentences more often than in lower case; or, never inside and
        never in lower case, it opens ``OPENINGS_FOR_A_NAME`` sentences and is no word
        that commonly opens one (``OPENERS``, an adverb in -ly, a participle in -ing)."""
        folded = _bare(word)
        if self.inside[folded]:
            return self.lower[folded] < self.inside[folded]
        return (
            not self.lower[folded]
            and self.opening[folded] >= OPENINGS_FOR_A_NAME
            and folded not in OPENERS
            and not folded.endswith(("ly", "ing"))
        )


def _bare(word: str) -> str:
    """A word as the census counts it: folded, a possessive's "'s" aside."""
    return _POSSESSIVE.sub("", word).casefold()


def _opens(sentence: str, at: int) -> bool:
    """Whether the word at ``at`` opens a quotation or follows a colon or dash."""
    before = sentence[:at].rstrip()
    return not before or before[-1] in _OPENERS + ":;—–-"


def mentions(texts: Sequence[str], census: Census) -> list[Mention]:
    out: list[Mention] = []
    for index, text in enumerate(texts):
        for sentence in split(text):
            for run in _read(sentence).runs:
                kept = _trim(run.words, census, run.opening)
                if kept:
                    start, end = run.spans[kept[0]][0], run.spans[kept[-1]][1]
                    form = _POSSESSIVE.sub("", sentence[start:end])
                    out.append(Mention(index, form, run.before[kept[0]]))
    return out


def _run_at(sentence: str, words: list[re.Match[str]], i: int) -> list[int]:
    """The word indexes of the capitalised run starting at word ``i`` (connectors inside)."""
    if not words[i].group(0)[0].isupper():
        return []
    run = [i]
    j = i + 1
    while j < len(words):
        gap = sentence[words[j - 1].end() : words[j].start()]
        fits = _TITLE_GAP if words[j - 1].group(0).casefold() in ABBREVIATED else _GAP
        if not fits.fullmatch(gap):
            break
        word = words[j].group(0)
        if word[0].isupper():
            run.append(j)
        elif word in CONNECTORS and j + 1 < len(words) and words[j + 1].group(0)[0].isupper():
            gap2 = sentence[words[j].end() : words[j + 1].start()]
            if not _GAP.fullmatch(gap2):
                break
            run += [j, j + 1]
            j += 1
        else:
            break
        j += 1
    return run


def _trim(words: tuple[str, ...], census: Census, opening: bool) -> list[int]:
    """The positions of the run's words without its leading words that are not names
    (grammar's capitals at an opening, pronouns and the like) nor a trailing connector; a
    title before a name stays. Empty when no name is left."""
    kept = list(range(len(words)))
    while kept:
        folded = words[kept[0]].casefold()
        if folded in ABBREVIATED and len(kept) > 1:
            break
        at_opening = opening and kept[0] == 0
        if (
            folded in CONNECTORS
            or folded in NOT_NAMES
            or (at_opening and not census.a_name(words[kept[0]]))
        ):
            kept.pop(0)
            continue
        break
    while kept and words[kept[-1]].casefold() in CONNECTORS:
        kept.pop()
    names = [words[k].casefold() for k in kept]
    if all(n in TITLES | CONNECTORS | NOT_NAMES for n in names):
        return []
    return kept


def entities(texts: Sequence[str], known: Mapping[str, str] | None = None) -> list[Entity]:
    """The story's entities (see the module docstring), in order of first mention;
    ``known``: names the world already holds, each with its kind."""
    census = Census(texts)
    found = mentions(texts, census)
    by_key: dict[str, Entity] = {}
    for m in found:
        key = key_of(m.form)
        if not key:
            continue
        entity = by_key.setdefault(key, Entity(name=m.form, keys=[], actions=[]))
        entity.forms[m.form] += 1
        entity.before[m.before] += 1
        if not entity.actions or entity.actions[-1] != m.action:
            entity.actions.append(m.action)
    said = [f" {_words_key(text)} " for text in texts] if known else []
    for name, kind in (known or {}).items():
        _add_known(by_key, said, name, kind)
    merged = [e for e in _merge(by_key) if e.forms]
    for entity in merged:
        entity.actions = sorted(set(entity.actions))
        entity.name = _display(entity.forms)
        entity.keys = _keys(entity.forms)
    return sorted(merged, key=lambda e: (e.actions[0] if e.actions else 0, e.name))


def _display(forms: Counter[str]) -> str:
    """The entity's name: its longest form (by key), with its title when it has one ("Mr.
    Darcy"), the most used of those; a form in capitals (a letter's signature, a play's
    speaker) only when it has no other, and then with capitals only at the start of each
    word."""
    plain = [f for f in forms if not f.isupper()] or list(forms)
    longest = max(len(key_of(f)) for f in plain)
    best = max((f for f in plain if len(key_of(f)) == longest), key=lambda f: (len(f), forms[f]))
    return best.title() if best.isupper() else best


def _add_known(by_key: dict[str, Entity], said: Sequence[str], name: str, kind: str) -> None:
    """A world entity's mentions, found by its name in whole words (any script); ``said``:
    each text's words (``_words_key``), read once for every entity."""
    key = key_of(name)
    if not key:
        return
    entity = by_key.setdefault(key, Entity(name=name, keys=[], actions=[]))
    entity.kind = kind
    if entity.forms:
        return
    folded = f" {key} "
    for index, words in enumerate(said):
        if folded in words:
            entity.actions.append(index)
            entity.forms[name] += 1


def _words_key(text: str) -> str:
    return " ".join(re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold()))


def _merge(by_key: dict[str, Entity]) -> list[Entity]:
    """A one-word entity folded into the one longer entity it opens or ends."""
    holders: dict[str, list[str]] = defaultdict(list)
    for key in by_key:
        words = key.split(" ")
        if len(words) > 1:
            for word in {words[0], words[-1]}:
                holders[word].append(key)
    out = dict(by_key)
    for key, entity in by_key.items():
        if " " in key or len(holders.get(key, [])) != 1:
            continue
        into = out[holders[key][0]]
        into.forms.update(entity.forms)
        into.before.update(entity.before)
        into.actions += entity.actions
        into.kind = into.kind or entity.kind
        del out[key]
    return list(out.values())


def _keys(forms: Counter[str]) -> list[str]:
    """Each form once, without a leading article or title, most frequent first; a form in
    capitals with capitals only at the start of each word, and only when no other form
    has its key (the keywords a card fires on: "Menenius" from a speaker's "MENENIUS")."""
    seen: dict[str, str] = {}
    ordered = sorted(forms.items(), key=lambda kv: (kv[0].isupper(), -kv[1], kv[0]))
    for form, _ in ordered:
        words = (form.title() if form.isupper() else form).split()
        while len(words) > 1 and words[0].rstrip(".").casefold() in ARTICLES | TITLES:
            words.pop(0)
        bare = " ".join(words)
        seen.setdefault(key_of(bare), bare)
    return list(seen.values())
