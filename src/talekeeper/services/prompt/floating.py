"""The ``cache`` layout's floating sections: where each goes in the history, turn by turn.

Invariants:

- The stable sections (AI Instructions, Plot Essentials, Story Summary) open the
  prompt; the floating sections (Story Cards, Author's Note, Current state, Memories,
  Knowledge, in ``FLOATING_ORDER``) go in the history.
- Given the previous prompt's ``Placement``, everything before the first point where
  the prompt changes (a floating section whose text changed or that is more than
  ``MAX_FLOAT_ACTIONS`` actions back, the history's first action, the stable
  sections) stays where it was, so a turn that changes nothing only appends.
- The floating sections after that point are evaluated again anyway and are placed
  anew: just before the player's action, or at the head of a history of at most
  ``MAX_FLOAT_ACTIONS`` actions that is evaluated again whole (there older actions'
  drops do not move them). ``HEAD_SECTIONS`` always head the history.
- Sections at one place keep ``FLOATING_ORDER``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from talekeeper.services.prompt.sections import (
    FIXED_ORDER,
    SEPARATOR,
    HistoryEntry,
    Section,
    depth,
    render_fixed,
    render_note,
)

# The sections that float in the history, the least likely to change first (the Author's
# Note is set by hand; cards follow the scene; memories and knowledge the action). The
# Current state changes less often than the Memories, but goes after them: the Memories
# change nearly every turn, so a section after them is placed anew with them at the cost
# of its own tokens, while one before them stays behind and, when it does change, takes
# every action since with it (up to ``MAX_FLOAT_ACTIONS``).
FLOATING_ORDER = (
    "story_cards",
    "authors_note",
    "memories",
    "current_state",
    "knowledge",
    "story_cards_new",
)
# Floating sections that always head the history (the cards describe the scene's world, as
# a lorebook's entries do at the top; they change when the scene does): placed at its first
# action and never stale, so a turn that only appends or drops older actions leaves them as
# they were.
HEAD_SECTIONS = ("story_cards",)
# A floating section left in place goes no further back than this many actions (a few
# turns): far enough that most turns only append, near enough to steer the reply.
MAX_FLOAT_ACTIONS = 8


@dataclass(frozen=True)
class Placement:
    """Where a ``cache`` prompt put what may change between turns, by depth on the story
    path: the history's first action, and, per floating section, the depth of the action
    it went before (one past the history's end: before the player's action) with a digest
    of its text. The next turn keeps what it can of it (``services.prompt.placement``
    keeps it for that turn; Insights shows it)."""

    history_start: int | None = None
    sections: Mapping[str, tuple[int, str]] = field(default_factory=dict)
    top: str = ""  # the digest of the stable sections above the history


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def top_digest(rendered: Mapping[str, str]) -> str:
    """The digest of the stable sections above the history (``Placement.top``), from the
    fixed sections rendered in ``FIXED_ORDER``."""
    return digest(SEPARATOR.join(t for n, t in rendered.items() if t and n not in FLOATING_ORDER))


def top_digest_of(sections: Sequence[Section]) -> str:
    """``top_digest`` of these sections as they render untrimmed."""
    by_name = {s.name: render_fixed(s) for s in sections}
    return top_digest({n: by_name[n] for n in FIXED_ORDER if n in by_name})


def floating_inserts(
    rendered: Mapping[str, str],
    note: str,
    kept: list[HistoryEntry],
    tail: int,
    previous: Placement | None,
) -> tuple[dict[int, list[str]], Placement]:
    """The rendered floating sections by the index in ``kept`` before which they go
    (``len(kept)``: before the player's action), in order, and the placement they make.
    ``rendered``: every fixed section's text, the stable ones included (their digest is
    the placement's ``top``); ``note``: the Author's Note, trimmed."""
    floating = {name: rendered[name] for name in FLOATING_ORDER if rendered.get(name)}
    if note:
        floating = {"authors_note": render_note(note), **floating}
    placement = place(floating, kept, tail, previous, top_digest(rendered))
    inserts: dict[int, list[str]] = {}
    for name in sorted(floating, key=lambda n: (placement.sections[n][0], _order(n))):
        at = placement.sections[name][0]
        index = next((i for i, e in enumerate(kept) if depth(e) >= at), len(kept))
        inserts.setdefault(index, []).append(floating[name])
    return inserts, placement


def _order(name: str) -> int:
    return FLOATING_ORDER.index(name) if name in FLOATING_ORDER else len(FLOATING_ORDER)


def place(
    floating: dict[str, str],
    kept: list[HistoryEntry],
    tail: int,
    previous: Placement | None,
    top: str,
) -> Placement:
    """Where each floating section goes this turn (see the module docstring).

    Positions are (depth, order): a section at depth ``at`` goes before the first kept
    action at or after ``at``, so one at or before the history's first action heads the
    history and stays there when older actions are dropped. The first position where this
    prompt differs from the previous one is found; what is before it stays. The rest is
    evaluated again anyway, and goes where it serves best: to the head of the history when
    the whole history is evaluated again and holds at most ``MAX_FLOAT_ACTIONS`` actions
    (a short history turns over each turn: there a section is safest from its drops and
    still near the end), else just before the player's action. ``HEAD_SECTIONS`` always
    head the history."""
    start = depth(kept[0]) if kept else tail
    digests = {name: digest(text) for name, text in floating.items()}
    first = start if kept else None
    short = len(kept) <= MAX_FLOAT_ACTIONS

    def anew(name: str, home: int) -> int:
        return start if name in HEAD_SECTIONS else home

    if previous is None or previous.top != top:
        home = start if short else tail
        return Placement(first, {n: (anew(n, home), d) for n, d in digests.items()}, top)
    old_start = previous.history_start if previous.history_start is not None else -1
    everything = len(FLOATING_ORDER) + 1  # past any section at one depth: an action there

    def position(at: int, name: str) -> tuple[int, int]:
        return (max(at, old_start), _order(name))

    changed_at = (tail + 1, 0)  # the first position that differs; past the end: none
    if previous.history_start != first:
        changed_at = (old_start, everything)  # the previous history's first action
    for name, (at, old) in previous.sections.items():
        # How far back it is: a section heading the history is as far back as its head.
        stale = name not in HEAD_SECTIONS and tail - max(at, start) > MAX_FLOAT_ACTIONS
        if digests.get(name) != old or at > tail or stale:
            changed_at = min(changed_at, position(at, name))
    home = start if short and changed_at <= (old_start, everything) else tail
    spots = {}
    for name, new in digests.items():
        old_spot = previous.sections.get(name)
        keep = (
            old_spot is not None and old_spot[1] == new and position(old_spot[0], name) < changed_at
        )
        spots[name] = (old_spot[0] if keep and old_spot else anew(name, home), new)
    return Placement(first, spots, top)
