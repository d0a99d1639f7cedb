"""The named things of a story, found in code (docs/world.md, "The lore clerk").

A **name** is a run of capitalised words ("Mara", "Old Maren", "Mr. Darcy", "Duke of
Orsino"), read sentence by sentence. Invariants:

- A word opening a sentence, a quotation or a line (verse capitalises each) is
  capitalised by grammar or layout, not by being a name: it counts when the story also
  writes it capitalised inside a sentence more often than in lower case, or when it
  opens several sentences, going straight on to a word at least once ("Nay," never
  does), is never written otherwise and is no common opener (``Census.a_name``):
  "Suddenly" or "Yes" never become names, "Mara" opening every sentence she is in still
  is. A line going on with a sentence the line before left open is no opening the census
  counts: verse's capitals say nothing either way.
- Pronouns, articles, days, months, words of address and old contractions (``NOT_NAMES``)
  are never a name on their own, nor the first or last word of one ("Lest I" is no
  name); a title ("Mr.", "Captain") joins the name after it and is no name alone.
- Two runs are one entity when their keys are equal (``names.key_of``: case, Unicode
  form, a leading article or title aside) or when one is a single word that is the first
  or last word of exactly one longer name ("Elizabeth" and "Elizabeth Bennet"); the
  entity's name is its most frequent longest form, its keys all its forms. A family told
  in the plural ("the Collinses", "the Miss Bennets") is the entity of its singular when
  the story has one ("Collins", "Bennet").
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

from talekeeper.services.world.name_words import (
    ABBREVIATED,
    CONNECTORS,
    NOT_NAMES,
    OPENERS,
    SENTENCE_CACHE,
    bare,
    no_name,
    speaker_of,
    split,
    without_possessive,
)
from talekeeper.services.world.names import ARTICLES, TITLES, key_of

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
# What may stand between two words of one name: a space, not a line's end (verse capitalises
# each line: "Richard" ending one and "Gloucester" opening the next are two names); after a
# title, its full stop.
_GAP = re.compile(r"[^\S\n]+")
_TITLE_GAP = re.compile(r"\.?[^\S\n]+")
_OPENERS = "\"'“‘(["
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
    plural: set[str] = field(default_factory=set)  # keys of its forms in the plural


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
    going_on: tuple[str, ...]  # the opening words a word follows straight on ("Mara nods")
    lower: tuple[str, ...]
    runs: tuple[_Run, ...]
    first: int  # 1 when ``opening[0]`` is the sentence's first word
    first_goes_on: int  # 1 when ``going_on[0]`` is (it goes straight on to a word)


@lru_cache(maxsize=SENTENCE_CACHE)
def _read(sentence: str) -> _Read:
    words = list(_WORD.finditer(sentence))
    speaker = bool(speaker_of(sentence))  # a script's "PETRUCHIO:" line names someone
    inside: list[str] = []
    opening: list[str] = []
    going_on: list[str] = []
    lower: list[str] = []
    first = first_goes_on = 0
    for i, match in enumerate(words):
        word = match.group(0)
        if word[0].islower():
            lower.append(bare(word))
        elif speaker or (i > 0 and not _opens(sentence, match.start())):
            inside.append(bare(word))
        else:
            opening.append(bare(word))
            goes = _goes_on(sentence, words, i)
            if goes:
                going_on.append(bare(word))
            if i == 0:
                first, first_goes_on = 1, int(goes)
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
                not speaker and (run[0] == 0 or _opens(sentence, words[run[0]].start())),
            )
        )
        i = run[-1] + 1
    return _Read(
        tuple(inside),
        tuple(opening),
        tuple(going_on),
        tuple(lower),
        tuple(runs),
        first,
        first_goes_on,
    )


class Census:
    """How the story writes each word: capitalised inside a sentence, at an opening, or in
    lower case."""

    def __init__(self, texts: Iterable[str]) -> None:
        self.inside: Counter[str] = Counter()
        self.opening: Counter[str] = Counter()
        self.going_on: Counter[str] = Counter()
        self.lower: Counter[str] = Counter()
        for text in texts:
            ended = True
            for sentence in split(text):
                read = _read(sentence)
                self.inside.update(read.inside)
                self.lower.update(read.lower)
                # A line that goes on with a sentence the line before left open (verse)
                # opens with a capital of layout: no sign of a name either way.
                skip, skip_on = (0, 0) if ended else (read.first, read.first_goes_on)
                self.opening.update(read.opening[skip:])
                self.going_on.update(read.going_on[skip_on:])
                ended = _ends(sentence)

    def a_name(self, word: str) -> bool:
        """Whether a capitalised word at an opening is a name: the story writes it
        capitalised inside sentences more often than in lower case; or, never inside and
        never in lower case, it opens ``OPENINGS_FOR_A_NAME`` sentences, going straight on
        to the next word at least once ("Mara nods", where "Nay," and "Lo," never do), and
        is no word that commonly opens one (``OPENERS``, an adverb in -ly, a participle in
        -ing)."""
        folded = bare(word)
        if self.inside[folded]:
            return self.lower[folded] < self.inside[folded]
        return (
            not self.lower[folded]
            and self.opening[folded] >= OPENINGS_FOR_A_NAME
            and self.going_on[folded] > 0
            and folded not in OPENERS
            and not folded.endswith(("ly", "ing"))
        )


def _goes_on(sentence: str, words: list[re.Match[str]], i: int) -> bool:
    """Whether word ``i`` goes straight on to the next word ("Mara nods", not "Nay,")."""
    if i + 1 >= len(words):
        return False
    return _GAP.fullmatch(sentence[words[i].end() : words[i + 1].start()]) is not None


def _opens(sentence: str, at: int) -> bool:
    """Whether the word at ``at`` opens a quotation or a line, or follows a colon or dash.
    Only the white space before it is read: the work is the gap's, not the sentence's."""
    start = at
    while start > 0 and sentence[start - 1].isspace():
        start -= 1
    return start == 0 or sentence[start - 1] in _OPENERS + ":;—–-" or "\n" in sentence[start:at]


def _ends(sentence: str) -> bool:
    """Whether a sentence (or a speaker's line) is ended: its last mark, closing quotes and
    brackets aside, is a full stop, "!", "?", "…" or a colon."""
    return sentence.rstrip().rstrip("\"'”’)]").endswith((".", "!", "?", "…", ":"))


def mentions(texts: Sequence[str], census: Census) -> list[Mention]:
    out: list[Mention] = []
    for index, text in enumerate(texts):
        for sentence in split(text):
            for run in _read(sentence).runs:
                kept = _trim(run.words, census, run.opening)
                if kept:
                    start, end = run.spans[kept[0]][0], run.spans[kept[-1]][1]
                    form = without_possessive(sentence[start:end])
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
        folded = bare(words[kept[0]])
        if folded in ABBREVIATED and len(kept) > 1:
            break
        at_opening = opening and kept[0] == 0
        if (
            folded in CONNECTORS
            or no_name(folded)
            or (at_opening and not census.a_name(words[kept[0]]))
        ):
            kept.pop(0)
            continue
        break
    while kept and (bare(words[kept[-1]]) in CONNECTORS or no_name(words[kept[-1]])):
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
    merged = [e for e in _merge(_plurals(by_key)) if e.forms]
    for entity in merged:
        entity.actions = sorted(set(entity.actions))
        entity.name = _display(entity.forms, entity.plural)
        entity.keys = _keys(entity.forms)
    return sorted(merged, key=lambda e: (e.actions[0] if e.actions else 0, e.name))


def _display(forms: Counter[str], plural: set[str]) -> str:
    """The entity's name: its longest form (by key), with its title when it has one ("Mr.
    Darcy"), the most used of those; a form in capitals (a letter's signature, a play's
    speaker) only when it has no other, and then with capitals only at the start of each
    word; a form in the plural ("Miss Bennets") only when it has no other."""
    singular = [f for f in forms if key_of(f) not in plural] or list(forms)
    plain = [f for f in singular if not f.isupper()] or singular
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


def _plurals(by_key: dict[str, Entity]) -> dict[str, Entity]:
    """A family in the plural ("collinses", "bennets") folded into its singular's entity."""
    out = dict(by_key)
    for key, entity in by_key.items():
        if " " in key or not key.endswith("s"):
            continue
        tries = (key[:-2] if key.endswith("es") else "", key[:-1])
        singular = next((k for k in tries if k and k in out), None)
        if singular is not None:
            out[singular].plural.add(key)
            _fold(out[singular], entity)
            del out[key]
    return out


def _fold(into: Entity, entity: Entity) -> None:
    into.forms.update(entity.forms)
    into.before.update(entity.before)
    into.actions += entity.actions
    into.kind = into.kind or entity.kind
    into.plural |= entity.plural


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
        _fold(out[holders[key][0]], entity)
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
