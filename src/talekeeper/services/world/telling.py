"""The rules' patterns for someone being told something: the player telling someone named
("You tell Tobin about the key."), or someone named learning it ("Tobin learns of the
key."), each a ``learned`` event whose value is what they learn (``rules`` reads each
sentence with them; docs/world.md, "Who knows what").

Invariants:

- The group ``subject`` is someone named (``grammar.named``), the one who learns; the
  group ``value`` is what they learn, at most ``TOLD_CHARS`` characters to the sentence's
  end, so every pattern reads a bounded stretch (linear time in the sentence).
- Each pattern says the telling in so many words; a sentence that hedges, plans or asks
  ("You will tell Tobin…", "Should you tell Tobin?") gives nothing (``rules.hedged``).
- What someone is told stands in for a fact of the story by its words: a memory whose text
  or passages hold them is what they were told (``told_about``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from talekeeper.services.world.grammar import YOU, named

TOLD_CHARS = 160
_VALUE = rf"(?P<value>[^.!?;]{{1,{TOLD_CHARS}}})"
_WHAT = r"(?:about|of|that|where|how|what|who|why|when|the truth about|everything about)"
_LEARNER = named("subject")
TELLING: list[re.Pattern[str]] = [
    # "You tell Tobin about the key.", "You whisper to Tobin where the key is."
    re.compile(
        YOU + r"(?i:tell|tells|told|whisper to|explain to|confide in|confess to|reveal to|"
        r"admit to|warn|inform|remind|show)\s+" + _LEARNER + rf"\s+(?i:{_WHAT})\s+" + _VALUE
    ),
    # "You tell Tobin the secret.", "You show Tobin the map."
    re.compile(
        YOU + r"(?i:tell|show|give away)\s+" + _LEARNER + r"\s+(?i:the|your|my)\s+" + _VALUE
    ),
    # "Tobin learns of the key.", "Tobin finds out that the key is gone."
    re.compile(
        _LEARNER + r"\s+(?:learns|learned|finds out|found out|is told|"
        r"was told|now knows|comes to know)\s+"
        rf"(?:(?i:{_WHAT})\s+)?" + _VALUE
    ),
]

# Words too common to say what a telling was about.
_COMMON = frozenset({
    "the", "a", "an", "of", "to", "in", "on", "at", "by", "for", "with", "from", "about",
    "that", "this", "these", "those", "there", "here", "where", "how", "what", "who", "why",
    "when", "is", "are", "was", "were", "be", "been", "it", "its", "his", "her", "their",
    "your", "my", "our", "you", "he", "she", "they", "them", "him", "me", "i", "we", "us",
    "and", "or", "but", "not", "no", "so", "as", "into", "over", "under", "all",
    "everything", "truth", "secret", "know", "knows",
})  # fmt: skip
_WORD = re.compile(r"\w+")


def words_of(text: str) -> set[str]:
    """The telling words of ``text``: case-folded, without the most common ones."""
    return {w for w in (m.group().casefold() for m in _WORD.finditer(text)) if w not in _COMMON}


def told_about(told: str, texts: Iterable[str]) -> bool:
    """Whether what someone was told (``told``, a ``learned`` event's value) is what
    ``texts`` say: at least half its telling words, and one at least, are among theirs."""
    wanted = words_of(told)
    if not wanted:
        return False
    have: set[str] = set()
    for text in texts:
        have |= words_of(text)
    return 2 * len(wanted & have) >= len(wanted)
