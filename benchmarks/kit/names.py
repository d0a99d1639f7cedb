"""Invented proper names for generated stories and books.

Invariant: a ``NameMaker`` never gives the same name twice (nor one of ``taken``), so
in a generated text a name identifies the one fact it was made for. Deterministic: it
draws only from the ``random.Random`` it is given.
"""

from __future__ import annotations

import random

_ONSETS = "b br c d dr f g gr h k l m n p r s st t th v w z".split()  # noqa: SIM905
_VOWELS = "a e i o u a e o ai".split()  # noqa: SIM905
_CODAS = "l n r s th nd rk ll m st".split()  # noqa: SIM905
_ENDINGS = ("a", "en", "ric", "wyn", "ra", "is", "o", "el", "mar", "ith")


class NameMaker:
    """Invented proper names, each used once in an adventure (so a name identifies a fact)."""

    def __init__(self, rng: random.Random, taken: set[str] | None = None) -> None:
        self.rng = rng
        self.used: set[str] = set(taken or ())

    def _word(self, syllables: int) -> str:
        rng = self.rng
        parts = [rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables)]
        word = "".join(parts) + rng.choice(_CODAS + list(_ENDINGS))
        return word.capitalize()

    def word(self, syllables: int = 2) -> str:
        while True:
            word = self._word(syllables)
            if word.lower() not in self.used and len(word) >= 4:
                self.used.add(word.lower())
                return word

    def person(self) -> str:
        return f"{self.word(1)} {self.word(2)}"
