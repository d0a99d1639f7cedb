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
a real model's reply is never rewritten.
"""

from __future__ import annotations

import re
from enum import StrEnum


class Edit(StrEnum):
    PLAYER_TURN = "player_turn"
    PLAYER_SPEECH = "player_speech"
    FIRST_PERSON = "first_person"
    UNFINISHED = "unfinished"


EDIT_MEANINGS = {
    Edit.PLAYER_TURN: "cut where the narrator began writing the player's next move",
    Edit.PLAYER_SPEECH: "dropped words the narrator put in the player's mouth",
    Edit.FIRST_PERSON: "put narration written as the player ('I') in the second person",
    Edit.UNFINISHED: "dropped an unfinished last sentence",
}

# A unit ends after a sentence's last mark (and any closing quote or bracket) followed by
# white space, or at a line break.
_END = re.compile(r"""[.!?…]+["”’)\]]*\s+|\n+""")
_TURN = re.compile(r"^\s*(>|(you|user|player|me)\s*:)", re.IGNORECASE)
_SPEAKING = (
    r"(i|you)\s+(?:\w+ly\s+)?(say|said|reply|replied|ask|asked|answer|answered|whisper|"
    r"whispered|shout|shouted|call|called|mutter|muttered|tell|told|exclaim|exclaimed|add|"
    r"added|yell|yelled|murmur|murmured|respond|responded|begin|began|continue|continued)\b"
)
_SAYS = re.compile(r"\b" + _SPEAKING, re.IGNORECASE)
# A unit that opens by giving the quotation just before it to the player: '"..." You ask,'.
_ANSWERS = re.compile(r"^\s*" + _SPEAKING, re.IGNORECASE)
# Narration that hands the next quotation to the player: "... as you say:" / "I reply,".
_INTRODUCES = re.compile(_SAYS.pattern + r"[^.!?\"“”]*[:,]\s*$", re.IGNORECASE)
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


_SENTENCE_DONE = re.compile(r"[.!?…][\"”’)\]]*$")


def _second_person(text: str, before: str) -> str:
    """``text`` (narration, outside quotation marks) in the second person; ``before``: the
    unit's text before it, which says whether a word begins a sentence."""

    def swap(match: re.Match[str]) -> str:
        word = match.group(0)
        new = _SECOND[re.sub(r"\s+", " ", word.lower())]
        preceding = (before + text[: match.start()]).rstrip(" \t\n\"“'‘(—-")
        at_start = not preceding or _SENTENCE_DONE.search(preceding) is not None
        return new[0].upper() + new[1:] if at_start else new

    return _FIRST.sub(swap, text)


class VoiceFilter:
    """Streamed text in, repaired text out (see the module docstring)."""

    def __init__(self) -> None:
        self.edits: list[Edit] = []
        self._buffer = ""
        self._inside = False  # inside a quotation at the end of what was given out
        self._out = False  # the reply has begun: a unit was given out or held back
        self._ended = False
        self._players_quote = False  # the unit before handed the next quotation to the player
        self._held = ""  # a quotation alone, kept back until the unit after says whose it is

    def _edit(self, kind: Edit) -> None:
        if kind not in self.edits:
            self.edits.append(kind)

    def feed(self, piece: str) -> str:
        """Take the next piece of the reply; give out the units it completed."""
        if self._ended:
            return ""
        self._buffer += piece
        out: list[str] = []
        while not self._ended:
            unit = self._next_unit()
            if unit is None:
                break
            out.append(self._take(unit))
        return "".join(out)

    def finish(self, cut_off: bool) -> str:
        """The rest of the reply; ``cut_off``: it stopped at its length limit."""
        rest, self._buffer = self._buffer, ""
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

    def _next_unit(self) -> str | None:
        """The buffer's first complete unit, taken off it: quotations stay whole."""
        for match in _END.finditer(self._buffer):
            _, inside_at_end = _split_quotes(self._buffer[: match.end()], self._inside)
            if inside_at_end and "\n" not in match.group(0):
                continue  # a quotation goes on past its sentence: keep it whole
            unit, self._buffer = self._buffer[: match.end()], self._buffer[match.end() :]
            return unit
        return None

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
        if not quoted_here and _INTRODUCES.search(outside):
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
            fixed = _second_person(text, "".join(repaired))
            if fixed != text:
                self._edit(Edit.FIRST_PERSON)
            repaired.append(fixed)
        return "".join(repaired)


def repair(text: str, cut_off: bool = False) -> tuple[str, list[Edit]]:
    """A whole reply through ``VoiceFilter``."""
    voice = VoiceFilter()
    out = voice.feed(text) + voice.finish(cut_off)
    return out, voice.edits
