"""When the rules lose track: a sentence that takes the player toward a place the story
knows, in words no pattern reads ("Your boots carry you down into Varn."), makes where the
player stands unknown rather than wrong; a sentence in which someone the story knows
handles an item it knows, in words no pattern reads ("Hob weighs the lantern in his hand
and keeps it."), makes whether the player still carries it unknown.

Invariants:

- Pure: an action's text, the names of the places the story knows, and the events the
  rules found in it in; events out.
- A sentence is *unsure* when the rules read no going of the player's in it, it is no
  hedge, denial or question (``rules.hedged``), it speaks of the player ("you", "your",
  "I", "my", "me"), and a known place (by its name or an alias, or told shorter) follows a
  word of direction in it ("to", "into", "toward", "through", …). Quoted speech is not
  read, as for the rules.
- An unsure sentence gives one ``moved`` event naming that place, with the value
  ``UNSURE`` and the sentence as evidence. The projection makes the location unknown
  unless the player already stands there; such an event is never explicit, so it never
  overrides where the player said they are (docs/world.md, "When the rules are unsure").
- An item's sentence is *unsure* when the rules read no change of that item in it, it is
  no hedge, denial or question, and it names a known person and the known item. It gives
  one ``dropped`` event naming the item, with the value ``UNSURE``: the projection takes
  the item out of what the player carries, if they carry it (as any ``dropped`` of the
  player's); like an unsure going, it never overrides the player's word.
- A place, person or item must be known before the sentence is read: a story's first
  mention of one is never unsure, so an import reads a story exactly as play did
  (``derive.derive_all``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from talekeeper.services.world import rules
from talekeeper.services.world.names import key_of, trailing
from talekeeper.storage.vocabulary import EventKind

UNSURE = "unsure"
_PLAYER = re.compile(r"\b(?:(?i:you|your|yours|yourself|my|me|myself)|I)\b")
DIRECTIONS = frozenset(
    {"to", "into", "toward", "towards", "through", "inside", "reach", "reaches", "enter", "enters"}
)


@dataclass(frozen=True)
class Forms:
    """The keys the story's known names may be told by (each name's own key and its last
    words) to the name; a shorter key two names share names neither. Built once for many
    readings (``of``); a reading looks up the sentence's runs of words in it, so its work
    is bounded by the sentence times ``longest``, not by how many names the story knows."""

    names: dict[str, str]
    longest: int  # the most words in one key
    rank: dict[str, int]  # each name's place in the order it was given

    @classmethod
    def of(cls, names: Iterable[str]) -> Forms:
        forms: dict[str, str] = {}
        shared: set[str] = set()
        rank: dict[str, int] = {}
        for name in names:
            rank.setdefault(name, len(rank))
            key = key_of(name)
            for form in [key, *trailing(key)] if key else []:
                if forms.get(form, name) != name:
                    shared.add(form)
                forms.setdefault(form, name)
        kept = {k: v for k, v in forms.items() if k not in shared}
        return cls(kept, max((len(k.split()) for k in kept), default=0), rank)

    def at(self, words: list[str], start: int) -> str | None:
        """The name told by the longest run of ``words`` from ``start``."""
        for size in range(min(self.longest, len(words) - start), 0, -1):
            name = self.names.get(" ".join(words[start : start + size]))
            if name is not None:
                return name
        return None

    def told(self, words: list[str]) -> list[str]:
        """Every name some run of ``words`` tells, each once, in the order given to ``of``."""
        found = {n for i in range(len(words)) for n in [self.at(words, i)] if n is not None}
        return sorted(found, key=self.rank.__getitem__)


def _words(sentence: str) -> list[str]:
    return key_of(f"x {sentence}").split()[1:]  # "x": no leading article is set aside


def _forms(names: Iterable[str] | Forms) -> Forms:
    return names if isinstance(names, Forms) else Forms.of(names)


def _toward(sentence: str, forms: Forms) -> str | None:
    """The first known place a word of direction leads to in ``sentence``."""
    words = _words(sentence)
    for i, word in enumerate(words):
        if word not in DIRECTIONS:
            continue
        start = i + 2 if i + 1 < len(words) and words[i + 1] in ("the", "a", "an") else i + 1
        place = forms.at(words, start)
        if place is not None:
            return place
    return None


def unsure(
    text: str, places: Iterable[str] | Forms, found: list[rules.Derived]
) -> list[rules.Derived]:
    """The unsure goings of ``text`` (an action's, read as the rules read it), given the
    places the story knows and the events the rules ``found`` in it."""
    forms = _forms(places)
    if not forms.names:
        return []
    read_moves = {d.evidence for d in found if d.kind is EventKind.MOVED and d.subject is None}
    out: list[rules.Derived] = []
    for read, written in rules.sentences(text):
        evidence = written[: rules.EVIDENCE_MAX]
        if evidence in read_moves or rules.hedged(read) or not _PLAYER.search(read):
            continue
        place = _toward(read, forms)
        if place is not None:
            out.append(rules.Derived(EventKind.MOVED, None, place, UNSURE, evidence))
    return out


_ITEM_KINDS = frozenset({EventKind.TOOK, EventKind.DROPPED, EventKind.GAVE, EventKind.USED_UP})


def unsure_items(
    text: str,
    items: Iterable[str] | Forms,
    people: Iterable[str] | Forms,
    found: list[rules.Derived],
) -> list[rules.Derived]:
    """The items of ``text`` whose holder the rules are unsure of (``UNSURE`` drops), given
    the items and people the story knows and the events the rules ``found`` in it."""
    things, who = _forms(items), _forms(people)
    if not things.names or not who.names:
        return []
    read = {(d.evidence, d.object) for d in found if d.kind in _ITEM_KINDS}
    out: list[rules.Derived] = []
    for sentence, written in rules.sentences(text):
        evidence = written[: rules.EVIDENCE_MAX]
        if rules.hedged(sentence):
            continue
        words = _words(sentence)
        if not who.told(words):
            continue
        handled = {key_of(name) for e, name in read if e == evidence and name}
        for item in things.told(words):
            if not any(key_of(item).endswith(h) or h.endswith(key_of(item)) for h in handled):
                out.append(rules.Derived(EventKind.DROPPED, None, item, UNSURE, evidence))
    return out
