"""The extractive writer: memories and the Story Summary without a model (docs/memory.md §2, §3).

Invariants:

- **No new word.** Every word of a memory is a word of its block, a word of the
  protagonist's name or that name with "'s" ("the player" and "the player's"
  when the protagonist is unnamed), or the third person of a block's word that
  followed "you" (``agreed``: "walks" for "walk", "is" for "are" or "you're").
  Every word of a summary is a word of its base or of its memories. A word is
  what ``words`` returns: lowercase runs of letters and digits, joined by inner
  apostrophes (a curly one counts as straight). Words are counted the same way
  for every limit.
- **Limits.** A memory has at most ``MEMORY_WORDS`` words, a summary at most
  ``SUMMARY_WORDS``. Text cut short ends with "…" on a word boundary.
- **Deterministic.** The same input gives the same output; ties go to the
  earlier sentence.
- **Memories.** One sentence of the block, the most informative (named people,
  places and items from ``salient``, numbers, promises and injuries weigh most;
  a narration sentence that answers the player's action before it, by sharing
  its uncommon words, weighs more; filler least), plus a second if it carries
  news (a signal, a name no card knows, an answer to the player) or two of the
  cast together, is not the first again, and both fit; one companion merely
  present is scenery their card already covers. The protagonist's own name is
  no signal: every sentence about "you" is about them, named or not. Chosen
  sentences keep story order. Second person outside quotation marks becomes the
  protagonist, and the present-tense verb after a subject "you" agrees with it
  ("you walk" -> "Tamsin walks", "you are" -> "is", "you're" -> "is", "you slowly
  turn" -> "slowly turns"); a past tense, a modal or a word that is no verb after
  "you" ("you both", "you alone") is left as it was. A block with a word gives a
  memory with a word.
- **Summaries.** Under the limit, the base and the memories are kept verbatim, in
  order. Over it: a user-written base comes first and whole (cut only to leave
  room for the newest memory); the newest memory is always kept whole (cut only
  if it alone exceeds the limit); the rest, oldest first (an automatic base is
  the oldest), get a word allowance that shrinks with age: whole, then its
  leading sentences, then one clipped sentence, then dropped, oldest first.
- **Linear.** The work is linear in the text (a player's action can be any length): the
  patterns have no nested quantifiers over the same characters and start a sentence end
  only where its run of marks starts; what lies before each end (the last word, the open
  quotations) is counted on from the end before, never again from the line's start.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from talekeeper.services.memory.terms import abbreviation

MEMORY_WORDS = 50  # docs/memory.md §2: a memory is at most 50 words
SUMMARY_WORDS = 250  # docs/memory.md §3: the Story Summary is at most 250 words

SALIENT_WEIGHT = 3.0  # a person, place or item from the cast or the cards is the best signal
SIGNAL_WEIGHT = 2.0  # a number, a promise or an injury is a concrete fact worth keeping
NAME_WEIGHT = 4.0  # a name no card knows outweighs a card's name (the card says its part)
NAME_CAP = 2  # a list of unknown names counts as two
DETAIL_WEIGHT = 0.25  # each distinct uncommon word adds a little detail...
DETAIL_CAP = 4  # ...one point at most, so detail breaks ties but never beats a signal
SHORT_SENTENCE_WORDS = 4  # fewer words than this is filler ("It is cold.")
FILLER_PENALTY = 1.0  # short sentences, questions and trailing-off ellipses say little
COMMON_PENALTY = 2.0  # a sentence of only common words says nothing at all
CARRIES_WEIGHT = 2.0  # a second sentence must carry at least one real signal
ANSWER_WEIGHT = 2.0  # each uncommon word a narration sentence shares with the player's action...
ANSWER_CAP = 2  # ...two at most: what came of what the player set out to do
MIN_KEEP_WORDS = 8  # a summary fragment shorter than this is dropped, not kept mangled

ELLIPSIS = "\u2026"
UNNAMED = "the player"  # who "you" is when the cast names no protagonist

_WORD_RE = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*")
# A match starts only where a run of end marks starts: a try from inside the run would
# reach the same place and fail the same way, and letting it try made a run of dots (no
# space after) cost its length squared.
_BOUNDARY_RE = re.compile(r"(?<![.!?\u2026])[.!?\u2026]++[\"'\u201d\u2019)\]]*+(?=\s)")
_SPEECH_END_RE = re.compile(r"[!?][\"\u201d]")  # "Run!" Hale shouts: one sentence
_WORD_RUN_RE = re.compile(r"\w+")
# What follows a sentence end, past its blanks: matched in place, where stripping a copy of
# the rest of the line for every end was quadratic.
_NEXT_CHAR_RE = re.compile(r"\s*+(\S)")


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


_COMMON = _wordset(
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
_NUMBER_WORDS = _wordset(
    """two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen
    twenty thirty forty fifty hundred hundreds thousand thousands dozen dozens million"""
)
_PROMISE_WORDS = _wordset(
    """promise promises promised swear swears swore sworn vow vows vowed oath oaths owe owes
    owed debt agree agrees agreed deal bargain pledge pledged pact"""
)
_INJURY_WORDS = _wordset(
    """wound wounds wounded bleed bleeds bleeding bled blood broken injured injury injuries hurt
    scar scars scarred bite bites bitten limp limps limping poison poisons poisoned venom bruise
    bruised burn burned burnt stab stabs stabbed fracture fractured sprained dead dies died
    killed slain unconscious pain painful twisted twisting sprain gash gashed"""
)
_SUBJECT_LEADS = _wordset(
    """and but or nor so then as when while before after until because if once since though
    although unless whether that what where who which how why than"""
)
_NOT_VERBS = _wordset(
    """can could will would shall should may might must had did was is has does also too all
    both not never just still only even already"""
)
# Common words that are verbs all the same, so they may still agree with "you".
_VERBS = _wordset(
    """get go come see look make take say tell know think want like seem do have need feel
    find give keep leave run turn hold bring stand sit walk try ask help"""
)
# Words after a subject "you" that are no present-tense verb: the past (besides the -ed
# forms; "put", "let", "read" may be either and are left alone), and words that are not
# verbs there ("you both", "you alone", "you two").
_NOT_PRESENT = _wordset(
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
_ED_VERBS = _wordset("need feed bleed breed heed speed proceed succeed exceed shred embed")
# Verbs that end in "ly" (every other word that does is an adverb: "you slowly turn").
_LY_VERBS = _wordset("reply apply rely fly ally supply multiply imply comply tally rally bully")
# Adverbs that may stand between "you" and its verb, besides those in -ly ("you still have").
_ADVERBS = _wordset("never always still just also often even already almost soon sometimes")
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
_TERMINATORS = frozenset(".!?\u2026")
_QUOTE_CHARS = frozenset("\"'\u201c\u201d\u2018\u2019")


def words(text: str) -> list[str]:
    """The words of ``text`` as every limit and the no-new-word rule count them."""
    return [_norm(m.group()) for m in _WORD_RE.finditer(text)]


def _norm(token: str) -> str:
    return token.lower().replace("\u2019", "'")


def _count(text: str) -> int:
    return len(_WORD_RE.findall(text))


def clip(text: str, limit: int) -> str:
    """``text`` cut after its ``limit``-th word, marked with "…"; whole if it fits."""
    if limit <= 0:
        return ""
    found = list(_WORD_RE.finditer(text))
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
    tokens = list(_WORD_RE.finditer(sentence))
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
        low = _norm(text)
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
    return _norm(following.group())


def _is_subject(sentence: str, tokens: list[re.Match[str]], i: int) -> bool:
    if i == 0:
        return True
    gap = sentence[tokens[i - 1].end() : tokens[i].start()]
    return bool(_SUBJECT_GAP & set(gap)) or _norm(tokens[i - 1].group()) in _SUBJECT_LEADS


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
        or (verb in _COMMON and verb not in _VERBS)
    ):
        return None
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(verb) > 1 and verb.endswith("y") and verb[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


# --- memories ----------------------------------------------------------------------------


def _salient_patterns(salient: Sequence[str]) -> list[re.Pattern[str]]:
    """One whole-word, case-insensitive pattern per distinct name, in a fixed order."""
    patterns: dict[str, re.Pattern[str]] = {}
    for item in salient:
        found = _WORD_RE.findall(item)
        if found:
            body = r"\W+".join(_token_pattern(t) for t in found)
            key = " ".join(_norm(t) for t in found)
            patterns.setdefault(key, re.compile(rf"(?<!\w){body}(?!\w)", re.IGNORECASE))
    return [patterns[k] for k in sorted(patterns)]


def _token_pattern(token: str) -> str:
    return "['\u2019]".join(re.escape(part) for part in re.split("['\u2019]", token))


def _capitalised(sentence: str) -> set[str]:
    """Capitalised words that open neither the sentence, nor a quotation, nor a sentence
    inside a quotation ('"I'm tired. Let's stop."': "Let's" is no name)."""
    found: set[str] = set()
    tokens = list(_WORD_RE.finditer(sentence))
    for prev, token in zip(tokens, tokens[1:], strict=False):
        text = token.group()
        gap = set(sentence[prev.end() : token.start()])
        if not text[0].isupper() or _QUOTE_CHARS & gap or _TERMINATORS & gap:
            continue
        if _norm(text) not in _COMMON:
            found.add(_norm(text))
    return found


def _uncommon(text: str) -> frozenset[str]:
    return frozenset(words(text)) - _COMMON


def _with_intents(block: str, lead: str = "") -> list[tuple[str, frozenset[str]]]:
    """The block's sentences, each with the uncommon words of the player's action it
    answers: the newest player line ("> ...") before it, or ``lead`` (the action just
    before the block) for those before the block's first. Player lines answer nothing."""
    found: list[tuple[str, frozenset[str]]] = []
    intent = _uncommon(lead)
    for line in block.splitlines():
        sentences = [s for s in split_sentences(line) if _count(s)]
        if line.lstrip().startswith(">"):
            intent = _uncommon(line)
            found.extend((s, frozenset()) for s in sentences)
        else:
            found.extend((s, intent) for s in sentences)
    return found


@dataclass(frozen=True)
class _Worth:
    score: float  # how much the sentence is worth keeping; higher is better
    news: float  # the part of it the cards cannot already say (see ``carries``)
    cast: int  # the cast's names it mentions

    @property
    def carries(self) -> bool:
        """Worth a second place: news (a signal, a new name, an answer to the player) or
        the cast together; one companion merely present is scenery the card covers."""
        return self.news >= CARRIES_WEIGHT or self.cast >= 2


def _worth(
    sentence: str,
    patterns: Sequence[re.Pattern[str]],
    named: set[str],
    intent: frozenset[str] = frozenset(),
) -> _Worth:
    """What a sentence is worth as a memory. ``intent``: the uncommon words of the
    player's action the sentence answers."""
    toks = words(sentence)
    if not toks:
        return _Worth(float("-inf"), 0.0, 0)
    distinct = set(toks)
    uncommon = distinct - _COMMON
    cast = sum(1 for p in patterns if p.search(sentence))
    news = ANSWER_WEIGHT * min(len(uncommon & intent), ANSWER_CAP)
    has_number = any(c.isdigit() for c in sentence) or bool(distinct & _NUMBER_WORDS)
    for signal in (has_number, distinct & _PROMISE_WORDS, distinct & _INJURY_WORDS):
        news += SIGNAL_WEIGHT if signal else 0.0
    news += NAME_WEIGHT * min(len(_capitalised(sentence) - named), NAME_CAP)
    score = SALIENT_WEIGHT * cast + news + DETAIL_WEIGHT * min(len(uncommon), DETAIL_CAP)
    if len(toks) < SHORT_SENTENCE_WORDS:
        score -= FILLER_PENALTY
    if sentence.rstrip("\"'\u201d\u2019)] ").endswith("?"):
        score -= FILLER_PENALTY
    if "..." in sentence or ELLIPSIS in sentence:
        score -= FILLER_PENALTY
    if not uncommon:
        score -= COMMON_PENALTY
    return _Worth(score, news, cast)


def _terminated(sentence: str) -> str:
    return sentence + "." if sentence and sentence[-1].isalnum() else sentence


def write_memory(block: str, protagonist: str, salient: Sequence[str], lead: str = "") -> str:
    """One or two sentences of ``block`` in third person, at most ``MEMORY_WORDS`` words.

    ``block`` is the story text as the player sees it; ``salient`` holds the names of
    people, places and items (story-card names and keywords, the persona's name);
    ``lead`` the player's action just before the block when the block opens on its
    answer (only weighed: no word of it is written)."""
    pairs = _with_intents(block, lead)
    if not pairs:
        return ""
    sentences = [s for s, _ in pairs]
    named = {w for item in salient for w in words(item)}
    own = words(protagonist)
    patterns = _salient_patterns([n for n in salient if words(n) != own])
    worth = [_worth(s, patterns, named, intent) for s, intent in pairs]
    scores = [w.score for w in worth]
    thirds = [second_to_third(s, protagonist) for s in sentences]
    ranked = sorted(range(len(sentences)), key=lambda k: (-scores[k], k))
    best = ranked[0]
    if _count(thirds[best]) >= MEMORY_WORDS:
        return clip(thirds[best], MEMORY_WORDS)
    chosen = [best]
    for k in ranked[1:]:
        if not worth[k].carries or thirds[k] == thirds[best]:
            continue  # scenery, or the same sentence said twice in the block
        if _count(thirds[best]) + _count(thirds[k]) <= MEMORY_WORDS:
            chosen.append(k)
            break
    return " ".join(_terminated(thirds[k]) for k in sorted(chosen))


# --- the Story Summary -------------------------------------------------------------------


def _shorten(unit: str, allowance: int) -> str:
    """``unit`` whole, else its leading sentences, else its first sentence clipped, else ""."""
    if _count(unit) <= allowance:
        return unit
    if allowance < MIN_KEEP_WORDS:
        return ""
    kept: list[str] = []
    total = 0
    sentences = split_sentences(unit)
    for sentence in sentences:
        size = _count(sentence)
        if total + size > allowance:
            break
        kept.append(sentence)
        total += size
    if total:
        return " ".join(_terminated(s) for s in kept)
    return clip(next((s for s in sentences if _count(s)), unit), allowance)


def _by_age(units: Sequence[str], scale: int) -> list[str]:
    """Unit ``a`` places from the newest (1 = newest) may keep ``scale // a`` words; once
    one is dropped, every older one is too."""
    kept: list[str] = []
    for age, unit in enumerate(reversed(units), start=1):
        piece = _shorten(unit, scale // age)
        if not _count(piece):
            break
        kept.append(piece)
    return kept[::-1]


def _fit_by_age(units: Sequence[str], room: int) -> list[str]:
    """The largest age-graded layout of ``units`` (oldest first) within ``room`` words."""
    if sum(_count(u) for u in units) <= room:
        return list(units)
    low, high = 0, max((_count(u) for u in units), default=0) * len(units)
    while low < high:  # the layout only grows with the scale, so search for the largest
        middle = (low + high + 1) // 2
        if sum(_count(p) for p in _by_age(units, middle)) <= room:
            low = middle
        else:
            high = middle - 1
    return _by_age(units, low)


def write_summary(base: str, base_by_user: bool, memories: Sequence[str]) -> str:
    """The next Story Summary: ``base`` (the version valid now, "" if none) followed by
    ``memories`` (the new ones, oldest first), within ``SUMMARY_WORDS`` words."""
    base = base.strip() if _count(base) else ""
    fresh = [m.strip() for m in memories if _count(m)]
    everything = ([base] if base else []) + fresh
    if sum(_count(p) for p in everything) <= SUMMARY_WORDS:
        return _joined(everything)
    newest = [clip(fresh[-1], SUMMARY_WORDS)] if fresh else []
    room = SUMMARY_WORDS - sum(_count(p) for p in newest)
    head: list[str] = []
    older = fresh[:-1]
    if base and base_by_user:
        head = [clip(base, room)]
        room -= _count(head[0])
    elif base:
        older = [s for s in split_sentences(base) if _count(s)] + older
    return _joined(head + _fit_by_age(older, room) + newest)


def _joined(pieces: Sequence[str]) -> str:
    return " ".join(_terminated(p) for p in pieces if p)
