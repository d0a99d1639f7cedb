"""The cast brief: who is who, given with every memory and Story Summary call.

The story is written as "you"; a memory is read alone, much later. The brief
tells the summary model whom "you" means and names the people and places of the
block, so it can write "Mara gave Pip the key" instead of "you gave him it".

Invariants:

- Lines, in this order: the protagonist (persona name, pronouns, description;
  "the player (unnamed)" without a name); then the story cards whose keywords
  occur in the block (whole word or phrase, ignoring case, the same matcher as
  the narrator's cards: "Mara" never fires on "Marathon"), in card order; then
  the other *character* cards, in card order, until the protagonist and the
  cards make ``CAST_LINES`` lines. Last, the Plot Essentials as "Setting: …".
- Callers pass the whole block, never its excerpt: a card named only in the
  left-out middle still belongs to the cast.
- Every protagonist and card line is one line of at most ``LINE_CHARS``
  characters, cut on a word boundary with "…" (``collapse``).
- The setting is the last ``SETTING_TOKENS`` tokens of the Plot Essentials,
  whitespace collapsed; when cut, the partial first word is dropped and "…" marks
  the cut.
- Fixed descriptions only: card name, type and entry, never card notes or any
  live value (stats, trust), so an event is framed the same way whenever it is
  summarized.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from talekeeper.core.tokens import TokenCounter
from talekeeper.services.cards.rules import CardView, fired_cards

CAST_LINES = 8  # docs/memory.md §2: the protagonist and the cards together, enough for a scene
LINE_CHARS = 240  # docs/memory.md §2: one card's gist; a whole entry would crowd out the passage
# docs/memory.md §2: the end of the Plot Essentials, where the current aim sits
SETTING_TOKENS = 300
FILLER_TYPE = "character"  # only people fill spare lines: they are who "he" and "she" refer to
ELLIPSIS = "…"
PROTAGONIST_LABEL = 'Protagonist, written as "you"'
UNNAMED_PLAYER = "the player"  # what the prompts tell the model to write without a name


@dataclass(frozen=True)
class Persona:
    name: str
    pronouns: str
    description: str


def collapse(text: str, limit: int = LINE_CHARS) -> str:
    """``text`` on one line (runs of whitespace become one space), cut to at most ``limit``
    characters on a word boundary with "…" when longer. A single word longer than the
    limit is cut inside the word: a line must never exceed the limit."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    if limit < len(ELLIPSIS):
        return ""
    room = limit - len(ELLIPSIS)
    kept = line[:room]
    if line[room] != " ":  # the cut falls inside a word: go back to the space before it
        space = kept.rfind(" ")
        if space > 0:
            kept = kept[:space]
    return kept.rstrip(" ,;:-–—") + ELLIPSIS


def protagonist_line(persona: Persona) -> str:
    name = persona.name.strip()
    pronouns = " ".join(persona.pronouns.split())
    if name:
        who = f"{name} ({pronouns})" if pronouns else name
    else:
        who = (
            f"{UNNAMED_PLAYER} (unnamed, {pronouns})" if pronouns else f"{UNNAMED_PLAYER} (unnamed)"
        )
    description = persona.description.strip()
    return collapse(f"{PROTAGONIST_LABEL}: {who}." + (f" {description}" if description else ""))


def card_line(card: CardView) -> str:
    """Name, type and entry: the card's fixed description, never its notes."""
    entry = card.entry.strip()
    return collapse(f"{card.name} ({card.type})" + (f": {entry}" if entry else ""))


def cast_cards(cards: Sequence[CardView], block: str, room: int) -> list[CardView]:
    """Up to ``room`` cards: those named in ``block`` first, then other characters."""
    named = [fired.card for fired in fired_cards(cards, block, "")]  # one cached matcher
    filler = [c for c in cards if c.type == FILLER_TYPE and c not in named]
    return (named + filler)[: max(room, 0)]


def setting_line(plot_essentials: str, counter: TokenCounter) -> str:
    essentials = " ".join(plot_essentials.split())
    if not essentials:
        return ""
    tail = counter.tail(essentials, SETTING_TOKENS)
    if tail == essentials:
        return f"Setting: {essentials}"
    start = len(essentials) - len(tail)
    if not tail[:1].isspace() and start > 0 and not essentials[start - 1].isspace():
        # The cut fell inside a word: drop the fragment rather than show half a name.
        _, _, tail = tail.partition(" ")
    return f"Setting: {ELLIPSIS}{tail.lstrip()}"


def cast_brief(
    persona: Persona,
    cards: Sequence[CardView],
    block: str,
    plot_essentials: str,
    counter: TokenCounter,
) -> str:
    """The brief for one block; ``block`` is the block's whole text, not its excerpt."""
    lines = [protagonist_line(persona)]
    lines += [card_line(c) for c in cast_cards(cards, block, CAST_LINES - len(lines))]
    setting = setting_line(plot_essentials, counter)
    if setting:
        lines.append(setting)
    return "\n".join(lines)
