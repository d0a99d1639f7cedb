"""Who the player's input addresses or asks about this turn: one person, or nobody, found
by rules in code, never asked of a model (the engine labels or withholds the memories
that person did not witness).

Invariants:

- Pure: the same (action type, text, present, people) give the same answer. "story" and
  "continue" address nobody, so narration that addresses no one stays unchanged.
- One person or ``None``. When the rules find two or more people (a list such as "Mara
  and Tobin, listen", a name several people share, or one rule finding Mara and another
  Tobin), nobody is singled out and the answer is ``None``: the turn then goes on as it
  would without this module, which is the safe way to be wrong.
- Speaking to someone (``VOCATIVE``, ``SPOKEN_TO``) needs them present; asking what
  someone knows (``ABOUT_KNOWLEDGE``) may name anyone among ``people``.
- Naming is not addressing: a name mid-sentence ("I think Tobin took it.") finds nobody.
  Only a vocative (the name at the start of the input or of a quotation, after at most a
  few greeting words, then a comma, "!", "?", ":" or a dash; or, in a say, after the last
  comma at the end), a speaking verb before the name in a do ("ask Tobin", "whisper to
  Tobin"), or a question about knowledge ("what does Tobin know", "Tobin, do you know")
  counts.
- Names match as ``names`` keys them (NFKC, case-folded, ``\\w`` words, a title or
  article set aside): in whole words, so "Tobiness" never names Tobin; by the full name,
  the name told shorter (its last words, "Maren" for "Old Maren"), and the first word
  when only one candidate has it ("Tobin" for "Tobin Hale"). A candidate's full name
  outranks another's shorter one, and a longer match a shorter one. Scripts written
  without spaces match only where punctuation or spaces set the name apart.
- Linear in the text: it is read once into words (one ``\\w+`` pass, no pattern built
  from names), and each rule looks, at each word, at most ``_LIST_MAX`` names of a
  bounded number of words each through a trie. No regular expression can backtrack.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from talekeeper.services.world.names import ARTICLES, TITLES, key_of, trailing
from talekeeper.services.world.projection import Ref


class AddressKind(StrEnum):
    """How the input singled someone out."""

    VOCATIVE = "vocative"  # "Tobin, where is the key?" / "Where is the key, Tobin?"
    SPOKEN_TO = "spoken_to"  # "ask Tobin …", "tell Tobin …", "whisper to Tobin"
    ABOUT_KNOWLEDGE = "about_knowledge"  # "what does Tobin know …", "Tobin, do you know …"
    # Nobody addressed in a shared adventure several play: the character acting this turn,
    # whose knowledge is their own (docs/sharing.md). Never found in the input.
    ACTING = "acting"


@dataclass(frozen=True)
class Addressed:
    """The one person addressed, how, and the input's words that named them."""

    who: Ref
    how: AddressKind
    words: str  # as the input has them (NFKC, white space made one), for Insights


SILENT_ACTIONS = frozenset({"story", "continue"})  # narration: it addresses nobody
WORDS_MAX = 200  # the longest ``words`` kept: names fit NAME_MAX, the rest is a few words

_WORD = re.compile(r"\w+")
_SPACE = re.compile(r"\s+")
_LIST_MAX = 8  # names in one list ("Mara, Tobin and Kell") read before it counts as many
_GREETINGS_MAX = 4  # greeting words skipped before a vocative ("Good morning, Tobin,")
_VOCATIVE_MARKS = frozenset(",!?:;、-‐–—―")  # what may follow a vocative name
_LIST_MARKS = frozenset({",", "、", "&", "/"})
_OPEN_QUOTES = frozenset('"“„«「『')  # a quotation starts a new utterance
_END_MARKS = frozenset(".!?…\"'“”’»」』)")  # what may end a say after a name at its end
_SENTENCE_ENDS = frozenset(".!?…")
_NAME_INNER = frozenset("-‐'’")  # what may join the words of one name ("Tobin-Hale")
_APOSTROPHES = frozenset("'’")  # "doesn't" is read as "doesn", "t"
_SET_ASIDE = TITLES | ARTICLES  # a title the text adds: "Captain Tobin" for "Tobin"


def _set(words: str) -> frozenset[str]:
    """The words of ``words``, split at spaces (long word lists read better so)."""
    return frozenset(words.split())


_GREETINGS = _set(
    "hey hi hello oh o ah ahoy yo well listen look see please say now so okay ok sorry "
    "excuse me thanks thank you good morning afternoon evening day night dear greetings"
)
# A first word that names nobody alone, even when one candidate has it ("tell old …").
_EPITHETS = _set(
    "old young little big great good mad blind wise poor dear fat tall red black white grey gray"
)
_ASK_VERBS = _set(  # speaking verbs whose object is the person: "ask Tobin"
    "ask asks asked asking tell tells told telling question questions questioned "
    "questioning interrogate interrogates interrogated interrogating greet greets greeted "
    "greeting thank thanks thanked thanking warn warns warned warning beg begs begged "
    "begging urge urges urged urging remind reminds reminded reminding inform informs "
    "informed informing answer answers answered answering implore implores implored "
    "imploring hail hails hailed hailing address addresses addressed addressing"
)
_TO_VERBS = _set(  # speaking verbs that take "to": "whisper to Tobin"
    "say says said saying whisper whispers whispered whispering speak speaks spoke "
    "speaking talk talks talked talking shout shouts shouted shouting call calls called "
    "calling murmur murmurs murmured murmuring mutter mutters muttered muttering yell yells "
    "yelled yelling reply replies replied replying explain explains explained explaining "
    "plead pleads pleaded pled pleading hiss hisses hissed hissing cry cries cried crying "
    "confide confides confided confiding lie lies lied lying turn turns turned "
    "turning"
)
_TO_FILLERS = _set("out over back up across aside")  # "call out to Tobin"
_AUXILIARIES = _set(
    "do does did has have had would could might can will doesn didn don hasn haven hadn "
    "wouldn couldn"
)
_NEGATION = frozenset({"t", "not"})  # "doesn't Tobin know": "doesn", "t"
_KNOW = _set(  # after an auxiliary: "does Tobin know", "has Tobin seen"
    "know knew known remember recall see saw seen hear heard witness witnessed notice "
    "noticed learn learned learnt understand"
)
_KNOWS = frozenset({"knows", "knew"})  # "Tobin knows about …"
_KNOWS_FOLLOW = _set("about of anything something what where who whom whether if how why when")
_KNEW = _set(  # "what Tobin knows", "what Tobin saw"
    "knows knew remembers remembered recalls recalled saw heard witnessed noticed learned learnt"
)
_WH = _set("what whatever everything anything all much")
_KNOW_WINDOW = 5  # words after a vocative searched for "you know" ("Tobin, what do you know")


class _Words:
    """The text's words, case-folded as ``names.key_of`` folds them, with their places."""

    def __init__(self, text: str) -> None:
        self.text = unicodedata.normalize("NFKC", text)
        self.keys: list[str] = []
        self.starts: list[int] = []
        self.ends: list[int] = []
        for m in _WORD.finditer(self.text):
            # Case folding can split a word ("İ" folds to "i" and a combining dot, no
            # ``\w``); the parts share the word's place, as key_of would split them.
            for part in _WORD.findall(m.group().casefold()):
                self.keys.append(part)
                self.starts.append(m.start())
                self.ends.append(m.end())

    def __len__(self) -> int:
        return len(self.keys)

    def key(self, i: int) -> str:
        return self.keys[i] if 0 <= i < len(self.keys) else ""

    def gap_after(self, i: int) -> str:
        """The text between word ``i`` and the next (to the end after the last)."""
        end = self.starts[i + 1] if i + 1 < len(self.keys) else len(self.text)
        return self.text[self.ends[i] : end]

    def joined(self, i: int) -> bool:
        """Whether word ``i`` and the next are in one phrase (only space between)."""
        return i + 1 < len(self.keys) and not self.gap_after(i).strip()

    def words(self, first: int, last: int, mark: str = "") -> str:
        said = _SPACE.sub(" ", self.text[self.starts[first] : self.ends[last]]) + mark
        return said[:WORDS_MAX]


def _only(gap: str, marks: frozenset[str]) -> bool:
    """Whether ``gap`` holds nothing but white space and ``marks``."""
    return all(c in marks or c.isspace() for c in gap)


def _close(w: _Words, i: int) -> bool:
    """Whether word ``i`` and the next are in one phrase, an apostrophe allowed between."""
    return i + 1 < len(w) and _only(w.gap_after(i), _APOSTROPHES)


@dataclass
class _Node:
    children: dict[str, _Node] = field(default_factory=dict)
    tiers: dict[int, set[int]] = field(default_factory=dict)  # rank -> ids named here


_FULL, _SHORTER, _FIRST = 2, 1, 0  # a full name outranks one told shorter, then a first word


def _trie(refs: Sequence[Ref]) -> _Node:
    """Every way ``refs`` may be named, word by word."""
    root = _Node()
    for ref in refs:
        key = key_of(ref.name)
        if not key:
            continue
        spelled = " ".join(_WORD.findall(unicodedata.normalize("NFKC", ref.name).casefold()))
        forms = [(spelled, _FULL), (key, _FULL), *((s, _SHORTER) for s in trailing(key))]
        first = key.split(" ")[0]
        if " " in key and first not in _EPITHETS:
            forms.append((first, _FIRST))
        for form, rank in forms:
            node = root
            for word in form.split(" "):
                node = node.children.setdefault(word, _Node())
            node.tiers.setdefault(rank, set()).add(ref.id)
    return root


@dataclass(frozen=True)
class _Match:
    ids: frozenset[int]  # more than one: the name is shared, nobody is singled out
    first: int  # the first word (a title or article the text adds included)
    last: int


def _match(w: _Words, i: int, trie: _Node) -> _Match | None:
    """The longest name starting at word ``i``, or after one title or article there."""
    found = _walk(w, i, trie)
    if found is None and w.key(i) in _SET_ASIDE and w.joined(i):
        found = _walk(w, i + 1, trie)
        return _Match(found.ids, i, found.last) if found else None
    return found


def _walk(w: _Words, i: int, trie: _Node) -> _Match | None:
    node, best, j = trie, None, i
    while j < len(w):
        if j > i and not _only(w.gap_after(j - 1), _NAME_INNER):
            break
        child = node.children.get(w.keys[j])
        if child is None:
            break
        if child.tiers:
            best = _Match(frozenset(child.tiers[max(child.tiers)]), i, j)
        node, j = child, j + 1
    return best


def _next_in_list(w: _Words, last: int) -> tuple[int, bool] | None:
    """Where the next name of a list would start after word ``last``, and whether an
    "and", "or" or "&" (not a bare comma) joins it."""
    mark = w.gap_after(last).strip()
    if w.key(last + 1) in {"and", "or"} and mark in {"", ","} and w.joined(last + 1):
        return last + 2, True
    if mark in _LIST_MARKS and last + 1 < len(w):
        return last + 1, mark not in {",", "、"}
    return None


def _run(w: _Words, i: int, trie: _Node) -> _Match | None:
    """The name at word ``i`` with the names listed after it ("Mara and Tobin"), at most
    ``_LIST_MAX``; a bare comma joins a name only when a list or a vocative goes on after
    it ("Mara, Tobin, listen" is a list, "Mara, Tobin took it" is not)."""
    found = _match(w, i, trie)
    if found is None:
        return None
    ids, last = set(found.ids), found.last
    for _ in range(_LIST_MAX - 1):
        step = _next_in_list(w, last)
        nxt = _match(w, step[0], trie) if step else None
        if step is None or nxt is None:
            break
        if not step[1] and not (_vocative_mark(w, nxt.last) or _next_in_list(w, nxt.last)):
            break
        ids |= nxt.ids
        last = nxt.last
    return _Match(frozenset(ids), found.first, last)


def _vocative_mark(w: _Words, last: int) -> str:
    """The mark after word ``last`` that makes a name before it a vocative ("" if none)."""
    gap = w.gap_after(last).lstrip()
    return gap[0] if gap and gap[0] in _VOCATIVE_MARKS else ""


@dataclass(frozen=True)
class _Found:
    ids: frozenset[int]
    how: AddressKind
    words: str


def _asks_knowing(w: _Words, i: int) -> int | None:
    """The last word of "you know" (or "you saw", …) in the phrase from word ``i`` on,
    within ``_KNOW_WINDOW`` words ("what do you know", "have you seen")."""
    for j in range(i, min(i + _KNOW_WINDOW, len(w) - 1)):
        if not w.joined(j):
            return None
        if w.keys[j] == "you" and w.keys[j + 1] in _KNOW:
            return j + 1
    return None


def _starts(w: _Words) -> list[int]:
    """The words an utterance starts at: the first, and the first of each quotation."""
    return [0] + [i + 1 for i in range(len(w) - 1) if _OPEN_QUOTES & set(w.gap_after(i))]


def _vocatives_first(w: _Words, present: _Node, say: bool) -> list[_Found]:
    """A name, after at most a few greetings, starting an utterance then marked off."""
    found = []
    for start in _starts(w):
        i = start
        while i < len(w) and i - start < _GREETINGS_MAX and _match(w, i, present) is None:
            if w.keys[i] not in _GREETINGS:
                break
            i += 1
        run = _run(w, i, present) if i < len(w) else None
        if run is None:
            continue
        mark = _vocative_mark(w, run.last)
        ends = say and run.last == len(w) - 1 and _only(w.gap_after(run.last), _END_MARKS)
        if not mark and not ends:
            continue
        knows = _asks_knowing(w, run.last + 1) if mark else None
        if knows is not None:
            said = w.words(run.first, knows)
            found.append(_Found(run.ids, AddressKind.ABOUT_KNOWLEDGE, said))
        else:
            found.append(_Found(run.ids, AddressKind.VOCATIVE, w.words(run.first, run.last, mark)))
    return found


def _vocative_last(w: _Words, present: _Node) -> _Found | None:
    """In a say, a name after the last comma or dash, ending it: "Where is it, Tobin?"."""
    last = len(w) - 1
    if last < 1 or not _only(w.gap_after(last), _END_MARKS):
        return None
    i = last
    while i > 0:
        gap = w.gap_after(i - 1)
        if _SENTENCE_ENDS & set(gap):
            return None
        if set(gap) & {",", "、", "—", "–", "―"}:
            break
        i -= 1
    run = _run(w, i, present) if i > 0 else None
    if run is None or run.last != last:
        return None
    mark = w.gap_after(last).strip()[:1]
    sentence = i - 1
    while sentence > 0 and not _SENTENCE_ENDS & set(w.gap_after(sentence - 1)):
        sentence -= 1
    knows = _asks_knowing(w, sentence)
    how = AddressKind.VOCATIVE if knows is None else AddressKind.ABOUT_KNOWLEDGE
    return _Found(run.ids, how, w.words(run.first, run.last, mark))


def _spoken_to(w: _Words, present: _Node) -> list[_Found]:
    """In a do, a speaking verb and then the person: "ask Tobin", "whisper to Tobin"."""
    found = []
    for i, verb in enumerate(w.keys):
        j = i + 1
        if verb in _TO_VERBS:
            while j < len(w) and w.joined(j - 1) and w.keys[j] in _TO_FILLERS:
                j += 1
            if w.key(j) != "to" or not w.joined(j - 1):
                continue
            j += 1
        elif verb not in _ASK_VERBS:
            continue
        run = _run(w, j, present) if w.joined(j - 1) else None
        if run is not None:
            found.append(_Found(run.ids, AddressKind.SPOKEN_TO, w.words(i, run.last)))
    return found


def _about_knowledge(w: _Words, people: _Node) -> list[_Found]:
    """A question about what someone knows: "what does Tobin know", "does Tobin know",
    "Tobin knows about …", "what Tobin saw"."""
    found = []
    for i in range(len(w)):
        j = i + 1 if w.keys[i] in _AUXILIARIES and _close(w, i) else i
        if j > i and w.key(j) in _NEGATION and _close(w, j):
            j += 1
        run = _run(w, j, people) if j < len(w) else None
        if run is None or not w.joined(run.last):
            continue
        verb, after = w.key(run.last + 1), w.key(run.last + 2)
        if j > i:
            if verb not in _KNOW:
                continue
            first = i - 1 if i > 0 and w.keys[i - 1] in _WH and w.joined(i - 1) else i
        elif verb in _KNOWS and after in _KNOWS_FOLLOW and w.joined(run.last + 1):
            first = i
        elif verb in _KNEW and i > 0 and w.keys[i - 1] in _WH and w.joined(i - 1):
            first = i - 1
        else:
            continue
        found.append(_Found(run.ids, AddressKind.ABOUT_KNOWLEDGE, w.words(first, run.last + 1)))
    return found


_RANK = {AddressKind.ABOUT_KNOWLEDGE: 0, AddressKind.VOCATIVE: 1, AddressKind.SPOKEN_TO: 2}


def addressed(
    action_type: str, text: str, present: Sequence[Ref], people: Sequence[Ref]
) -> Addressed | None:
    """The one person the player's input of ``action_type`` addresses or asks about, or
    ``None`` (see the module's invariants)."""
    if action_type in SILENT_ACTIONS or action_type not in {"do", "say"}:
        return None
    w = _Words(text)
    if not len(w):
        return None
    here = _trie(present)
    by_id = {r.id: r for r in [*people, *present]}
    found = _vocatives_first(w, here, say=action_type == "say")
    if action_type == "say":
        last = _vocative_last(w, here)
        found += [last] if last else []
    else:
        found += _spoken_to(w, here)
    found += _about_knowledge(w, _trie(list(by_id.values())))
    ids = {i for f in found for i in f.ids}
    if len(ids) != 1:
        return None  # nobody, or more than one: nobody singled out
    best = min(found, key=lambda f: _RANK[f.how])
    return Addressed(by_id[ids.pop()], best.how, best.words)
