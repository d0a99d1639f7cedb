"""What a reply's prompt leaves for the next turn: where the ``cache`` layout put what may
change between turns (``services.prompt.floating.Placement``) and which cards the Story Cards
section held. One record per reply (``storage.models.ContextPlacement``), written in the
reply's transaction; the next turn on the path, or a retry of that reply, reads it to keep
what it can in place.

Invariants:

- A reply has a record only when its prompt had a placement (the ``cache`` layout); no
  record means no placement known, and the next turn places everything anew.
- A record carries ``PLACEMENT_VERSION``, the form of its fields. One of another version
  (a newer release's, or an older form this code does not upgrade) reads as no placement
  known, as does one whose fields do not parse: reading never raises.
- ``cards_held`` is None where the prompt's cards were not recorded (a placement taken over
  from a snapshot written before the cards were held): the next turn's section holds the
  cards that fire then.
- The Insights snapshot shows the same placement to the player; the next turn never reads
  it from there.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from talekeeper.services.prompt.floating import Placement
from talekeeper.storage.models import ContextPlacement

PLACEMENT_VERSION = 1  # 1: ``floating`` {name: [depth, digest]}, ``cards_held`` [card id]


@dataclass(frozen=True)
class Carried:
    """The previous prompt's placement, and its Story Cards section's cards when known."""

    placement: Placement
    cards_held: tuple[int, ...] | None


def record(action_id: int, placement: Placement, cards_held: Sequence[int]) -> ContextPlacement:
    """The row a reply whose prompt had ``placement`` leaves for the next turn."""
    floating = {name: [at, digest] for name, (at, digest) in placement.sections.items()}
    return ContextPlacement(
        action_id=action_id,
        version=PLACEMENT_VERSION,
        history_start=placement.history_start,
        top_digest=placement.top,
        floating=json.dumps(floating, ensure_ascii=False, separators=(",", ":")),
        cards_held=json.dumps(list(cards_held), separators=(",", ":")),
    )


def read(row: ContextPlacement | None) -> Carried | None:
    """What ``row`` says, or None: no row, another version, or fields that do not parse."""
    if row is None or row.version != PLACEMENT_VERSION:
        return None
    start = row.history_start
    if start is not None and not _whole(start):
        return None
    try:
        floating, held = json.loads(row.floating), _held(row.cards_held)
    except ValueError:
        return None
    if not isinstance(floating, dict) or not isinstance(row.top_digest, str):
        return None
    sections: dict[str, tuple[int, str]] = {}
    for name, spot in floating.items():
        if not (isinstance(spot, list) and len(spot) == 2):
            return None
        at, digest = spot
        if not (_whole(at) and isinstance(digest, str)):
            return None
        sections[name] = (at, digest)
    return Carried(Placement(start, sections, row.top_digest), held)


def _held(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    ids = json.loads(text)
    if not (isinstance(ids, list) and all(_whole(i) for i in ids)):
        raise ValueError("cards_held is not a list of card ids")
    return tuple(ids)


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
