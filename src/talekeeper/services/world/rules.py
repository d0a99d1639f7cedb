"""Events from explicit patterns in an action's text: the *rules* way of deriving the world
(docs/world.md), for the embedded narrator or when no extraction model is set.

Invariants:

- Pure: text in, events out; the same text always gives the same events, in time linear
  in the text (every pattern reads a bounded stretch from where it starts).
- Precision over recall: a sentence gives an event only when it says the change in so
  many words ("You pick up the brass key.", "You walk into the Salt Market.", "Maren
  dies.", "The next morning, ..."). A sentence that hedges or denies ("try to", "cannot",
  "almost", "if", a question) gives nothing, and so does a name that is a pronoun or
  longer than ``NAME_WORDS`` words.
- Each event keeps the sentence it came from as its evidence.
- The player's own ``do`` action reads as its rendering ("> You pick up the key."), so a
  typed "pick up the key" and a narrated "You pick up the key." say the same; a ``say``
  is speech, and states no change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from talekeeper.services.common.rendering import NARRATION, render
from talekeeper.storage.vocabulary import EventKind

NAME_WORDS = 5  # a longer noun phrase is a description, not a name
EVIDENCE_MAX = 400


@dataclass(frozen=True)
class Derived:
    """An event found in a sentence: names as written, not yet matched to entities."""

    kind: EventKind
    subject: str | None  # None: the player's own character
    object: str | None
    value: str | None
    evidence: str


_SENTENCE = re.compile(r"[^.!?…]+[.!?…]*")
_HEDGE = re.compile(
    r"\b(?:try|tries|tried|trying|attempt\w*|cannot|can't|can not|could not|couldn't|fail\w*|"
    r"almost|nearly|want\w*|wish\w*|if|unless|would|might|may|maybe|perhaps|pretend\w*|"
    r"not|never|no longer|dream\w*|imagine\w*|remember\w*)\b",
    re.IGNORECASE,
)
_PRONOUNS = frozenset(
    [
        "it",
        "them",
        "him",
        "her",
        "his",
        "its",
        "their",
        "this",
        "that",
        "these",
        "those",
        "something",
        "anything",
        "nothing",
        "everything",
        "someone",
        "anyone",
        "everyone",
        "one",
        "yourself",
        "myself",
        "here",
        "there",
    ]
)
# At most ``NP_CHARS`` characters: each match reads a bounded stretch of its sentence, so a
# sentence of many "you give ..." without a "to" costs linear time, not quadratic.
NP_CHARS = 80
_END = (
    r"(?=\s*(?:[,;:.!?\"“”()]|$|\s(?:and|then|from|off|with|before|after|as|while|but|at|on|"
    r"in|by|for|through|toward|towards|under|over|near|behind|beside|into|onto|to|again|too|"
    r"back|quickly|carefully|slowly|gently|now|instead|also|once more)\b))"
)
_YOU = r"(?:^|[\s\"“>])(?i:you|i)\s+"


def _np(name: str) -> str:
    """A noun phrase named ``name``: up to the next clause boundary (``_END``), at most
    ``NP_CHARS`` characters."""
    return rf"(?P<{name}>(?:the |a |an |your |my |some )?[^,;:.!?\"“”()]{{1,{NP_CHARS}}}?)"


_PATTERNS: list[tuple[EventKind, re.Pattern[str]]] = [
    (
        EventKind.TOOK,
        re.compile(
            _YOU
            + r"(?:pick up|picks up|grab|snatch|pocket|collect|lift)\s+"
            + _np("object")
            + _END,
            re.IGNORECASE,
        ),
    ),
    # "take" takes a road, a breath or a seat as readily as a key: only a whole clause
    # ("You take the key.", "You take the key from the hook") counts.
    (
        EventKind.TOOK,
        re.compile(
            _YOU
            + r"take\s+"
            + _np("object")
            + r"(?=\s*(?:[.!?;]|$|\s(?:from|off|out of|again|back|too|now)\b))",
            re.IGNORECASE,
        ),
    ),
    (
        EventKind.DROPPED,
        re.compile(
            _YOU
            + r"(?:drop|discard|put down|set down|throw away|toss away)\s+"
            + _np("object")
            + _END,
            re.IGNORECASE,
        ),
    ),
    (
        EventKind.GAVE,
        re.compile(
            _YOU + r"(?:give|hand|pass)\s+" + _np("object") + r"\s+to\s+" + _np("value") + _END,
            re.IGNORECASE,
        ),
    ),
    (
        EventKind.MOVED,
        re.compile(
            _YOU + r"(?:enter|walk into|step into|go into|head into|arrive (?:at|in)|"
            r"reach|return to|go to|walk to|head to|travel to|ride to|climb (?:up )?to)\s+"
            + _np("object")
            + _END,
            re.IGNORECASE,
        ),
    ),
]
# Someone named (a capitalised name, not the sentence's "You"/"I") and what befalls them.
_NAME = r"(?P<subject>(?:[A-Z][\w'’-]*)(?: [A-Z][\w'’-]*){0,3})"
_THIRD: list[tuple[EventKind, str | None, re.Pattern[str]]] = [
    (
        EventKind.STATUS,
        "dead",
        re.compile(_NAME + r"\s+(?:dies|died|is dead|falls dead|is killed)\b"),
    ),
    (
        EventKind.ARRIVED,
        None,
        re.compile(_NAME + r"\s+(?:arrives|enters|walks in|comes in|steps in)\b"),
    ),
    (EventKind.LEFT, None, re.compile(_NAME + r"\s+(?:leaves|departs|walks away|walks out)\b")),
]
_KILL = re.compile(_YOU + r"(?i:kill|slay)\s+" + _NAME + r"\b")
_TIME = re.compile(
    r"\b(?P<value>(?:the )?next (?:morning|day|evening|night)|the following (?:morning|day|"
    r"evening|night)|at (?:dawn|dusk|midnight|noon|nightfall|sunrise|sunset)|"
    r"(?:hours|days|weeks) later)\b",
    re.IGNORECASE,
)
# What a verb of taking or going also takes, that is no item or place.
_NOT_THINGS = frozenset(
    [
        "road",
        "path",
        "way",
        "stairs",
        "steps",
        "step",
        "breath",
        "breaths",
        "seat",
        "turn",
        "chance",
        "look",
        "glance",
        "moment",
        "lead",
        "time",
        "note",
        "aim",
        "care",
        "rest",
        "cover",
        "shelter",
        "hand",
        "hands",
        "left",
        "right",
        "lead",
        "notice",
    ]
)
_NOT_NAMES = frozenset({"you", "i", "the", "a", "an", "then", "suddenly", "when", "as"})


def _name(text: str | None) -> str | None:
    """A cleaned name, or None when it is no name (a pronoun, a description, nothing)."""
    if text is None:
        return None
    words = text.strip().split()
    if not words or len(words) > NAME_WORDS or words[-1].lower() in _NOT_THINGS:
        return None
    bare = [w for w in words if w.lower() not in ("the", "a", "an", "your", "my", "some")]
    if not bare or all(w.lower() in _PRONOUNS for w in bare):
        return None
    return " ".join(words)


def _person(text: str) -> str | None:
    """A capitalised run of words as a person's name, without a sentence's opening word
    ("Then Tobin" is Tobin; "You" is nobody)."""
    words = text.split()
    while words and words[0].lower() in _NOT_NAMES:
        words.pop(0)
    return " ".join(words) or None


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text) if s.strip()]


def _from_sentence(sentence: str) -> list[Derived]:
    if _HEDGE.search(sentence) or sentence.endswith("?"):
        return []
    evidence = sentence[:EVIDENCE_MAX]
    found: list[Derived] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(sentence):
            thing = _name(match.group("object"))
            value = _name(match.groupdict().get("value"))
            if thing is None or (kind is EventKind.GAVE and value is None):
                continue
            found.append(Derived(kind, None, thing, value, evidence))
    for kind, value, pattern in _THIRD:
        for match in pattern.finditer(sentence):
            who = _person(match.group("subject"))
            if who is not None:
                found.append(Derived(kind, who, None, value, evidence))
    for match in _KILL.finditer(sentence):
        who = _person(match.group("subject"))
        if who is not None:
            found.append(Derived(EventKind.STATUS, who, None, "dead", evidence))
    for match in _TIME.finditer(sentence):
        found.append(Derived(EventKind.TIME, None, None, match.group("value").lower(), evidence))
    return found


def derive(type_: str, text: str) -> list[Derived]:
    """The events an action of ``type_`` states in ``text``, in the order it says them."""
    if type_ == "say":
        return []
    readable = render(type_, text).removeprefix("> ") if type_ != NARRATION else text
    out: list[Derived] = []
    for sentence in _sentences(readable):
        out.extend(_from_sentence(sentence))
    return out
