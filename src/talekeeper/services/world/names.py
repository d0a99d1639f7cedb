"""Names of the world's people, places, items, factions and quests, matched in code.

Invariants:

- A name's key is its text in Unicode NFKC, case-folded, its words joined by one space,
  and a leading article or title ("the", "a", "an", "Captain", …) set aside while another
  word remains: "The Brass Key" and "brass key" are one item, "Captain Mara" and "Mara"
  one person. Words are Unicode words (``\\w``): a name in any script keeps its letters,
  so two names in a script without case, such as "明" and "暗", stay two.
- A shorter name is the same thing told shorter when its key is the last words of the
  other's ("the vial" and "the glass vial", "Maren" and "Old Maren"; never "key" and
  "monkey"): ``told_shorter``. Who decides which entity a name means is the caller's.
- A name a player or a model gives is cleaned (NFKC, control characters out, runs of
  white space made one) and must keep at least one letter or digit and fit ``NAME_MAX``.
"""

from __future__ import annotations

import re
import unicodedata

from talekeeper.core.errors import InvalidInput
from talekeeper.storage.models.world import NAME_MAX

ARTICLES = frozenset({"the", "a", "an"})
TITLES = frozenset(
    {"mr", "mrs", "ms", "miss", "dr", "sir", "dame", "lady", "lord", "captain", "master"}
)
_WORD = re.compile(r"\w+")
_SPACE = re.compile(r"\s+")


def key_of(name: str) -> str:
    """The key two names share when they name one thing ("" for a name without words)."""
    words = _WORD.findall(unicodedata.normalize("NFKC", name).casefold())
    while len(words) > 1 and (words[0] in ARTICLES or words[0] in TITLES):
        words.pop(0)
    return " ".join(words)


def told_shorter(a: str, b: str) -> bool:
    """Whether keys ``a`` and ``b`` differ and one is the other's last words."""
    if a == b or not a or not b:
        return False
    short, long = sorted((a, b), key=len)
    return long.endswith(" " + short)


def trailing(key: str) -> list[str]:
    """The keys a name ``key`` is told longer of: its last words, one word or more, short of
    all of them ("old glass vial" -> "glass vial", "vial")."""
    words = key.split(" ")
    return [" ".join(words[i:]) for i in range(1, len(words))]


def mentions(text: str, name: str) -> bool:
    """Whether ``text`` names ``name`` in whole words: its key, or the same thing told
    shorter (one of its last words, "the compass" for "the copper compass")."""
    said = f" {key_of(text)} "
    key = key_of(name)
    return bool(key) and any(f" {short} " in said for short in [key, *trailing(key)])


def clean_name(name: str, role: str = "name") -> str:
    """``name`` as stored and shown; refused when it names nothing or is too long."""
    text = unicodedata.normalize("NFKC", name)
    text = "".join(" " if unicodedata.category(c).startswith("C") else c for c in text)
    text = _SPACE.sub(" ", text).strip()
    if not key_of(text):
        raise InvalidInput(f"The {role} must hold at least one letter or digit.")
    if len(text) > NAME_MAX:
        raise InvalidInput(f"The {role} is {len(text):,} characters long; at most {NAME_MAX} fit.")
    return text
