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

from talekeeper.services.memory.prose import (
    COMMON,
    ELLIPSIS,
    QUOTE_CHARS,
    TERMINATORS,
    WORD_RE,
    clip,
    count_words,
    norm,
    second_to_third,
    split_sentences,
    words,
    wordset,
)

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

_NUMBER_WORDS = wordset(
    """two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen
    twenty thirty forty fifty hundred hundreds thousand thousands dozen dozens million"""
)
_PROMISE_WORDS = wordset(
    """promise promises promised swear swears swore sworn vow vows vowed oath oaths owe owes
    owed debt agree agrees agreed deal bargain pledge pledged pact"""
)
_INJURY_WORDS = wordset(
    """wound wounds wounded bleed bleeds bleeding bled blood broken injured injury injuries hurt
    scar scars scarred bite bites bitten limp limps limping poison poisons poisoned venom bruise
    bruised burn burned burnt stab stabs stabbed fracture fractured sprained dead dies died
    killed slain unconscious pain painful twisted twisting sprain gash gashed"""
)


# --- memories ----------------------------------------------------------------------------


def _salient_patterns(salient: Sequence[str]) -> list[re.Pattern[str]]:
    """One whole-word, case-insensitive pattern per distinct name, in a fixed order."""
    patterns: dict[str, re.Pattern[str]] = {}
    for item in salient:
        found = WORD_RE.findall(item)
        if found:
            body = r"\W+".join(_token_pattern(t) for t in found)
            key = " ".join(norm(t) for t in found)
            patterns.setdefault(key, re.compile(rf"(?<!\w){body}(?!\w)", re.IGNORECASE))
    return [patterns[k] for k in sorted(patterns)]


def _token_pattern(token: str) -> str:
    return "['\u2019]".join(re.escape(part) for part in re.split("['\u2019]", token))


def _capitalised(sentence: str) -> set[str]:
    """Capitalised words that open neither the sentence, nor a quotation, nor a sentence
    inside a quotation ('"I'm tired. Let's stop."': "Let's" is no name)."""
    found: set[str] = set()
    tokens = list(WORD_RE.finditer(sentence))
    for prev, token in zip(tokens, tokens[1:], strict=False):
        text = token.group()
        gap = set(sentence[prev.end() : token.start()])
        if not text[0].isupper() or QUOTE_CHARS & gap or TERMINATORS & gap:
            continue
        if norm(text) not in COMMON:
            found.add(norm(text))
    return found


def _uncommon(text: str) -> frozenset[str]:
    return frozenset(words(text)) - COMMON


def _with_intents(block: str, lead: str = "") -> list[tuple[str, frozenset[str]]]:
    """The block's sentences, each with the uncommon words of the player's action it
    answers: the newest player line ("> ...") before it, or ``lead`` (the action just
    before the block) for those before the block's first. Player lines answer nothing."""
    found: list[tuple[str, frozenset[str]]] = []
    intent = _uncommon(lead)
    for line in block.splitlines():
        sentences = [s for s in split_sentences(line) if count_words(s)]
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
    uncommon = distinct - COMMON
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
    if count_words(thirds[best]) >= MEMORY_WORDS:
        return clip(thirds[best], MEMORY_WORDS)
    chosen = [best]
    for k in ranked[1:]:
        if not worth[k].carries or thirds[k] == thirds[best]:
            continue  # scenery, or the same sentence said twice in the block
        if count_words(thirds[best]) + count_words(thirds[k]) <= MEMORY_WORDS:
            chosen.append(k)
            break
    return " ".join(_terminated(thirds[k]) for k in sorted(chosen))


# --- the Story Summary -------------------------------------------------------------------


def _shorten(unit: str, allowance: int) -> str:
    """``unit`` whole, else its leading sentences, else its first sentence clipped, else ""."""
    if count_words(unit) <= allowance:
        return unit
    if allowance < MIN_KEEP_WORDS:
        return ""
    kept: list[str] = []
    total = 0
    sentences = split_sentences(unit)
    for sentence in sentences:
        size = count_words(sentence)
        if total + size > allowance:
            break
        kept.append(sentence)
        total += size
    if total:
        return " ".join(_terminated(s) for s in kept)
    return clip(next((s for s in sentences if count_words(s)), unit), allowance)


def _by_age(units: Sequence[str], scale: int) -> list[str]:
    """Unit ``a`` places from the newest (1 = newest) may keep ``scale // a`` words; once
    one is dropped, every older one is too."""
    kept: list[str] = []
    for age, unit in enumerate(reversed(units), start=1):
        piece = _shorten(unit, scale // age)
        if not count_words(piece):
            break
        kept.append(piece)
    return kept[::-1]


def _fit_by_age(units: Sequence[str], room: int) -> list[str]:
    """The largest age-graded layout of ``units`` (oldest first) within ``room`` words."""
    if sum(count_words(u) for u in units) <= room:
        return list(units)
    low, high = 0, max((count_words(u) for u in units), default=0) * len(units)
    while low < high:  # the layout only grows with the scale, so search for the largest
        middle = (low + high + 1) // 2
        if sum(count_words(p) for p in _by_age(units, middle)) <= room:
            low = middle
        else:
            high = middle - 1
    return _by_age(units, low)


def write_summary(base: str, base_by_user: bool, memories: Sequence[str]) -> str:
    """The next Story Summary: ``base`` (the version valid now, "" if none) followed by
    ``memories`` (the new ones, oldest first), within ``SUMMARY_WORDS`` words."""
    base = base.strip() if count_words(base) else ""
    fresh = [m.strip() for m in memories if count_words(m)]
    everything = ([base] if base else []) + fresh
    if sum(count_words(p) for p in everything) <= SUMMARY_WORDS:
        return _joined(everything)
    newest = [clip(fresh[-1], SUMMARY_WORDS)] if fresh else []
    room = SUMMARY_WORDS - sum(count_words(p) for p in newest)
    head: list[str] = []
    older = fresh[:-1]
    if base and base_by_user:
        head = [clip(base, room)]
        room -= count_words(head[0])
    elif base:
        older = [s for s in split_sentences(base) if count_words(s)] + older
    return _joined(head + _fit_by_age(older, room) + newest)


def _joined(pieces: Sequence[str]) -> str:
    return " ".join(_terminated(p) for p in pieces if p)
