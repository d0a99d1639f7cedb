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
