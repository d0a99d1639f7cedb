"""When the story refuses what the player tried: a reply that says the player's ``do`` did
not happen ("take the compass" -> "The compass is fixed fast to the wall, and it will not
come free.").

Invariants:

- Pure: the ``do`` action's text and its reply's text in, events out.
- Only what the ``do`` states in so many words can be refused: its taking of an item or
  its going to a place (``rules.derive``). A reply refuses one when a sentence of it names
  that item or place (the same key, or the same thing told shorter or longer) and says no
  in so many words (``_NO``: "not", "cannot", "locked", "no further", "drives you back",
  "too hot", "you try to … but", …); a going, also when a sentence turns the player back
  outright whatever it calls the place (``_TURNED_BACK``: "the storm drives you back"). A
  sentence that only hedges ("you almost drop the locket") refuses nothing.
- A refusal is an event of the refused kind on the reply, naming the same thing, with the
  value ``REFUSED`` and the reply's sentence as evidence. The projection undoes the change
  it refuses when that change still stands, so a retry, undo or edit of the reply takes
  the refusal with it, like any event.
"""

from __future__ import annotations

import re

from talekeeper.services.world import rules
from talekeeper.services.world.names import mentions
from talekeeper.storage.vocabulary import EventKind

REFUSED = "refused"
_NO = re.compile(
    r"\b(?:not|cannot|can't|won't|will not|no further|locked|barred|fixed fast|nailed|"
    r"out of reach|too heavy|too high|drives? you back|turn back|turns you back|"
    r"crumbles|shatters|refuses?|forbid\w*|no way|too (?:hot|cold|heavy|high|far|deep|sharp)|"
    r"chained|stuck fast|bolted|blocks? the way|give up|gives up|stay put|"
    r"(?:throws|pushes|knocks|forces) (?:your hand|you) back|tr(?:y|ies|ied) to\b.{0,80}\bbut)\b",
    re.IGNORECASE,
)
# A going the reply turns back outright, whatever name it gives the place (an inn may be
# "the Drowned Bell" in the reply and "the inn" in the player's words).
_TURNED_BACK = re.compile(
    r"\b(?:drives? you back|you go no further|turns? you back|you turn back|no way (?:in|through)|"
    r"(?:cannot|can't) get (?:in|through))\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"[^.!?…]+[.!?…]*")
REFUSABLE = (EventKind.TOOK, EventKind.MOVED)


def refusals(do_text: str, reply: str) -> list[rules.Derived]:
    """The reply's refusals of what the ``do`` action ``do_text`` states."""
    tried = [
        d
        for d in rules.derive("do", do_text)
        if d.kind in REFUSABLE and d.subject is None and d.object is not None
    ]
    out: list[rules.Derived] = []
    for attempt in tried:
        assert attempt.object is not None
        for match in _SENTENCE.finditer(reply):
            sentence = match.group().strip()
            turned = attempt.kind is EventKind.MOVED and _TURNED_BACK.search(sentence)
            if turned or (_NO.search(sentence) and mentions(sentence, attempt.object)):
                out.append(rules.Derived(attempt.kind, None, attempt.object, REFUSED, sentence))
                break
    return out
