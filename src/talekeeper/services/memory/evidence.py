"""Evidence: the source passages a memory is also retrieved by (docs/memory.md §5, dense stories).

A memory of at most 50 words states one or two of its block's facts; on dense text
(every action carrying facts) retrieval by the memory's own text alone brings back the
stretch but loses most of what was said in it. So a memory keeps its source block's
sentences as extra retrieval **keys**, and when it wins through one, that sentence goes
into the Memories section with it ("from the story: ...").

Invariants:

- A key is a passage of **one** action of the memory's source block, as the player
  read it (``render``): one sentence, or a few consecutive short ones joined until the
  passage holds ``MIN_KEY_TERMS`` terms (``terms``: words that are not stop words), so
  "Yes." or "He nods." never stands alone when its action has more to say (an action
  that is one short sentence is one passage), while a short sentence that states
  something ("Pozoll is Hivura's daughter.": three terms) is a key of its own.
- Every passage is a key, those the memory's own text states too: a sentence scores
  against a question as a sentence, and the memory's statement of a fact must not
  lose to a sentence of scenery only because a whole memory's vector is a blend of
  its sentences (measured: leaving stated passages out took the planted-fact recall
  from 0.92 to 0.76). A passage the memory states (``stated``: ``STATED_SHARE`` of
  its terms are the memory's) is never carried into the context: it would say the
  same thing twice.
- At most ``MAX_KEYS`` keys a memory (the first ones in story order): a block with
  very long actions costs a bounded number of vectors.
- A key's **names** are the terms of its capitalised words (``names``: "Toen", "Zabreen";
  stop words such as "The" or "It" are no terms). They are what a question that names
  no one can still reach through the key (``ranking``'s hop: "what does the blacksmith
  at Zabreen hate?" finds "The blacksmith at Zabreen is called Toen Godend", then
  "Toen hates boiled cabbage").
- Keys are derived and follow the memory: they are read from the source as it stands
  when the memory is keyed, dropped (``bank.drop_keys``) whenever its text or its source
  changes (a re-derivation, an edit of a covered action, a gap joined), and read again
  by the next embedding pass. A memory out of the bank (withdrawn, forgotten, deleted)
  is never ranked, so neither are its keys. Keys cut by an earlier rule (six words, not
  three terms) stay until their memory is keyed again: each is still a passage of one
  action, only a coarser one.

Why sentences and not the block (measured on the dense recall benchmark, see
docs/benchmarks.md): a whole block as one vector blurs its six actions' facts together,
and carrying it into the context would cost ten times a memory; one sentence is what
states a fact and fits beside the memory within the Memories budget.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from talekeeper.services.memory.terms import abbreviation, term_set, terms

# A sentence with this many terms states something on its own ("Pozoll is Hivura's daughter.");
# shorter ones ("He nods.", "Yes, she says.") join the next: alone they match anything. Counted
# in words before (6), that joined four-word statements to an unrelated neighbour, whose half
# of the vector then outweighed the fact (dense tune seed: fact in prompt 0.83 -> 0.89, the two
# probes gained asking "who is X's daughter" and for a shepherd by another name; planted-fact
# recall unchanged at 0.94; docs/benchmarks.md, "Evidence keys").
MIN_KEY_TERMS = 3
MAX_KEYS = 48  # per memory: six long narrations; beyond it a block costs vectors for little
STATED_SHARE = 0.8  # a passage whose terms are this much the memory's own is already stated
# Sentence ends: . ! ? … followed by space, optionally after a closing quote or bracket.
_SENTENCE_END = re.compile(r"(?<=[.!?…])[\"'”’)\]]*\s+|\n+")
# The letters right before a full stop (at most a few: abbreviations are short).
_LAST_WORD = re.compile(r"(?<![^\W\d_])[^\W\d_]{1,6}$")
# A word of letters, apostrophes inside ("O'Hara's"); capitalised when its first is upper case.
_LETTER_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*")


@dataclass(frozen=True)
class Passage:
    depth: int  # the action it comes from
    text: str
    terms: frozenset[str]
    names: frozenset[str] = frozenset()


def names(text: str) -> frozenset[str]:
    """The terms of ``text``'s capitalised words (see the module docstring)."""
    capitalised = (w for w in _LETTER_WORD.findall(text) if w[0].isupper())
    return frozenset(t for word in capitalised for t in terms(word))


def sentences(text: str) -> list[str]:
    """``text`` cut after each sentence end (the closing quote stays with its sentence);
    a full stop after an abbreviation or a capital initial ends nothing ("Mr. Hurst":
    split there, the title's passage held no name and the name's no title)."""
    out: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        if _abbreviated(text, match):
            continue
        end = match.start() + len(match.group(0).rstrip())
        piece = text[start:end].strip()
        if piece:
            out.append(piece)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        out.append(tail)
    return out


def _abbreviated(text: str, match: re.Match[str]) -> bool:
    """Whether the break ``match`` follows "Mr." or "J." (a lone full stop, then spaces on
    the same line: ``terms.abbreviation``)."""
    gap = match.group(0)
    if gap.strip() or "\n" in gap or match.start() < 2 or text[match.start() - 1] != ".":
        return False
    word = _LAST_WORD.search(text, max(0, match.start() - 8), match.start() - 1)
    if word is None or word.end() != match.start() - 1:
        return False
    return abbreviation(word.group(0))


def _joined(pieces: list[str]) -> list[str]:
    """Consecutive short sentences joined until each passage holds ``MIN_KEY_TERMS`` terms
    (repeats counted); a short last one joins the passage before it."""
    out: list[str] = []
    current: list[str] = []
    held = 0
    for piece in pieces:
        current.append(piece)
        held += len(terms(piece))
        if held >= MIN_KEY_TERMS:
            out.append(" ".join(current))
            current, held = [], 0
    if current:
        if out:
            out[-1] = out[-1] + " " + " ".join(current)
        else:
            out.append(" ".join(current))
    return out


def stated(passage: str, memory_text: str) -> bool:
    """Whether the memory's text already says what ``passage`` says (by their terms)."""
    terms = term_set(passage)
    return len(terms & term_set(memory_text)) >= STATED_SHARE * len(terms)


Said = tuple[tuple[str, tuple[int, ...]], ...]  # each sentence, and the actions it is from


def said(memory_text: str, keys: Sequence[tuple[int, str]]) -> Said:
    """Each sentence of a memory's own text with the actions it comes from, read from the
    memory's keys ((depth, terms as stored)): those of the keys that hold all its terms,
    else those of the keys it states, when together they hold all its terms; else none
    (words no passage accounts for, such as a model's own, come from no action known). A
    sentence without terms says nothing of any action: it has none either."""
    out: list[tuple[str, tuple[int, ...]]] = []
    held = [(depth, set(stored.split())) for depth, stored in keys]
    for sentence in sentences(memory_text):
        wanted = term_set(sentence)
        within = {depth for depth, terms in held if wanted and wanted <= terms}
        if not within:
            stating = [
                (depth, terms)
                for depth, terms in held
                if terms and len(terms & wanted) >= STATED_SHARE * len(terms)
            ]
            have = set().union(*(terms for _, terms in stating)) if stating else set()
            within = {depth for depth, _ in stating} if wanted and wanted <= have else set()
        out.append((sentence, tuple(sorted(within))))
    return tuple(out)


def passages(actions: Sequence[tuple[int, str]]) -> list[Passage]:
    """The keys of a memory whose source block is ``actions`` ((depth, rendered text) in
    story order): see the module docstring."""
    out: list[Passage] = []
    for depth, text in actions:
        for passage in _joined(sentences(text)):
            terms = frozenset(term_set(passage))
            if not terms:
                continue
            out.append(Passage(depth, passage, terms, names(passage)))
            if len(out) >= MAX_KEYS:
                return out
    return out
