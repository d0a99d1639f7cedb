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
- The player's own ``do`` action reads as its rendering ("> You pick up the key."), so a
  typed "pick up the key" and a narrated "You pick up the key." say the same.
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
_KEEPS = re.compile(r",?\s+and (?:does not|doesn't|never) (?:give|hand) (?:it|them) back\b", re.I)
_PRONOUNS = frozenset(
    "it them him her his its their this that these those something anything nothing "  # noqa: SIM905
    "everything someone anyone everyone one yourself myself here there".split()
)
_PREPOSITIONS = frozenset(
    "for into in out to at on from with toward towards through over under across around "  # noqa: SIM905
    "after about behind down up back inside onto upon off along past beneath beyond near "
    "away".split()
)
# At most ``NP_CHARS`` characters: each match reads a bounded stretch of its sentence, so a
# sentence of many "you give ..." without a "to" costs linear time, not quadratic.
NP_CHARS = 80
_END = (
    r"(?=\s*(?:[,;:.!?\"“”()]|$|\s(?:and|then|from|off|with|before|after|as|while|but|at|on|"
    r"in|by|for|through|toward|towards|under|over|near|behind|beside|into|onto|to|again|too|"
    r"back|quickly|carefully|slowly|gently|now|instead|also|once more|out of|just|when)\b))"
)
_YOU = r"(?:^|[\s\"“>])(?i:you|i)\s+"
_MINE = r"(?:your|my)"
# A capitalised word of a cased script, or a word of a script without case.
_UPPER = "A-ZÀ-ÖØ-ÞΆΈ-ΏΑ-ΩЀ-Я"
_CASELESS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_CAP = rf"(?:[{_UPPER}{_CASELESS}][\w'’-]*)"
_CONTAINERS = (
    r"(?:belt|pack|pocket|pockets|coat|bag|satchel|cloak|boot|sleeve|shirt|purse|pouch|"
    r"jacket|rucksack|knapsack|sack|tunic|apron)"
)


def _np(name: str) -> str:
    """A noun phrase named ``name``: up to the next clause boundary (``_END``), at most
    ``NP_CHARS`` characters."""
    return rf"(?P<{name}>(?:the |a |an |your |my |some )?[^,;:.!?\"“”()]{{1,{NP_CHARS}}}?)"


def _named(name: str) -> str:
    """Someone named: up to four capitalised (or caseless-script) words."""
    return rf"(?<![\w'’])(?P<{name}>{_CAP}(?: {_CAP}){{0,3}})"


def _you(verbs: str, rest: str) -> re.Pattern[str]:
    return re.compile(_YOU + rf"(?:{verbs})\s+" + rest, re.IGNORECASE)


_TAKE_VERBS = (
    r"pick up|picks up|grab|snatch|pocket|collect|lift|scoop up|snatch up|gather up|"
    r"help yourself to|help myself to"
)
_MOVE_VERBS = (
    r"enter|walk into|step into|go into|head into|arrive (?:at|in)|reach|return to|go to|"
    r"walk to|head (?:over |back |down |up |out )?to|head for|make for|travel to|ride to|"
    r"climb (?:up )?to|make (?:your|my) way (?:to|into|down to|up to|back to|over to)|"
    r"find (?:yourself|myself) (?:in|at|inside)"
)
# Each pattern's groups: ``object`` (the item or place), ``value`` (gave: the recipient),
# ``subject`` (someone named; none: the player), ``giver`` (who hands the player a thing).
_PATTERNS: list[tuple[EventKind, re.Pattern[str]]] = [
    (EventKind.TOOK, _you(_TAKE_VERBS, _np("object") + _END)),
    # "take" takes a road, a breath or a seat as readily as a key: only a whole clause
    # ("You take the key.", "You take the key from the hook") counts.
    (
        EventKind.TOOK,
        _you(
            "take",
            _np("object") + r"(?=\s*(?:[.!?;]|$|\s(?:from|off|out of|again|back|too|now)\b))",
        ),
    ),
    (
        EventKind.TOOK,
        _you(
            r"tuck|slip|stuff|put|stow|place",
            _np("object") + rf"\s+(?:into|in|inside|under|behind)\s+{_MINE}\s+{_CONTAINERS}\b",
        ),
    ),
    (
        EventKind.TOOK,
        re.compile(
            rf"(?:^|[\s\"“>]){_MINE}\s+(?:fingers|hand|hands)\s+(?:close|closes|tighten|"
            r"tightens)\s+(?:around|on|over|about)\s+" + _np("object") + _END,
            re.IGNORECASE,
        ),
    ),
    (
        EventKind.TOOK,
        re.compile(
            r"^" + _np("object") + r"\s+(?:is|are)\s+(?:now yours|yours now)\b", re.IGNORECASE
        ),
    ),
    (
        EventKind.TOOK,
        re.compile(
            _named("giver")
            + r"\s+(?:hands|gives|passes|tosses|throws|lends)\s+you\s+"
            + _np("object")
            + _END
        ),
    ),
    (
        EventKind.TOOK,
        re.compile(_named("giver") + r"\s+presses\s+" + _np("object") + r"\s+into your hands?\b"),
    ),
    (
        EventKind.TOOK,
        re.compile(
            _named("subject")
            + r"\s+(?:takes|snatches|grabs|picks up|pockets|accepts|borrows)\s+"
            + _np("object")
            + _END
        ),
    ),
    (
        EventKind.DROPPED,
        _you(
            r"drop|discard|put down|set down|throw away|toss away|throw down|toss aside",
            _np("object") + _END,
        ),
    ),
    (
        EventKind.DROPPED,
        _you(r"set|put|lay|throw|toss|cast|fling", _np("object") + r"\s+(?:down|aside|away)\b"),
    ),
    (EventKind.DROPPED, _you("leave", _np("object") + r"\s+behind\b")),
    (EventKind.DROPPED, _you("let", _np("object") + r"\s+(?:fall|drop|slip)\b")),
    (EventKind.DROPPED, _you("lay", _np("object") + r"\s+(?:on|in|at|beside|by|upon)\b")),
    (EventKind.DROPPED, _you("hang", _np("object") + r"\s+back\b")),
    (
        EventKind.DROPPED,
        re.compile(
            r"^" + _np("object") + r"\s+(?:slips|falls|tumbles|drops)\s+(?:from|out of)\s+"
            rf"{_MINE}\s+(?:hand|hands|fingers|grip|grasp|{_CONTAINERS[3:-1]})\b",
            re.IGNORECASE,
        ),
    ),
    (
        EventKind.GAVE,
        _you(r"give|hand|pass", _np("object") + r"\s+to\s+" + _np("value") + _END),
    ),
    (
        EventKind.GAVE,
        re.compile(
            _YOU
            + r"(?i:give|hand|pass|toss|throw)\s+"
            + _named("value")
            + r"\s+(?P<object>(?i:the|a|an|your|my|some)\s[^,;:.!?\"“”()]{1,80}?)"
            + _END
        ),
    ),
    (
        EventKind.GAVE,
        re.compile(
            _YOU
            + r"(?i:let)\s+"
            + _named("value")
            + r"\s+(?i:keep|have|carry|hold)\s+"
            + _np("object")
            + _END
        ),
    ),
    (
        EventKind.GAVE,
        re.compile(
            _YOU
            + r"(?i:press)\s+"
            + _np("object")
            + r"\s+into\s+"
            + _named("value")
            + r"['’]s\s+hands?\b"
        ),
    ),
    (EventKind.MOVED, _you(_MOVE_VERBS, _np("object") + _END)),
    (
        EventKind.MOVED,
        _you(
            "follow",
            _np("way") + r"\s+(?:down |up |back |over |out )?to\s+" + _np("object") + _END,
        ),
    ),
    (
        EventKind.MOVED,
        re.compile(
            r"\b(?:brings|bring|leads|lead) you (?:out |back |down |up )?(?:to|at|into)\s+"
            + _np("object")
            + _END,
            re.IGNORECASE,
        ),
    ),
    (  # "The mill is crowded when you get there."
        EventKind.MOVED,
        re.compile(
            r"^" + _np("object") + r"\s+is\s+(?:\w+\s+){0,2}?(?:crowded|quiet|empty|dark|busy|"
            r"warm|cold|silent|deserted|full|packed)\s+when you (?:get|arrive) there\b",
            re.IGNORECASE,
        ),
    ),
]
# Someone named and what befalls them.
_NAME = _named("subject")
_THIRD: list[tuple[EventKind, str | None, re.Pattern[str]]] = [
    (
        EventKind.STATUS,
        "dead",
        re.compile(
            _NAME + r"\s+(?:dies|died|is dead|falls dead|is killed|is slain|has died|lies dead|"
            r"breathes (?:his|her|their) last)\b"
        ),
    ),
    (
        EventKind.ARRIVED,
        None,
        re.compile(
            _NAME + r"\s+(?:arrives|enters|walks in|comes in|steps in|joins you|turns up|"
            r"comes back|appears (?:at|beside|behind|in)|follows (?:you|close behind|behind you)|"
            r"comes with you|walks (?:beside|with) you|keeps pace|steps out of the shadows|"
            r"is waiting for you|hurries over|sits down beside you)\b"
        ),
    ),
    (
        EventKind.ARRIVED,
        None,
        re.compile(
            _YOU + r"(?i:turn to find|turn and find)\s+" + _NAME + r"\s+(?:standing|waiting)"
        ),
    ),
    (
        EventKind.LEFT,
        None,
        re.compile(
            _NAME + r"\s+(?:leaves|departs|walks away|walks out|heads off|slips away|goes away|"
            r"goes off|takes (?:his|her|their) leave|says goodbye and is gone)\b"
        ),
    ),
    (
        EventKind.LEFT,
        None,
        re.compile(_YOU + r"(?i:watch)\s+" + _NAME + r"\s+(?:go|leave|walk away)\b"),
    ),
]
_KILLS = [
    re.compile(_YOU + r"(?i:kill|slay|strike down|cut down)\s+" + _NAME),
    re.compile(_YOU + r"(?i:strike|cut)\s+" + _NAME + r"\s+down\b"),
]
_TIME = re.compile(
    r"\b(?P<value>(?:the )?next (?:morning|day|evening|night)|the following (?:morning|day|"
    r"evening|night)|at (?:dawn|dusk|midnight|noon|nightfall|sunrise|sunset)|"
    r"(?:(?:two|three|four|five|six|several|many|a few) )?(?:hours|days|weeks) later|"
    r"(?:two|three|four|five|six|several|many|a few) (?:days|weeks) pass|"
    r"by (?:dawn|dusk|midnight|noon|nightfall|morning|evening)|"
    r"(?:night|dusk|darkness|evening) falls|dawn breaks|"
    r"(?:(?:when|as) )?(?:morning|evening|night|dawn) comes|(?:an|one) hour later|"
    r"late (?:that|in the) (?:night|evening|afternoon)|the sun (?:sets|rises))\b",
    re.IGNORECASE,
)
# A time said in words the clock does not know, said in words it does.
_TIME_VALUES = {"the sun sets": "sunset", "the sun rises": "sunrise", "darkness falls": "nightfall"}
# What a verb of taking, giving or going also takes, that is no item or place.
_NOT_THINGS = frozenset({
    "road", "path", "way", "stairs", "steps", "step", "breath", "breaths", "seat", "turn",
    "chance", "look", "glance", "moment", "lead", "time", "note", "aim", "care", "rest", "cover",
    "shelter", "hand", "hands", "left", "right", "notice", "leave", "smile", "nod", "grin",
    "wink", "shrug", "hug", "kiss", "warning", "answer", "pause", "creeps", "idea", "advice",
    "news", "word", "reason", "tears", "knees", "senses", "attention", "conclusion", "choice",
    "decision", "arm", "arms", "shoulder", "shoulders", "wrist", "elbow", "head", "face", "down",
    "awake", "doubt", "task",
})  # fmt: skip
_NOT_NAMES = frozenset(
    {"you", "i", "the", "a", "an", "then", "suddenly", "when", "as", "with", "at", "by", "soon"}
)
_AND = re.compile(r"\s(?:and then|and|then)\s+(?=[a-z])")
_SUBJECT = re.compile(_YOU)


def _name(text: str | None) -> str | None:
    """A cleaned name, or None when it is no name (a pronoun, a description, a phrase led
    by a preposition: "for the staff" in "You reach for the staff", nothing)."""
    if text is None:
        return None
    words = text.strip().split()
    if not words or len(words) > NAME_WORDS or words[-1].lower() in _NOT_THINGS:
        return None
    if words[0].lower() in _PREPOSITIONS:
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


def _masked(text: str) -> str:
    """``text`` with each quotation blanked out, character for character (so a sentence
    of it lies where the same sentence of ``text`` does)."""
    return _QUOTED.sub(lambda m: " " * len(m.group()), text)


def _sentences(text: str) -> list[tuple[str, str]]:
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
    for kind, pattern in _PATTERNS:
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


def _from_sentence(read: str, written: str) -> list[Derived]:
    read = _KEEPS.sub("", read)
    if _HEDGE.search(read) or read.endswith("?"):
        return []
    evidence = written[:EVIDENCE_MAX]
    found = _by_pattern(_coordinated(read), evidence)
    for kind, value, pattern in _THIRD:
        for match in pattern.finditer(read):
            who = _person(match.group("subject"))
            if who is not None:
                found.append(Derived(kind, who, None, value, evidence))
    for kill in _KILLS:
        for match in kill.finditer(read):
            who = _person(match.group("subject"))
            if who is not None:
                found.append(Derived(EventKind.STATUS, who, None, "dead", evidence))
    for match in _TIME.finditer(read):
        said = match.group("value").lower()
        if said.endswith(" pass"):  # "three days pass": what the clock reads as "days later"
            said = said.removesuffix(" pass") + " later"
        said = _TIME_VALUES.get(said, said)
        found.append(Derived(EventKind.TIME, None, None, said, evidence))
    return found


def derive(type_: str, text: str) -> list[Derived]:
    """The events an action of ``type_`` states in ``text``, in the order it says them."""
    if type_ == "say":
        return []
    readable = render(type_, text).removeprefix("> ") if type_ != NARRATION else text
    out: list[Derived] = []
    for read, written in _sentences(readable):
        out.extend(_from_sentence(read, written))
    return out
