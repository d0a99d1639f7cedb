"""How the world answers for the player characters of a shared adventure several play
(docs/sharing.md): where each other player character stands and what they carry, beside
the host's, whose are the state's own location and inventory.

Invariants:

- Pure: read from the ``WorldState`` (``projection.Elsewhere``), never stored.
- A name is given with its entity's id, or with none (``entity_id`` None) for a player
  character the story has not named yet (``party``: a ``Ref`` of its own, never an
  entity's).
"""

from __future__ import annotations

from dataclasses import dataclass

from talekeeper.services.world.names import key_of
from talekeeper.services.world.projection import Ref, WorldState


@dataclass(frozen=True)
class NamedRef:
    name: str
    entity_id: int | None  # None: a player character the story has not named yet


def named(ref: Ref) -> NamedRef:
    return NamedRef(ref.name, ref.id if ref.id > 0 else None)


@dataclass(frozen=True)
class PlayerView:
    """Another player character: with the host's (``here``) or elsewhere (``location``,
    None when unknown), and what they carry."""

    name: str
    entity_id: int | None
    here: bool
    location: NamedRef | None
    inventory: list[NamedRef]


def players_of(state: WorldState) -> list[PlayerView]:
    """The other player characters as the state has them, in the order they joined."""
    return [
        PlayerView(
            name=member.who.name,
            entity_id=named(member.who).entity_id,
            here=member.here,
            location=named(member.place) if member.place is not None else None,
            inventory=[named(r) for r in member.carrying],
        )
        for member in state.party
    ]


def seen_by(
    state: WorldState, author: str | None
) -> tuple[str | None, tuple[str, ...], tuple[str, ...]]:
    """Where the character of ``author`` (a member's persona; None: the host's) stands, who
    is there with them and what they carry, by name, as the state has them: the host's
    location, present people and inventory for the host's character (and for a name that
    plays no one); for another player character with the host's, the same place and
    people, the host's character among them; for one elsewhere, their place and no one
    the state can name (it lists who is present only where the host's character is)."""
    member = next((m for m in state.party if author and key_of(m.who.name) == key_of(author)), None)
    here = state.location.name if state.location is not None else None
    if member is None:
        return here, tuple(r.name for r in state.present), tuple(r.name for r in state.inventory)
    carried = tuple(r.name for r in member.carrying)
    if not member.here:
        return (member.place.name if member.place is not None else None), (), carried
    others = tuple(r.name for r in state.present if r.id != member.who.id)
    return here, (*([state.lead] if state.lead else []), *others), carried
