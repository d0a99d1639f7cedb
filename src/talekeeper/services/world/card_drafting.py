"""A card's entry written by a model from the story's own sentences, and what of it is kept
(docs/world.md, "The lore clerk").

Invariants:

- Pure: the sentences in, a request or the kept lines out; no session, no model call.
- The model is shown the entity's name and the story's sentences about it, numbered, and
  asked for JSON only: ``{"entry": [{"sentence", "from": [numbers]}]}``, each sentence of
  the entry with the numbers of the story's sentences it rests on. Never to add anything.
- The answer is garbage until shown otherwise. A sentence is kept only when it cites at
  least one of the numbers shown and every word it has, but the few that join words
  (``JOINING``), is a word of the sentences it cites or of the entity's names: an uncited
  sentence, or one that says a thing its sources do not, is dropped, never the answer.
  At most ``MAX_SENTENCES`` are read, each at most ``SENTENCE_CHARS``.
- A kept sentence's evidence is the story's sentences it cites, each with its action.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from talekeeper.providers.base import CompletionRequest
from talekeeper.services.world.clerk import SENTENCE_CHARS, Line
from talekeeper.services.world.extraction import json_request, listed_in

MAX_SENTENCES = 8
REPLY_TOKENS = 400
# Words a sentence may use that its sources need not: the grammar that joins what they say.
JOINING = frozenset(
    {
        "a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "by", "for",
        "with", "from", "is", "are", "was", "were", "be", "been", "has", "have", "had",
        "who", "which", "that", "as", "also", "it", "its", "he", "she", "they", "his",
        "her", "their", "him", "them", "s", "this", "there",
    }
)  # fmt: skip
_WORD = re.compile(r"\w+")

SYSTEM = (
    "You write the entry of a story card (a lorebook entry) about one person, place, item "
    "or faction of an interactive story, from the story's own sentences, which are "
    "numbered. Use only what those sentences say: add nothing, guess nothing, invent "
    "nothing. Write in the third person, a few short sentences. Answer with one JSON object "
    'and nothing else: {"entry": [{"sentence": "...", "from": [1, 2]}]}, where "from" '
    "lists the numbers of the sentences each of yours rests on."
)


@dataclass(frozen=True)
class Written:
    """What was kept of a model's entry: its sentences, each with the story's sentences it
    cites; ``read``: how many it gave."""

    lines: tuple[tuple[str, tuple[Line, ...]], ...]
    read: int

    @property
    def entry(self) -> str:
        return " ".join(text for text, _ in self.lines)

    @property
    def evidence(self) -> tuple[Line, ...]:
        seen: dict[tuple[int, str], Line] = {}
        for _, cited in self.lines:
            for line in cited:
                seen.setdefault((line.action_id, line.text), line)
        return tuple(seen.values())


def request(name: str, sources: Sequence[Line], *, model: str, mode: str) -> CompletionRequest:
    """The one request that writes ``name``'s entry from ``sources``."""
    numbered = "\n".join(f"{i}. {line.text}" for i, line in enumerate(sources, 1))
    user = f"The card is about: {name}\n\nThe story's sentences:\n{numbered}"
    return json_request(SYSTEM, user, model=model, mode=mode, max_tokens=REPLY_TOKENS)


def kept(answer: str, sources: Sequence[Line], names: Sequence[str]) -> Written:
    """The sentences of ``answer`` that cite ``sources`` and say only what those do."""
    entries = listed_in(answer, "entry")[:MAX_SENTENCES]
    named = {w for n in names for w in _WORD.findall(n.casefold())}
    out: list[tuple[str, tuple[Line, ...]]] = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        text, cites = entry.get("sentence"), entry.get("from")
        if not isinstance(text, str) or not isinstance(cites, list):
            continue
        text = " ".join(text.split())
        numbers = {c for c in cites if isinstance(c, int) and not isinstance(c, bool)}
        cited = tuple(sources[n - 1] for n in sorted(numbers) if 1 <= n <= len(sources))
        if not text or len(text) > SENTENCE_CHARS or not cited:
            continue
        said = {w for line in cited for w in _WORD.findall(line.text.casefold())}
        if set(_WORD.findall(text.casefold())) - said - named - JOINING:
            continue  # a word its sources do not have: it says more than they do
        out.append((text if text[-1] in ".!?…" else text + ".", cited))
    return Written(tuple(out), len(entries))
