"""The placeholder narrator's voice: light repairs to a reply from the tiny embedded model
so that it narrates to the player ("you") and never speaks or acts as the player.

SmolLM2-135M, asked to narrate in the second person, mostly writes as the player instead
("I look at her... 'You're right,' I say") and sometimes goes on to write the player's
next move. ``VoiceFilter`` reads the reply as it streams, a unit at a time (a sentence, or
a quotation with what is around it until its quotes close), and:

- ``PLAYER_TURN``: a line that starts a new player turn (``> ...``, ``You:``, ``Player:``,
  ``User:``) ends the reply there; one at the very start (an echo of the player's own
  action) is only dropped.
- ``PLAYER_SPEECH``: a unit with a quotation that the narration outside the quotes gives
  to the player ("I say", "you reply", ...) is dropped: the player speaks for themself.
  So is a unit that hands the next quotation to the player ("... as you say:"), and that
  quotation; and a quotation standing alone that the next unit gives to the player
  ('"What is it?" You ask, ...'), with that unit: a quotation alone is held back until
  the unit after it says whose it is. A quotation left open at a line break ends there.
- ``FIRST_PERSON``: narration outside quotation marks in the first person singular is put
  in the second ("I look" -> "you look", "my" -> "your", "I was" -> "you were"); words
  inside quotation marks are a character's and are never touched. A unit that says both
  "I" and "you" outside quotation marks ("I look at you") is someone talking to the player
  without them, not the player narrating: it is dropped, since in the second person it
  would read "you look at you".
- ``UNFINISHED``: a reply cut off by its length limit loses its unfinished last unit,
  unless it is all there is.

Invariants: the text given out is exactly what ``feed`` and ``finish`` returned, in order
(what is streamed is what is stored); a reply with none of these faults comes out
unchanged; ``edits`` names each kind of repair made, once, in the order first made.
Only the embedded narrator's narration goes through it (``CompletionRequest.narration``):
a real model's reply is never rewritten. A reply is repaired in time linear in its length,
whole or streamed piece by piece (a model can loop on one mark): the patterns have no
nested quantifiers over the same characters, ends are looked for from where the last piece
stopped, and neither the quotation state nor a sentence's start is read again from the
unit's start for each end, piece or word.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from enum import StrEnum
from itertools import chain


class Edit(StrEnum):
    PLAYER_TURN = "player_turn"
    PLAYER_SPEECH = "player_speech"
    FIRST_PERSON = "first_person"
    UNFINISHED = "unfinished"
    REPEATED = "repeated"  # not a repair of the text: a take written again (``repeats``)


EDIT_MEANINGS = {
    Edit.PLAYER_TURN: "cut where the narrator began writing the player's next move",
    Edit.PLAYER_SPEECH: "dropped words the narrator put in the player's mouth",
    Edit.FIRST_PERSON: "put narration written as the player ('I') in the second person",
    Edit.UNFINISHED: "dropped an unfinished last sentence",
    Edit.REPEATED: "wrote the reply again: its opening repeated one of the recent replies",
}

# A unit ends after a sentence's last mark (and any closing quote or bracket) followed by
# white space, or at a line break. A match starts only where a run of marks starts: a try
# from inside the run would reach the same place and fail the same way, and letting it try
# made a run of dots cost its length squared.
_END = re.compile(r"""(?<![.!?…])[.!?…]++["”’)\]]*+\s+|\n+""")
_TURN = re.compile(r"^\s*(>|(you|user|player|me)\s*:)", re.IGNORECASE)
_SPEAKING = (
    r"(i|you)\s+(?:\w+ly\s+)?(say|said|reply|replied|ask|asked|answer|answered|whisper|"
    r"whispered|shout|shouted|call|called|mutter|muttered|tell|told|exclaim|exclaimed|add|"
    r"added|yell|yelled|murmur|murmured|respond|responded|begin|began|continue|continued)\b"
)
_SAYS = re.compile(r"\b" + _SPEAKING, re.IGNORECASE)
# A unit that opens by giving the quotation just before it to the player: '"..." You ask,'.
_ANSWERS = re.compile(r"^\s*" + _SPEAKING, re.IGNORECASE)
_YOU = re.compile(r"\b(you|your|yours|yourself)\b", re.IGNORECASE)
_FIRST = re.compile(
    r"\b(I\s+am|I\s+was|I'm|I’m|I've|I’ve|I'll|I’ll|I'd|I’d|I|me|my|mine|myself)\b",
    re.IGNORECASE,
)
_SECOND = {
    "i am": "you are",
    "i was": "you were",
    "i'm": "you're",
    "i’m": "you’re",
    "i've": "you've",
    "i’ve": "you’ve",
    "i'll": "you'll",
    "i’ll": "you’ll",
    "i'd": "you'd",
    "i’d": "you’d",
    "i": "you",
    "me": "you",
    "my": "your",
    "mine": "yours",
    "myself": "yourself",
}


def _opening(text: str, at: int) -> bool:
    """Whether the quotation mark at ``at`` reads as one that opens: a curly one by its
    shape, a straight one by what is before it (nothing, a space or an opening bracket)."""
    char = text[at]
    if char in "“”":
        return char == "“"
    return at == 0 or text[at - 1].isspace() or text[at - 1] in '([{—–-“"'


def _split_quotes(text: str, inside: bool) -> tuple[list[tuple[str, bool]], bool]:
    """``text`` as runs of (text, inside quotation marks), starting ``inside`` or not, and
    whether it ends inside. A mark is read by its look, not by counting: a closing-looking
    mark outside a quotation is a stray and is ignored (one slip must not turn the rest
    inside out), and an opening-looking one inside a quotation starts a new one."""
    runs: list[tuple[str, bool]] = []
    start = 0
    for at, char in enumerate(text):
        if char not in '"“”':
            continue
        opening = _opening(text, at)
        if opening:
            runs.append((text[start:at], inside))
            start, inside = at, True
        elif inside:
            runs.append((text[start : at + 1], True))
            start, inside = at + 1, False
    runs.append((text[start:], inside))
    return [r for r in runs if r[0]], inside


_BEFORE_A_WORD = " \t\n\"“'‘(—-"  # what may stand between a sentence's start and its first word
_CLOSING = '"”’)]'  # what may follow a sentence's last mark


def _starts_sentence(back: Iterator[str]) -> bool:
    """Whether a word begins a sentence, given the text before it read backwards: only
    blanks, opening quotes, brackets and dashes come before it, or those after a sentence's
    last mark and its closing quotes or brackets. Read backwards, and only as far as it
    takes: the text before each word read forwards was quadratic in the words."""
    char = next((c for c in back if c not in _BEFORE_A_WORD), None)
    if char is None:
        return True
    while char in _CLOSING:
        char = next(back, None)
        if char is None:
            return False
    return char in ".!?…"


def _second_person(text: str, before: list[str]) -> str:
    """``text`` (narration, outside quotation marks) in the second person; ``before``: the
    unit's text before it, in pieces, which says whether a word begins a sentence."""

    def swap(match: re.Match[str]) -> str:
        word = match.group(0)
        new = _SECOND[re.sub(r"\s+", " ", word.lower())]
        back = chain(
            (text[at] for at in range(match.start() - 1, -1, -1)),
            (char for piece in reversed(before) for char in reversed(piece)),
        )
        return new[0].upper() + new[1:] if _starts_sentence(back) else new

    return _FIRST.sub(swap, text)


def _introduces(outside: str) -> bool:
    """Whether narration hands the next quotation to the player: "... as you say:" / "I
    reply,": it ends with ":" or "," (and blanks), and a ``_SAYS`` comes after its last
    sentence or quotation mark. The same test as ``_SAYS`` + ``[^.!?"“”]*[:,]\\s*$``, which,
    searched, read on to the end of the text from every "you say" in it: quadratic."""
    text = outside.rstrip()
    if not text.endswith((":", ",")):
        return False
    last_mark = max(text.rfind(mark) for mark in '.!?"“”')
    return _SAYS.search(text, last_mark + 1, len(text) - 1) is not None


_QUOTE_MARK = re.compile('["“”]')
_BLANK = re.compile(r"\s")


def _inside_after(text: str, inside: bool, start: int, end: int) -> bool:
    """Whether ``text[:end]`` ends inside a quotation, given whether ``text[:start]`` does:
    the marks between read as ``_split_quotes`` reads them, each by what is before it."""
    for mark in _QUOTE_MARK.finditer(text, start, end):
        if _opening(text, mark.start()):
            inside = True
        elif inside:
            inside = False
    return inside


def _tail(text: str, start: int) -> int:
    """Where an end that the next piece may finish begins: the last run of a sentence's
    marks (and closing quotes or brackets) at the end of ``text``, from ``start`` on; else
    the end of ``text``. Read back only over that run, which the last piece holds."""
    at = len(text)
    while at > start and text[at - 1] in _CLOSING:
        at -= 1
    marks = at
    while marks > start and text[marks - 1] in ".!?…":
        marks -= 1
    return marks if marks < at else len(text)


class VoiceFilter:
    """Streamed text in, repaired text out (see the module docstring)."""

    def __init__(self) -> None:
        self.edits: list[Edit] = []
        self._buffer = ""
        # Where in the buffer the next piece looks for ends from, and whether that is inside
        # a quotation; and whether an end kept whole in a quotation runs to the buffer's end
        # from there (the next piece may lengthen it, and a line break would end the unit).
        self._looked, self._looked_inside, self._pending = 0, False, False
        self._inside = False  # inside a quotation at the end of what was given out
        self._out = False  # the reply has begun: a unit was given out or held back
        self._ended = False
        self._players_quote = False  # the unit before handed the next quotation to the player
        self._held = ""  # a quotation alone, kept back until the unit after says whose it is

    def _edit(self, kind: Edit) -> None:
        if kind not in self.edits:
            self.edits.append(kind)

    def feed(self, piece: str) -> str:
        """Take the next piece of the reply; give out the units it completed: quotations
        stay whole."""
        if self._ended:
            return ""
        buffer, self._buffer = self._buffer, ""
        buffer += piece  # in place where it can be: no one else holds the buffer now
        if not _BLANK.search(piece) or (self._pending and piece.isspace() and "\n" not in piece):
            # Every end finishes with white space: none ends in this piece, and one kept
            # whole only grows (still with no line break).
            self._buffer = buffer
            self._pending = self._pending and (not piece or piece.isspace())
            return ""
        # Ends are looked for from where the last piece stopped, the quotation state read
        # on from there, and units cut by offset: reading from the unit's start for every
        # end or piece, or copying the rest of the buffer for every unit, was quadratic.
        out: list[str] = []
        start = 0  # where the next unit begins
        read, inside = self._looked, self._looked_inside
        looked, looked_inside, pending = read, inside, False
        for match in _END.finditer(buffer, read):
            before = _inside_after(buffer, inside, read, match.start())
            inside = _inside_after(buffer, before, match.start(), match.end())
            read = match.end()
            if inside and "\n" not in match.group(0):
                # A quotation goes on past its sentence: keep it whole.
                if read < len(buffer):
                    looked, looked_inside = read, inside
                else:
                    looked, looked_inside, pending = match.start(), before, True
                continue
            out.append(self._take(buffer[start:read]))
            start, inside = read, self._inside
            looked, looked_inside = read, inside
            if self._ended:
                break
        if not pending and not self._ended:
            looked = _tail(buffer, read)
            looked_inside = _inside_after(buffer, inside, read, looked)
        self._buffer = buffer[start:]
        self._looked, self._looked_inside = looked - start, looked_inside
        self._pending = pending
        return "".join(out)

    def finish(self, cut_off: bool) -> str:
        """The rest of the reply; ``cut_off``: it stopped at its length limit."""
        rest, self._buffer = self._buffer, ""
        self._looked, self._looked_inside, self._pending = 0, False, False
        if self._ended or not rest.strip():
            held, self._held = self._held, ""
            return held
        if cut_off and self._out:
            self._edit(Edit.UNFINISHED)
            held, self._held = self._held, ""
            return held
        out = self._take(rest)
        held, self._held = self._held, ""
        return out + held

    def _take(self, unit: str) -> str:
        """The repaired unit, after any quotation held back before it; a quotation alone is
        held back itself."""
        held, self._held = self._held, ""
        if held and _ANSWERS.match(unit) and not self._inside:
            self._edit(Edit.PLAYER_SPEECH)  # the quotation held back was the player's
            self._repair(unit)  # keeps the quotation state right; its text goes too
            return ""
        text = self._repair(unit)
        if text.strip():
            self._out = True  # the reply has begun (given out, or held back to be)
        runs, _ = _split_quotes(unit.strip(), False)
        if text.strip() and len(runs) == 1 and runs[0][1]:
            self._held = text  # a quotation alone: whose it is comes next
            return held
        return held + text

    def _repair(self, unit: str) -> str:
        runs, inside_after = _split_quotes(unit, self._inside)
        outside = " ".join(text for text, quoted in runs if not quoted)
        if _TURN.match(unit) and not self._inside:
            if self._out:
                self._ended = True
            self._edit(Edit.PLAYER_TURN)
            return ""
        # A quotation left open at a line break is the model's slip, not one that goes on:
        # carried over, it would turn every later quotation mark inside out.
        self._inside = inside_after and not unit.rstrip(" \t").endswith("\n")
        quoted_here = any(quoted for _, quoted in runs)
        handed, self._players_quote = self._players_quote, False
        if (quoted_here and _SAYS.search(outside)) or (handed and unit.lstrip()[:1] in '"“'):
            self._edit(Edit.PLAYER_SPEECH)
            return ""
        if not quoted_here and _introduces(outside):
            self._players_quote = True
            self._edit(Edit.PLAYER_SPEECH)
            return ""
        if _FIRST.search(outside) and _YOU.search(outside):
            # "I look at you": someone speaking to the player without quotation marks, not
            # the player narrating; in the second person it would read "you look at you".
            self._edit(Edit.FIRST_PERSON)
            return ""
        repaired: list[str] = []
        for text, quoted in runs:
            if quoted:
                repaired.append(text)
                continue
            fixed = _second_person(text, repaired)
            if fixed != text:
                self._edit(Edit.FIRST_PERSON)
            repaired.append(fixed)
        return "".join(repaired)


def repair(text: str, cut_off: bool = False) -> tuple[str, list[Edit]]:
    """A whole reply through ``VoiceFilter``."""
    voice = VoiceFilter()
    out = voice.feed(text) + voice.finish(cut_off)
    return out, voice.edits
