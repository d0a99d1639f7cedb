"""Who says what in a story's text, for the lore clerk's lines (docs/world.md, "The lore
clerk").

Two ways a story tells speech, both read in code:

- **A script**: a line that is only a speaker's name and a colon ("PETRUCHIO:", "First
  Citizen:") opens that speaker's speech, which runs to the next such line or the text's
  end (a play, a transcript of a group chat). ``blocks`` cuts a text into its speeches,
  each with its speaker ("" for what no tag opens); a speaker named in capitals is told
  with capitals only at the start of each word ("Petruchio").
- **Prose**: what is said in quotation marks, **attributed** when the words outside them
  put a name next to a verb of saying ('"I am not afraid," said Lydia'): ``attributed``.
  "She said" names no one, so its "I" cannot be told as anyone's.

Invariants: a speaker's name is one to four words, each capitalised (a connector such as
"of" aside), and no line of prose ("Note: the door is locked." has words after its
colon). Reading is bounded by the text: each line is looked at once.
"""

from __future__ import annotations

import re
from functools import lru_cache

from talekeeper.services.world.name_words import NOT_NAMES, SENTENCE_CACHE, speaker_of
from talekeeper.services.world.names import TITLES

__all__ = ["attributed", "blocks", "outside_quotes", "speaker_of"]
_QUOTED = re.compile(r"[\"“][^\"”]*[\"”]")
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
SAYING = frozenset(
    {
        "said", "says", "say", "cried", "cries", "replied", "replies", "asked", "asks",
        "answered", "answers", "added", "adds", "continued", "continues", "whispered",
        "whispers", "shouted", "shouts", "called", "calls", "exclaimed", "exclaims",
        "returned", "observed", "resumed", "rejoined", "murmured", "murmurs", "muttered",
        "mutters", "told", "tells", "declared", "declares", "warned", "warns",
    }
)  # fmt: skip


@lru_cache(maxsize=SENTENCE_CACHE)
def blocks(text: str) -> tuple[tuple[str, str], ...]:
    """``text`` cut into speeches: each ``(speaker, what they say)``, the speaker "" for
    text no speaker's line opens; a text with no such line is one block, ``("", text)``."""
    out: list[tuple[str, str]] = []
    speaker = ""
    lines: list[str] = []
    for line in text.split("\n"):
        named = speaker_of(line)
        if named:
            if any(x.strip() for x in lines):
                out.append((speaker, "\n".join(lines).strip()))
            speaker, lines = named, []
        else:
            lines.append(line)
    if any(x.strip() for x in lines):
        out.append((speaker, "\n".join(lines).strip()))
    return tuple(out)


def outside_quotes(sentence: str) -> str:
    """The sentence without what is said in quotation marks."""
    return _QUOTED.sub(" ", sentence)


def attributed(outside: str) -> bool:
    """Whether the words outside a sentence's quotations say who speaks: a name next to a
    verb of saying ("said Lydia", "Lydia said", "said Mr. Bennet"; a title between)."""
    words = _WORD.findall(outside)
    for i, word in enumerate(words):
        if word.casefold() not in SAYING:
            continue
        after = i + 1
        while after < len(words) - 1 and words[after].casefold() in TITLES:
            after += 1
        if any(_a_name(words[j]) for j in (i - 1, after) if 0 <= j < len(words)):
            return True
    return False


def _a_name(word: str) -> bool:
    return word[0].isupper() and word.casefold() not in NOT_NAMES | TITLES | SAYING
