"""The prose tools of the extractive writer (``extractive``): words as every limit counts
them, sentences as a block splits into them, and second person turned into the protagonist.

Invariants (``extractive`` states what they serve):

- A word is what ``words`` returns: lowercase runs of letters and digits, joined by inner
  apostrophes (a curly one counts as straight).
- ``second_to_third`` adds no word but the protagonist's name (or "the player"), its
  possessive, and the third person of a word that followed "you" (``agreed``).
- Linear in the text: the patterns have no nested quantifiers over the same characters
  and start a sentence end only where its run of marks starts; what lies before each end
  is counted on from the end before, never again from the line's start.
"""

from __future__ import annotations

import re

from talekeeper.services.memory.terms import abbreviation

ELLIPSIS = "\u2026"
UNNAMED = "the player"  # who "you" is when the cast names no protagonist

WORD_RE = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")
# A match starts only where a run of end marks starts: a try from inside the run would
# reach the same place and fail the same way, and letting it try made a run of dots (no
# space after) cost its length squared.
_BOUNDARY_RE = re.compile(r"(?<![.!?\u2026])[.!?\u2026]++[\"'\u201d\u2019)\]]*+(?=\s)")
_SPEECH_END_RE = re.compile(r"[!?][\"\u201d]")  # "Run!" Hale shouts: one sentence
_WORD_RUN_RE = re.compile(r"\w+")
# What follows a sentence end, past its blanks: matched in place, where stripping a copy of
# the rest of the line for every end was quadratic.
_NEXT_CHAR_RE = re.compile(r"\s*+(\S)")


def wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


COMMON = wordset(
    """a an the and or but nor so yet if then than that this these those there here it its
    it's is are was were be been being am do does did done doing have has had having i me my
    mine we us our you your yours he him his she her hers they them their what which who whom
    whose when where why how all any some no not none one each every both few more most other
    such only own same too very just still now again also can could will would shall should may
    might must of in on at by for with about against between into through during before after
    above below to from up down out off over under as until while once around back away
    there's get gets got go goes went gone come comes came see sees saw look looks looked
    seem seems make makes made take takes took say says said tell tells told know knows knew
    think thinks thought want wants like well way thing things something nothing anything
    someone time moment little much many even ever never always perhaps maybe yes oh ah"""
)

_SUBJECT_LEADS = wordset(
    """and but or nor so then as when while before after until because if once since though
    although unless whether that what where who which how why than"""
)
_NOT_VERBS = wordset(
    """can could will would shall should may might must had did was is has does also too all
    both not never just still only even already"""
)
# Common words that are verbs all the same, so they may still agree with "you".
_VERBS = wordset(
    """get go come see look make take say tell know think want like seem do have need feel
    find give keep leave run turn hold bring stand sit walk try ask help"""
)
# Words after a subject "you" that are no present-tense verb: the past (besides the -ed
# forms; "put", "let", "read" may be either and are left alone), and words that are not
# verbs there ("you both", "you alone", "you two").
_NOT_PRESENT = wordset(
    """went saw took came gave found felt left kept knew thought told said made heard held
    stood ran sat brought bought caught fought taught began drank ate fell got grew hid hit
    hurt let lost meant met paid put read rode rose set shook shot shut slept spoke spent
    stole struck swam threw understood woke wore won wrote led lay laid drew drove chose
    broke bit blew built burnt dug fled flew forgot froze hung knelt lit sank sang slid
    sought sent sold spun stuck swept swung tore wept dealt dreamt leapt learnt spilt quit
    alone all both two three four too also either neither yourself yourselves who whom
    there here again now then first last guys people lot"""
)
# Present-tense verbs that end in "ed" (every other word that does is a past tense).
_ED_VERBS = wordset("need feed bleed breed heed speed proceed succeed exceed shred embed")
# Verbs that end in "ly" (every other word that does is an adverb: "you slowly turn").
_LY_VERBS = wordset("reply apply rely fly ally supply multiply imply comply tally rally bully")
# Adverbs that may stand between "you" and its verb, besides those in -ly ("you still have").
_ADVERBS = wordset("never always still just also often even already almost soon sometimes")
_AGREEMENT = {
    "are": "is",
    "were": "was",
    "have": "has",
    "do": "does",
    "aren't": "isn't",
    "weren't": "wasn't",
    "haven't": "hasn't",
    "don't": "doesn't",
}
_CONTRACTIONS = {"you're": "is", "you've": "has", "you'll": "will"}
_SUBJECT_GAP = frozenset(',;:.!?()"\u201c\u201d\u2014\u2013-')
TERMINATORS = frozenset(".!?\u2026")
QUOTE_CHARS = frozenset("\"'\u201c\u201d\u2018\u2019")


def words(text: str) -> list[str]:
    """The words of ``text`` as every limit and the no-new-word rule count them."""
    return [norm(m.group()) for m in WORD_RE.finditer(text)]


def norm(token: str) -> str:
    return token.lower().replace("\u2019", "'")


def count_words(text: str) -> int:
    return len(WORD_RE.findall(text))


def clip(text: str, limit: int) -> str:
    """``text`` cut after its ``limit``-th word, marked with "…"; whole if it fits."""
    if limit <= 0:
        return ""
    found = list(WORD_RE.finditer(text))
    if len(found) <= limit:
        return text
    return text[: found[limit - 1].end()] + ELLIPSIS


# --- sentences ---------------------------------------------------------------------------


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` in order: every line break ends one, and a leading
    "> " (how a player action is shown) is dropped. Abbreviations ("Mr."), initials
    and terminators inside a quotation do not end a sentence, nor does one followed by
    a lowercase word (‘"Run!" you shout’)."""
    sentences: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith(">"):
            line = line[1:].strip()
        start = 0
        last_word, quotes = _LastWord(line), _Quotes(line)
        for match in _BOUNDARY_RE.finditer(line):
            if _ends_sentence(line, match, last_word, quotes):
                sentences.append(line[start : match.end()].strip())
                start = match.end()
        tail = line[start:].strip()
        if tail:
            sentences.append(tail)
    return [s for s in sentences if s]


def _ends_sentence(line: str, match: re.Match[str], last_word: _LastWord, quotes: _Quotes) -> bool:
    after = _NEXT_CHAR_RE.match(line, match.end())
    if after is None or after.group(1).islower() or _SPEECH_END_RE.search(match.group()):
        return False
    word = last_word.before(match.start())
    one_stop = match.group().startswith(".") and not match.group().startswith("..")
    if one_stop and abbreviation(word):
        return False
    return not quotes.inside(match.end())


class _LastWord:
    """The last word before each of increasing positions of ``text``: the letters and
    digits after the last "_" of the last ``\\w`` run, "" if that run ends with "_" (as
    ``([^\\W_]+)\\W*$`` finds it in the text before the position). The runs are read once,
    in order: searching the whole text before every sentence end was quadratic."""

    def __init__(self, text: str) -> None:
        self._runs = _WORD_RUN_RE.finditer(text)
        self._next = next(self._runs, None)
        self._last = ""

    def before(self, pos: int) -> str:
        while self._next is not None and self._next.end() <= pos:
            self._last = self._next.group().rsplit("_", 1)[-1]
            self._next = next(self._runs, None)
        return self._last


class _Quotes:
    """Whether each of increasing positions of ``text`` lies inside a quotation, ignored
    where the quotes don't pair up. The quotes before a position are counted on from the
    last one asked: counting them from the start for every position was quadratic."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._straight_paired = text.count('"') % 2 == 0
        self._curly_paired = text.count("\u201c") == text.count("\u201d")
        self._at = self._straight = self._opened = self._closed = 0

    def inside(self, pos: int) -> bool:
        if pos < self._at:  # asked out of order: count again from the start
            self._at = self._straight = self._opened = self._closed = 0
        text, at = self._text, self._at
        self._straight += text.count('"', at, pos)
        self._opened += text.count("\u201c", at, pos)
        self._closed += text.count("\u201d", at, pos)
        self._at = pos
        if self._straight_paired and self._straight % 2 == 1:
            return True
        return self._curly_paired and self._opened > self._closed


# --- second person -----------------------------------------------------------------------


def second_to_third(sentence: str, name: str) -> str:
    """``sentence`` with "you" outside quotations rewritten to ``name`` ("the player" if
    empty): you/yourself -> Mara, your/yours -> Mara's, you're -> Mara is. The
    present-tense verb after a subject "you" agrees (are -> is, draw -> draws, carry ->
    carries), past an adverb in -ly; anything else after it is left as it was."""
    who = name.strip() if words(name) else UNNAMED
    tokens = list(WORD_RE.finditer(sentence))
    quotes = _Quotes(sentence)
    parts: list[str] = []
    overrides: dict[int, str] = {}
    pos = 0
    for i, token in enumerate(tokens):
        parts.append(sentence[pos : token.start()])
        pos = token.end()
        text = token.group()
        if i in overrides:
            parts.append(overrides[i])
            continue
        low = norm(text)
        if not low.startswith("you") or quotes.inside(token.start()):
            parts.append(text)
            continue
        replacement = _replace_you(low, who, _next_word(sentence, tokens, i))
        if replacement is None:
            parts.append(text)
            continue
        if low == "you" and _is_subject(sentence, tokens, i):
            at = i + 1
            following = _next_word(sentence, tokens, i)
            if following in _ADVERBS or (following.endswith("ly") and following not in _LY_VERBS):
                at, following = i + 2, _next_word(sentence, tokens, i + 1)  # "you slowly turn"
            verb = _agree(following)
            if verb is not None:
                overrides[at] = verb
        if text[0].isupper() and replacement.startswith(UNNAMED):
            replacement = "T" + replacement[1:]  # a name is kept exactly as the cast spells it
        parts.append(replacement)
    parts.append(sentence[pos:])
    return "".join(parts)


def _replace_you(low: str, who: str, following: str) -> str | None:
    if low in ("you", "yourself", "yourselves"):
        return who
    if low in ("your", "yours"):
        return who + "'s"
    if low == "you'd":
        # "you'd gone" is "had", "you'd go" is "would"
        past = following.endswith(("ed", "en", "wn", "ne", "ht"))
        return f"{who} {'had' if past else 'would'}"
    verb = _CONTRACTIONS.get(low)
    return f"{who} {verb}" if verb is not None else None


def _next_word(sentence: str, tokens: list[re.Match[str]], i: int) -> str:
    """The word right after token ``i`` if only spaces separate them, else ""."""
    if i + 1 >= len(tokens):
        return ""
    following = tokens[i + 1]
    gap = sentence[tokens[i].end() : following.start()]
    if gap.strip() or following.group() != following.group().lower():
        return ""
    return norm(following.group())


def _is_subject(sentence: str, tokens: list[re.Match[str]], i: int) -> bool:
    if i == 0:
        return True
    gap = sentence[tokens[i - 1].end() : tokens[i].start()]
    return bool(_SUBJECT_GAP & set(gap)) or norm(tokens[i - 1].group()) in _SUBJECT_LEADS


def agreed(word: str) -> set[str]:
    """The words the protagonist's agreement may write for a block's ``word`` (the
    no-new-word rule's allowance)."""
    if word in _CONTRACTIONS:
        return {_CONTRACTIONS[word]}
    if word == "you'd":
        return {"had", "would"}
    third = _agree(word)
    return {third} if third is not None else set()


def _agree(verb: str) -> str | None:
    """The third person of a present-tense ``verb`` (None: it is none, or not present)."""
    if not verb:
        return None
    if verb in _AGREEMENT:
        return _AGREEMENT[verb]
    if (
        not verb.isalpha()
        or verb in _NOT_VERBS
        or verb in _NOT_PRESENT
        or (verb.endswith("ed") and verb not in _ED_VERBS)
        or (verb in COMMON and verb not in _VERBS)
    ):
        return None
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(verb) > 1 and verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"
