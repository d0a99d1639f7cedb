"""What an imported reply leaves for the next turn: its placement record
(``services.prompt.placement``), read from the reply's Insights snapshot, so the first
``cache`` turn of an imported adventure keeps in place what the exported one would have.

Invariants:

- A snapshot gives a record only where it recorded a ``cache`` placement, read as migration
  0013 read the snapshots already stored: the layout named ``cache``, a history start that
  is a depth or none, a ``floating`` object whose entries with a depth and a digest count,
  a top digest no longer than its column (else none), the held cards where the snapshot
  listed them. Any other snapshot gives none, and that reply's next turn places everything
  anew, as it would have. Reading never raises.
- A record is written in the form this version writes (``placement.record``), whatever the
  Insights version of the snapshot it comes from.
- A snapshot names cards by the ids they had where it was written; the file names cards by
  their place in its list (``card_keys``: 1..n). A held card is found again by what the
  snapshot's ``cards`` list says of it, its name and type: the file's one card of that name
  and type. A card the file lacks (it was gone when the file was written) is dropped, as
  the next turn there would have dropped it. An id the snapshot does not describe, or a
  name and type several cards share, leaves the record's cards unknown (``None``: the next
  turn's section holds the cards that fire then): never a wrong card.
"""

# The parse repeats migration 0013's ``placement()`` instead of sharing one function: a
# migration stays as it was written, while this one follows the application (the record's
# current form, the card ids an import must translate), so neither may import the other.
# tests/storage/test_placement_migration.py holds the two to the same reading.

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TypeGuard

from talekeeper.services.exchange.fileformat import CardEntry, InsightEntry
from talekeeper.services.exchange.values import MAX_INTEGER
from talekeeper.services.prompt import placement as placement_record
from talekeeper.services.prompt.floating import Placement
from talekeeper.storage.models import ContextPlacement

DIGEST_MAX = 64  # ``ContextPlacement.top_digest``: a longer one is none
# The columns a record takes from its snapshot: all but the reply's id and its held cards,
# which name rows only the write gives ids to.
COLUMNS = tuple(
    column.key
    for column in ContextPlacement.__table__.columns
    if column.key not in ("action_id", "cards_held")
)

CardName = tuple[str, str]  # a card's (name, type)


@dataclass(frozen=True)
class PlannedPlacement:
    """One reply's record, its references still as the file's keys."""

    action: int  # the reply, by its action key
    values: dict[str, object]  # the record's ``COLUMNS``
    cards: tuple[int, ...] | None  # the held cards by card key; None: not known


def card_keys(cards: Sequence[CardEntry]) -> dict[CardName, list[int]]:
    """The file's cards by name and type: their keys (places in the list, from 1)."""
    keys: dict[CardName, list[int]] = {}
    for key, card in enumerate(cards, 1):
        keys.setdefault((card.name, card.type), []).append(key)
    return keys


def planned(
    snapshots: Sequence[InsightEntry], cards: Mapping[CardName, list[int]]
) -> list[PlannedPlacement]:
    """The record each snapshot that recorded a ``cache`` placement gives, in file order."""
    rows: list[PlannedPlacement] = []
    for snap in snapshots:
        found = read_layout(snap.data)
        if found is None:
            continue
        placement, held = found
        row = placement_record.record(0, placement, ())
        values: dict[str, object] = {column: getattr(row, column) for column in COLUMNS}
        rows.append(PlannedPlacement(snap.action, values, _held(held, snap.data, cards)))
    return rows


def read_layout(snapshot: Mapping[str, object]) -> tuple[Placement, list[int] | None] | None:
    """The placement a snapshot recorded and the ids of the cards it held (None where it
    did not list them), or None: no ``cache`` placement that parses."""
    layout = snapshot.get("layout")
    if not isinstance(layout, dict) or layout.get("name") != "cache":
        return None
    start, spots = layout.get("history_start_depth"), layout.get("floating")
    if not (start is None or _depth(start)) or not isinstance(spots, dict):
        return None
    sections: dict[str, tuple[int, str]] = {}
    for name, spot in spots.items():
        if isinstance(spot, dict):
            at, digest = spot.get("at_depth"), spot.get("digest")
            if _depth(at) and isinstance(digest, str):
                sections[str(name)] = (at, digest)
    top = layout.get("top_digest")
    top = top if isinstance(top, str) and len(top) <= DIGEST_MAX else ""
    held = layout.get("cards_held")
    cards = [c for c in held if _whole(c)] if isinstance(held, list) else None
    return Placement(start, sections, top), cards


def _held(
    held: list[int] | None, snapshot: Mapping[str, object], cards: Mapping[CardName, list[int]]
) -> tuple[int, ...] | None:
    """The held cards' keys in the file (see the module docstring), or None: not known."""
    if held is None:
        return None
    described: dict[int, CardName] = {}
    parts = snapshot.get("cards")
    for part in parts if isinstance(parts, list) else []:
        if isinstance(part, dict):
            card_id, name, kind = part.get("id"), part.get("name"), part.get("type")
            if _whole(card_id) and isinstance(name, str) and isinstance(kind, str):
                described[card_id] = (name, kind)
    keys: list[int] = []
    for card_id in held:
        if card_id not in described:
            return None
        found = cards.get(described[card_id], [])
        if len(found) > 1:
            return None
        keys.extend(found)  # none: the card was gone when the file was written
    return tuple(keys)


def _whole(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _depth(value: object) -> TypeGuard[int]:
    return _whole(value) and 0 <= value <= MAX_INTEGER
