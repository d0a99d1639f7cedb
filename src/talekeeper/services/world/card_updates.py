"""The lore clerk's updates (docs/world.md, "The lore clerk"): lines the story added about
something that already has a card, proposed as lines to add to its entry.

Invariants:

- A card's **new lines** are the usable sentences of the path about it (``clerk.sayings``:
  naming the card's name or a keyword in their first words; its character's own speeches
  in a script are not news about it) in actions after the opening
  written after the card was made (the story adds to it: a scenario's card is not told its
  own opening again), in story order, that its
  entry does not already say (``evidence.stated``: most of a line's terms are the
  entry's), and that no dismissed update of that card offered; at most
  ``clerk.ENTRY_CHARS`` of them.
- An update is proposed when a card has at least ``UPDATE_LINES`` new lines: fewer say
  too little to be worth the player's look.
- Accepting an update adds its lines after the entry (``added_to``): the player's text is
  kept, character for character, as its beginning; nothing is rewritten or taken out.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from talekeeper.services.memory.evidence import stated
from talekeeper.services.world.clerk import ENTRY_CHARS, Draft, Line, PathText, sayings
from talekeeper.services.world.name_words import key_kept
from talekeeper.services.world.names import key_of

UPDATE_LINES = 2  # new lines about a card before an update is proposed


@dataclass(frozen=True)
class CardText:
    """What a card says and is called (its name and keywords)."""

    id: int
    name: str
    type: str
    keywords: tuple[str, ...]
    entry: str
    made: datetime | None = None  # when the card was made (None: not known)


def updates(
    path: Sequence[PathText],
    cards: Sequence[CardText],
    protagonist: str = "",
    offered: Mapping[int, Collection[str]] | None = None,
) -> list[tuple[CardText, Draft]]:
    """Each card with enough new lines, and the update that adds them (its ``entry`` the
    lines, its ``evidence`` the lines with their actions); ``offered``: by card id, the
    lines its dismissed updates offered (never offered again)."""
    out: list[tuple[CardText, Draft]] = []
    said = [f" {key_kept(p.text)} " for p in path]
    for card in cards:
        keys = {k for k in map(key_of, (card.name, *card.keywords)) if k}
        if not keys:
            continue
        indexes = [
            i
            for i, text in enumerate(said)
            if i > 0 and any(f" {k} " in text for k in keys) and _after(path[i], card)
        ]
        refused = set((offered or {}).get(card.id, ()))
        lines: list[Line] = []
        size = 0
        # What the card's own character says is not news about them: no update of speeches.
        for about, line in sayings(keys, indexes, path, protagonist, own_speech=False):
            if not about or line.text in refused or stated(line.text, card.entry):
                continue
            if size + len(line.text) + 1 > ENTRY_CHARS:
                break
            lines.append(line)
            size += len(line.text) + 1
        if len(lines) >= UPDATE_LINES:
            made = Draft(
                key=key_of(card.name),
                name=card.name,
                type=card.type,
                keys=card.keywords,
                entry=" ".join(line.text for line in lines),
                evidence=tuple(lines),
            )
            out.append((card, made))
    return out


def _after(act: PathText, card: CardText) -> bool:
    """Whether the action was written after the card was made (both known), or either is
    not known."""
    return act.written is None or card.made is None or act.written > card.made


def added_to(entry: str, lines: str) -> str:
    """``entry`` with ``lines`` after it, on a line of their own; the entry as it was."""
    return f"{entry}\n{lines}" if entry else lines
