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

from talekeeper.services.world import rules
from talekeeper.services.world.names import key_of, trailing
from talekeeper.storage.vocabulary import EventKind

UNSURE = "unsure"
_PLAYER = re.compile(r"\b(?:(?i:you|your|yours|yourself|my|me|myself)|I)\b")
DIRECTIONS = frozenset(
    {"to", "into", "toward", "towards", "through", "inside", "reach", "reaches", "enter", "enters"}
)


def _forms(places: Iterable[str]) -> dict[str, str]:
    """Each key a known place may be told by (its own, and its last words), to its name;
    a shorter key two places share names neither."""
    forms: dict[str, str] = {}
    shared: set[str] = set()
    for name in places:
        key = key_of(name)
        for form in [key, *trailing(key)] if key else []:
            if forms.get(form, name) != name:
                shared.add(form)
            forms.setdefault(form, name)
    return {k: v for k, v in forms.items() if k not in shared}


def _toward(sentence: str, forms: dict[str, str]) -> str | None:
    """The first known place a word of direction leads to in ``sentence``."""
    words = key_of(f"x {sentence}").split()[1:]  # "x": no leading article is set aside
    longest = max((len(f.split()) for f in forms), default=0)
    for i, word in enumerate(words):
        if word not in DIRECTIONS:
            continue
        start = i + 2 if i + 1 < len(words) and words[i + 1] in ("the", "a", "an") else i + 1
        for size in range(min(longest, len(words) - start), 0, -1):
            place = forms.get(" ".join(words[start : start + size]))
            if place is not None:
                return place
    return None


def unsure(text: str, places: Iterable[str], found: list[rules.Derived]) -> list[rules.Derived]:
    """The unsure goings of ``text`` (an action's, read as the rules read it), given the
    places the story knows and the events the rules ``found`` in it."""
    forms = _forms(places)
    if not forms:
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


def _said(forms: dict[str, str], said: str) -> list[str]:
    """The names whose forms ``said`` (a key, spaced at both ends) holds, each once."""
    return list(dict.fromkeys(name for form, name in forms.items() if f" {form} " in said))


def unsure_items(
    text: str, items: Iterable[str], people: Iterable[str], found: list[rules.Derived]
) -> list[rules.Derived]:
    """The items of ``text`` whose holder the rules are unsure of (``UNSURE`` drops), given
    the items and people the story knows and the events the rules ``found`` in it."""
    things, who = _forms(items), _forms(people)
    if not things or not who:
        return []
    read = {(d.evidence, d.object) for d in found if d.kind in _ITEM_KINDS}
    out: list[rules.Derived] = []
    for sentence, written in rules.sentences(text):
        evidence = written[: rules.EVIDENCE_MAX]
        if rules.hedged(sentence):
            continue
        said = f" {' '.join(key_of(f'x {sentence}').split()[1:])} "
        if not _said(who, said):
            continue
        handled = {key_of(name) for e, name in read if e == evidence and name}
        for item in _said(things, said):
            if not any(key_of(item).endswith(h) or h.endswith(key_of(item)) for h in handled):
                out.append(rules.Derived(EventKind.DROPPED, None, item, UNSURE, evidence))
    return out
