"""The lore clerk's rules (docs/world.md, "The lore clerk"): which entities of a path get a
card proposal, whether a name is one the adventure already has, and the draft card made
from the story's own sentences.

Invariants:

- A **candidate** is an entity (``entities``) named in at least ``LEAST_ACTIONS`` actions
  of the path that is not the same entity as any card (its name or a keyword) nor any
  proposal already made (``same_entity``), and that the story describes at least once in
  a sentence the draft can use.
- ``same_entity``: two sets of names are one entity when a key is shared (``key_of``:
  Unicode form, case, a leading article or title aside), when one is the other told
  shorter (its last words, unless the words before them are a name of the other's on
  their own: "Bennet" and "Elizabeth Bennet" who is also "Elizabeth" may be two people;
  or its leading words: a first name, "Caius Marcius" of "Caius Marcius Coriolanus"),
  or, for keys of at least ``FUZZY_FROM`` letters, when they differ by one edit (two
  from ``FUZZY_TWO_FROM``).
  A name in a script without case compares by its letters: "明" and "暗" stay two.
- **The draft** says nothing the story does not: its entry is the story's sentences that
  name the entity, in story order, each whole, tidied (white space) and told in the third
  person (``third_person``), up to ``ENTRY_CHARS`` (those about it first: ``draft``); its
  evidence is those sentences, each with its action. Speech stays in its quotation marks,
  with who said it when the sentence says ('"Doraith lives in Hisao," Grigraen says.'): what
  a character says is told as said. A script's speech (``speech.blocks``) is told as its
  speaker's, in quotation marks after their name ('Petruchio: "Verona, for a while I take
  my leave."'), each sentence a line. Not used: a sentence in the first person, unless
  the "I" is inside quotation marks a name is said to speak (``speech.attributed``) or in
  a script's speech; a piece of one (it opens in lower case or ends in a colon); one of
  fewer than ``MIN_WORDS`` words (said, for speech: '"Go," cried Rhys.' says little); one
  whose "you" cannot be turned into the protagonist's name without changing its grammar,
  unless every "you" is in speech as above, where it stays as said.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from talekeeper.services.world.entity_names import Entity, entities
from talekeeper.services.world.name_words import SENTENCE_CACHE, capitals_key, key_kept, split
from talekeeper.services.world.names import TITLES, key_of, told_shorter
from talekeeper.services.world.speech import attributed, blocks, outside_quotes

LEAST_ACTIONS = 3  # a name in this many actions of the path is worth a card
ENTRY_CHARS = 600  # the draft's entry, whole sentences (about 130 tokens)
SENTENCE_CHARS = 320  # a longer sentence is not one line of a card
MIN_WORDS = 3  # shorter, a sentence says little about anyone ("Rhys nods.")
SUBJECT_WORDS = 4  # a sentence naming the entity this early is about it: such go in first
FUZZY_FROM = 7  # letters: shorter names differ by one letter and are other people ("Tom", "Tim")
FUZZY_TWO_FROM = 12

_PLACE_BEFORE = frozenset(
    {
        "in", "into", "at", "to", "from", "toward", "towards", "through", "near", "reach",
        "reached", "reaches", "enter", "entered", "enters", "leave", "leaves", "across",
        "past", "inside", "outside", "beyond", "within", "around",
    }
)  # fmt: skip
_PLACE_WORDS = frozenset(
    {
        "gate", "street", "inn", "tower", "castle", "river", "forest", "wood", "woods", "hall",
        "park", "bridge", "road", "lane", "square", "tavern", "keep", "mountain", "mountains",
        "hill", "hills", "lake", "sea", "isle", "island", "bay", "harbour", "harbor",
        "market", "temple", "abbey", "manor", "city", "town", "village", "valley", "court",
        "house", "lodge", "parsonage", "cottage", "farm", "church", "chapel", "palace",
    }
)  # fmt: skip
_FACTION_WORDS = frozenset(
    {"guild", "order", "company", "clan", "brotherhood", "council", "army", "legion",
     "league", "circle", "society", "crew", "watch"}
)  # fmt: skip
_PLACE_ENDINGS = ("shire", "ford", "ton", "bury", "borough", "ham", "wick", "port")
_KIND_TYPES = {"person": "character", "place": "location", "item": "item", "faction": "faction"}
_SPOKEN = re.compile(r"[\"“]([^\"”]*)[\"”]")  # what is said in quotation marks
_FIRST_PERSON = re.compile(r"\b(?:I|me|my|mine|myself|we|us|our|ours|ourselves)\b")
_YOU = re.compile(r"\b(you|your|yours|yourself)\b", re.IGNORECASE)
_SUBJECT_BEFORE = frozenset(
    {"", "and", "or", "as", "when", "if", "that", "because", "while", "before", "after",
     "until", "than", "so", "but", "where", "once", "since", "though", "although", "then",
     "now", "unless", "whether"}
)  # fmt: skip
_SUBJECT_AFTER = frozenset(
    {"are", "were", "have", "had", "do", "did", "can", "could", "will", "would", "should",
     "must", "may", "might", "shall", "need", "feel", "see", "know", "think", "walk"}
)  # fmt: skip


@dataclass(frozen=True)
class Line:
    action_id: int
    text: str  # the sentence as the entry has it (tidied, third person)


@dataclass(frozen=True)
class Draft:
    key: str
    name: str
    type: str
    keys: tuple[str, ...]
    entry: str
    evidence: tuple[Line, ...]


@dataclass(frozen=True)
class PathText:
    action_id: int
    text: str  # as the player read it (``rendering.render``)
    narration: bool  # the narrator's or the player's own prose, not a do or say
    written: datetime | None = None  # when the action was written (None: not known)


def same_entity(a: Iterable[str], b: Iterable[str]) -> bool:
    """Whether two sets of names (a card's name and keywords, an entity's forms) name one
    entity (see the module docstring)."""
    keys_a = {k for k in (key_of(x) for x in a) if k}
    keys_b = {k for k in (key_of(x) for x in b) if k}
    if keys_a & keys_b:
        return True
    return any(
        _related(x, y, keys_a if len(x) > len(y) else keys_b) for x in keys_a for y in keys_b
    )


def _related(a: str, b: str, longer_keys: set[str]) -> bool:
    """Whether keys ``a`` and ``b`` name one entity; ``longer_keys``: every key of the side
    whose key is the longer of the two."""
    short, long = sorted((a, b), key=len)
    if told_shorter(a, b):
        # "Bennet" is "Elizabeth Bennet" told shorter unless "Elizabeth" is a name of hers
        # on its own: then "Bennet" is her family's name, and may be someone else's.
        return long[: -len(short) - 1] not in longer_keys
    if long.startswith(short + " "):  # a first name, or "Caius Marcius" of a longer name
        return True
    if len(short) >= FUZZY_FROM:
        return _within(a, b, 2 if len(short) >= FUZZY_TWO_FROM else 1)
    return False


def _within(a: str, b: str, most: int) -> bool:
    """Whether the edit distance between ``a`` and ``b`` is at most ``most``."""
    if abs(len(a) - len(b)) > most:
        return False
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
        if min(row) > most:
            return False
    return row[-1] <= most


def card_type(entity: Entity) -> str:
    """The card type an entity gets: the world's kind when it has one, else what its name
    and the words before it suggest (a place's "in", "at", "into"…), else a character."""
    if entity.kind in _KIND_TYPES:
        return _KIND_TYPES[entity.kind]
    words = {w for form in entity.forms for w in key_of(form).split(" ")}
    if any(form.split(" ", 1)[0].rstrip(".").casefold() in TITLES for form in entity.forms):
        return "character"  # "Mrs. Long", "Captain Carter"
    if words & _FACTION_WORDS:
        return "faction"
    if words & _PLACE_WORDS or any(w.endswith(_PLACE_ENDINGS) for w in words):
        return "location"
    told = sum(n for w, n in entity.before.items() if w)
    placed = sum(entity.before[w] for w in _PLACE_BEFORE)
    return "location" if told and placed * 2 > told else "character"


def third_person(sentence: str, protagonist: str) -> str | None:
    """``sentence`` with "you" told as ``protagonist``, or None where that would change
    its grammar (a "you" that is the subject) or there is no protagonist to name."""
    words = re.findall(r"[\w']+", sentence)
    out, at = [], 0
    for match in _YOU.finditer(sentence):
        word = match.group(1).casefold()
        if not protagonist:
            return None
        index = len(re.findall(r"[\w']+", sentence[: match.start()]))
        before = words[index - 1].casefold() if index else ""
        after = words[index + 1].casefold() if index + 1 < len(words) else ""
        if word == "you" and (before in _SUBJECT_BEFORE or after in _SUBJECT_AFTER):
            return None
        told = f"{protagonist}'s" if word in ("your", "yours") else protagonist
        out += [sentence[at : match.start()], told]
        at = match.end()
    out.append(sentence[at:])
    return "".join(out)


@lru_cache(maxsize=SENTENCE_CACHE)
def _usable(sentence: str, protagonist: str, speaker: str = "") -> str | None:
    return usable(sentence, protagonist, speaker)


def usable(sentence: str, protagonist: str, speaker: str = "") -> str | None:
    """The sentence as a card's line, or None (see the module docstring); ``speaker``: the
    script's speaker whose speech it is ("" for none)."""
    text = " ".join(sentence.split())
    if not text or len(text) > SENTENCE_CHARS or text.startswith(">") or text.endswith(":"):
        return None
    opening = text.lstrip("\"'“‘([")
    spoken = " ".join(_SPOKEN.findall(text))
    if not opening[:1].isupper() or len((spoken or text).split()) < MIN_WORDS:
        return None  # a piece of a sentence dialogue cut ("cried Elizabeth.")
    if speaker:
        said = text.strip('"“”')
        return f'{speaker}: "{said if said[-1] in ".!?…" else said + "."}"'
    outside = outside_quotes(text)
    told_as_said = bool(spoken) and attributed(outside)
    if _FIRST_PERSON.search(outside if told_as_said else text):
        return None
    told = third_person(text, protagonist)
    if told is None and told_as_said and not _YOU.search(outside):
        told = text  # every "you" is in what a named speaker says: told as said
    if told is None:
        return None
    return told if told[-1] in ".!?…" else told + "."


def sayings(
    keys: set[str],
    indexes: Sequence[int],
    path: Sequence[PathText],
    protagonist: str,
    cased: bool = False,
    own_speech: bool = True,
) -> list[tuple[bool, Line]]:
    """The usable sentences (``usable``) of the narration at ``indexes`` of the path that
    name one of ``keys`` (``key_of`` keys) or are a script's speech of a speaker one of
    them names, each once, in story order, each with whether it is about it: it names one
    in its first ``SUBJECT_WORDS`` words, or it is its own speech. ``cased``: the names are
    names only when capitalised ("Rivers" the man, not "the rivers"). ``own_speech``: a
    script's speech of a speaker one of them names is used (else only where it names one,
    as any other sentence)."""
    found: list[tuple[bool, Line]] = []
    seen: set[str] = set()
    for index in indexes:
        act = path[index]
        if not act.narration:
            continue
        for speaker, speech in blocks(act.text):
            said_by = key_kept(speaker) if speaker else ""
            theirs = (
                own_speech
                and bool(said_by)
                and any(k == said_by or told_shorter(k, said_by) for k in keys)
            )
            # A speech's lines are verse, not sentences: read its sentences across them.
            for sentence in split(" ".join(speech.split()) if speaker else speech):
                said = key_kept(sentence)
                named = capitals_key(sentence) if cased else said
                if not theirs and not any(f" {k} " in f" {named} " for k in keys):
                    continue
                text = _usable(sentence, protagonist, speaker)
                if text is None or text.casefold() in seen:
                    continue
                seen.add(text.casefold())
                opening = f" {' '.join(said.split(' ')[:SUBJECT_WORDS])} "
                about = theirs or any(f" {k} " in opening for k in keys)
                found.append((about, Line(act.action_id, text)))
    return found


def draft(entity: Entity, path: Sequence[PathText], protagonist: str) -> Draft | None:
    """The entity's draft card, or None when no sentence of the story can be its entry.
    Sentences about it (``sayings``) are chosen first, then the others, each in story
    order, while the entry has room; the entry keeps story order."""
    cased = not any(form[:1].islower() for form in entity.forms)
    found = sayings({key_of(k) for k in entity.keys}, entity.actions, path, protagonist, cased)
    chosen: list[tuple[int, Line]] = []
    size = 0
    ranked = sorted(enumerate(found), key=lambda f: (not f[1][0], f[0]))
    for order, (_, line) in ranked:
        if size + len(line.text) + 1 <= ENTRY_CHARS:
            chosen.append((order, line))
            size += len(line.text) + 1
    lines = [line for _, line in sorted(chosen, key=lambda c: c[0])]
    if not lines:
        return None
    return Draft(
        key=key_of(entity.name),
        name=entity.name,
        type=card_type(entity),
        keys=tuple(entity.keys),
        entry=" ".join(line.text for line in lines),
        evidence=tuple(lines),
    )


def candidates(
    path: Sequence[PathText],
    taken: Sequence[Sequence[str]],
    protagonist: str = "",
    known: Mapping[str, str] | None = None,
) -> list[tuple[Entity, Draft]]:
    """The path's entities that deserve a proposal (``LEAST_ACTIONS``), each with its
    draft, in order of first mention, leaving out any that is ``same_entity`` as a name set
    of ``taken`` (every card's name and keywords), the protagonist, or a candidate the story
    names more often."""
    found = [e for e in entities([p.text for p in path], known) if len(e.actions) >= LEAST_ACTIONS]
    kept: list[tuple[Entity, Draft]] = []
    taken = [list(names) for names in taken] + ([[protagonist]] if protagonist else [])
    # The most named first: of two names of one entity ("Sir William", "Sir William Lucas")
    # the one the story uses more is the one proposed.
    for entity in sorted(found, key=lambda e: (-len(e.actions), e.actions[0])):
        forms = [entity.name, *entity.keys]
        if any(same_entity(forms, names) for names in taken):
            continue
        made = draft(entity, path, protagonist)
        if made is not None:
            kept.append((entity, made))
            taken.append(forms)
    return sorted(kept, key=lambda pair: pair[0].actions[0])
