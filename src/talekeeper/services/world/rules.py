"""Events from explicit patterns in an action's text: the *rules* way of deriving the world
(docs/world.md), for the embedded narrator or when no extraction model is set.

Invariants:

- Pure: text in, events out; the same text always gives the same events, in time linear
  in the text (every pattern, and the search for quoted speech, reads a bounded stretch
  from where it starts).
- Precision over recall: a sentence gives an event only when it says the change in so
  many words ("You pick up the brass key.", "You walk into the Salt Market.", "Maren
  dies.", "Tobin takes the rope.", "The next morning, ..."). A sentence that hedges,
  denies, plans or tells of habit ("try to", "cannot", "almost", "if", "will",
  "tomorrow", "every day", a question) gives nothing, and so does a name that is a
  pronoun, starts with a preposition, or is longer than ``NAME_WORDS`` words.
- Speech is someone's words, not the story's: a ``say`` action gives nothing, and in any
  other text what stands in quotation marks is not read (the rest of its sentence is).
- A verb joined by "and" or "then" to a sentence's "you" has that "you" for its subject
  ("You cross the square and go into the mill.").
- People are named by a capitalised word (in any cased script: Latin, Greek, Cyrillic) or
  a word of a script without case (Japanese, Chinese, Korean); the sentence's own opening
  word ("Then", "With") is no name.
- Each event keeps the sentence it came from, as written, as its evidence.
- A thing or place named with whose it is ("your rope", "his knife") is named with "the"
  ("the rope"): an item is the same item in whoever's hands.
- The player's own ``do`` action reads as its rendering ("> You pick up the key."), so a
  typed "pick up the key" and a narrated "You pick up the key." say the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from talekeeper.services.common.rendering import NARRATION, render
from talekeeper.services.world.grammar import NOT_THINGS, YOU, np
from talekeeper.services.world.patterns import PATTERNS
from talekeeper.services.world.people import KILLS, THIRD
from talekeeper.services.world.telling import TELLING
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
QUOTE_CHARS = 600  # a quotation longer than this is left unmasked (and read)
_QUOTED = re.compile(
    rf"\"[^\"]{{0,{QUOTE_CHARS}}}\"|“[^”]{{0,{QUOTE_CHARS}}}”|‘[^’]{{0,{QUOTE_CHARS}}}’|"
    rf"«[^»]{{0,{QUOTE_CHARS}}}»|「[^」]{{0,{QUOTE_CHARS}}}」|"
    rf"(?<![\w'])'(?=\S)[^'\n]{{0,{QUOTE_CHARS}}}?(?<=\S)'(?!\w)"
)
_HEDGE = re.compile(
    r"\b(?:try|tries|tried|trying|attempt\w*|cannot|can't|can not|could not|couldn't|"
    r"fail(?:s|ed|ing)?\s+to|failure|"
    r"almost|nearly|want\w*|wish\w*|if|unless|would|might|may|maybe|perhaps|pretend\w*|"
    r"not|never|no longer|dream\w*|imagine\w*|remember\w*|will|shall|tomorrow|they say|"
    r"every|each|always|usually|often|sometimes)\b",
    re.IGNORECASE,
)
# Keeping what was taken, said with a "not" that denies nothing of the taking.
_KEEPS = re.compile(
    r",?\s+and (?:does not|doesn't|never) (?:(?:give|hand) (?:it|them) back|(?:move|rise|stir|"
    r"breathe|get up) again)\b",
    re.I,
)
_PRONOUNS = frozenset(
    "it them him her his its their this that these those something anything nothing "  # noqa: SIM905
    "everything someone anyone everyone one yourself myself here there".split()
)
# A thing is named without whose it is: the player's "my rope" (read as "your rope"), the
# narrator's "your rope" and "the rope" are one item, and so is the rope Tobin hands over
# as "his rope".
_OWNERS = frozenset({"my", "your", "his", "her", "its", "our", "their"})
_PREPOSITIONS = frozenset(
    "for into in out to at on from with toward towards through over under across around "  # noqa: SIM905
    "after about behind down up back inside onto upon off along past beneath beyond near "
    "away".split()
)
_TIME = re.compile(
    r"\b(?P<value>(?:the )?next (?:morning|day|evening|night)|the following (?:morning|day|"
    r"evening|night)|at (?:dawn|dusk|midnight|noon|nightfall|sunrise|sunset)|"
    r"(?:(?:two|three|four|five|six|several|many|a few) )?(?:hours|days|weeks) later|"
    r"(?:two|three|four|five|six|several|many|a few) (?:days|weeks) pass|"
    r"by (?:dawn|dusk|midnight|noon|nightfall|morning|evening)|"
    r"(?:night|dusk|darkness|evening) falls|dawn breaks|"
    r"(?:(?:when|as) )?(?:morning|evening|night|dawn) comes|(?:an|one) hour later|"
    r"late (?:that|in the) (?:night|evening|afternoon)|the sun (?:sets|rises)|"
    r"(?:a|an|one|two|three|four|five|six|several|many|a few) (?:hour|day|week)s? "
    r"(?:go(?:es)? by|pass(?:es)?|later)|a while later|some time (?:later|passes)|after a while|"
    r"towards? (?:evening|dusk|nightfall|midday|noon|morning|dawn|midnight)|"
    r"(?:midday|noon|morning|evening|dawn|dusk|night|nightfall) finds you|"
    r"the (?:morning|afternoon|evening|night) (?:drags|wears|passes|slips) (?:by|on|away)|"
    r"come (?:the )?(?:dawn|morning|evening|nightfall|night|dusk)|the moon (?:is high|rises))\b",
    re.IGNORECASE,
)
_PASSING = re.compile(r" (?:go(?:es)? by|pass(?:es)?)$")
# A time said in words the clock does not know, said in words it does.
_TIME_VALUES = {
    "the sun sets": "sunset",
    "the sun rises": "sunrise",
    "darkness falls": "nightfall",
    "the moon is high": "midnight",
    "the moon rises": "nightfall",
}
_NOT_NAMES = frozenset(
    {"you", "i", "the", "a", "an", "then", "suddenly", "when", "as", "with", "at", "by", "soon"}
)
# "get lamp": the oldest verb of taking in interactive fiction, read in the player's ``do``
# alone (a narrator's "you get" is as often "you get there" or "you get a look").
_GET = re.compile(r"(?i:you|i) get\s+" + np("object") + r"\s*[.!]?$")
_AND = re.compile(r"\s(?:and then|and|then)\s+(?=[a-z])")
_SUBJECT = re.compile(YOU)


def _name(text: str | None) -> str | None:
    """A cleaned name, or None when it is no name (a pronoun, a description, a phrase led
    by a preposition: "for the staff" in "You reach for the staff", nothing)."""
    if text is None:
        return None
    words = text.strip().split()
    if not words or len(words) > NAME_WORDS or words[-1].lower() in NOT_THINGS:
        return None
    if words[0].lower() in _PREPOSITIONS:
        return None
    lowered = [w.lower() for w in words]
    if any(
        a in NOT_THINGS and b in _PREPOSITIONS for a, b in zip(lowered, lowered[1:], strict=False)
    ):
        return None  # "the road to Varn", "a look at the map": no item, whatever follows
    bare = [w for w in words if w.lower() not in ("the", "a", "an", "your", "my", "some")]
    if not bare or all(w.lower() in _PRONOUNS for w in bare):
        return None
    if len(words) > 1 and words[0].lower() in _OWNERS:
        words[0] = "the"  # "your rope", "my rope", "his rope": the rope, whoever holds it
    return " ".join(words)


def _person(text: str) -> str | None:
    """A capitalised run of words as a person's name, without a sentence's opening word
    ("Then Tobin" is Tobin; "You" is nobody)."""
    words = text.split()
    while words and words[0].lower() in _NOT_NAMES:
        words.pop(0)
    return " ".join(words) or None


def _masked(text: str) -> str:
    """``text`` with each quotation blanked out, character for character (so a sentence
    of it lies where the same sentence of ``text`` does)."""
    return _QUOTED.sub(lambda m: " " * len(m.group()), text)


def sentences(text: str) -> list[tuple[str, str]]:
    """Each sentence as read (quotations blanked) and as written (its evidence)."""
    out = []
    for match in _SENTENCE.finditer(_masked(text)):
        read = match.group().strip()
        if read:
            out.append((read, text[match.start() : match.end()].strip()))
    return out


def _coordinated(sentence: str) -> str:
    """The verbs joined to the sentence's "you" by "and"/"then" given that "you": "You cross
    the square and go into the mill" reads "... and you go into the mill"."""
    first = _SUBJECT.search(sentence)
    if first is None:
        return sentence
    tail = _AND.sub(lambda m: m.group() + "you ", sentence[first.end() :])
    return sentence[: first.end()] + tail


def _by_pattern(sentence: str, evidence: str) -> list[Derived]:
    found: list[Derived] = []
    for kind, pattern in PATTERNS:
        for match in pattern.finditer(sentence):
            groups = match.groupdict()
            who = _person(groups["subject"]) if groups.get("subject") else None
            thing, value = _name(groups.get("object")), _name(groups.get("value"))
            if thing is None or (kind is EventKind.GAVE and value is None):
                continue
            if groups.get("subject") and who is None:
                continue
            found.append(Derived(kind, who, thing, value, evidence))
    return found


def hedged(read: str) -> bool:
    """Whether a sentence (as read) hedges, denies, plans or asks: it states no change."""
    return bool(_HEDGE.search(_KEEPS.sub("", read))) or read.endswith("?")


def readable(type_: str, text: str) -> str | None:
    """An action's text as the rules read it (a ``do`` as its rendering); None for a ``say``:
    speech states no change of the world."""
    if type_ == "say":
        return None
    return render(type_, text).removeprefix("> ") if type_ != NARRATION else text


def _from_sentence(read: str, written: str) -> list[Derived]:
    read = _KEEPS.sub("", read)
    if hedged(read):
        return []
    evidence = written[:EVIDENCE_MAX]
    found = _by_pattern(_coordinated(read), evidence)
    for kind, value, pattern in THIRD:
        for match in pattern.finditer(read):
            who = _person(match.group("subject"))
            if who is not None:
                found.append(Derived(kind, who, None, value, evidence))
    for telling in TELLING:
        for match in telling.finditer(read):
            who, told = _person(match.group("subject")), match.group("value").strip()
            if who is not None and told:
                found.append(Derived(EventKind.LEARNED, who, None, told, evidence))
    for kill in KILLS:
        for match in kill.finditer(read):
            who = _person(match.group("subject"))
            if who is not None:
                found.append(Derived(EventKind.STATUS, who, None, "dead", evidence))
    for match in _TIME.finditer(read):
        found.append(Derived(EventKind.TIME, None, None, _time_value(match["value"]), evidence))
    return list(dict.fromkeys(found))  # two patterns may read one change


def _time_value(said: str) -> str:
    """A time as the clock reads it: "three days pass" and "a week goes by" are "three days
    later" and "a week later"; a few ways of saying a part of the day are that part."""
    said = " ".join(said.lower().split())
    said = _PASSING.sub(" later", said)
    if said in ("some time later", "after a while"):
        said = "a while later"
    return _TIME_VALUES.get(said, said)


def derive(type_: str, text: str) -> list[Derived]:
    """The events an action of ``type_`` states in ``text``, in the order it says them."""
    said = readable(type_, text)
    if said is None:
        return []
    out: list[Derived] = []
    if type_ == "do" and (got := _GET.match(said)) and (thing := _name(got["object"])):
        out.append(Derived(EventKind.TOOK, None, thing, None, said[:EVIDENCE_MAX]))
    for read, written in sentences(said):
        out.extend(_from_sentence(read, written))
    return out
