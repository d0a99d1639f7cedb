"""The player characters of a shared adventure as the world reads them: where each stands,
and so who was present at each action and who knows what (docs/sharing.md, "Who knows
what, per character").

Invariants:

- Only an adventure that more than one plays has a party (``party_of``: None otherwise),
  so single play reads the world exactly as before: the player witnessed everything.
- The host's character (the *lead*) is the player's own: no entity, ``Ref`` id ``PLAYER``.
  A member's character is the person of the world with its name when the story has one,
  else a ``Ref`` of its own (a negative id, never an entity's) until the story names them.
- A player character the story never placed stands where the lead stands: the party
  starts together (``unplaced``).
- An action happens where its *actor* stands. The actor of a player's action (do, say,
  story) is its author's character, the lead's for the host's and for one written before
  sharing; the actions after it (the reply, a continue) keep that actor until the next
  player's action.
- Present at an action (``gathered``): the people whose place is the actor's; where that
  is the lead's (or the actor was never placed), the lead and the unplaced player
  characters too; and always the actor. Nobody dead. Each once, the lead first.
- Pure: the party is read by ``party_path.party_of``.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from talekeeper.services.world.projection import DEAD, PLAYER, Fold, Ref, unplaced


@dataclass(frozen=True)
class Party:
    """The lead, the other player characters (in the order they joined), and who acts
    along the path: from each depth of ``changes`` (ascending) the actor whose ``Ref`` id
    is at the same place of ``actors``."""

    lead: Ref
    members: tuple[Ref, ...]
    changes: tuple[int, ...] = ()
    actors: tuple[int, ...] = ()
    # Every character that plays or acted but the lead, by ``Ref`` id: the members and
    # any member since removed.
    people: Mapping[int, Ref] = field(default_factory=dict)

    def actor_at(self, depth: int) -> int:
        """The ``Ref`` id of who acts at the action of ``depth`` (the lead before anyone)."""
        i = bisect_right(self.changes, depth) - 1
        return self.actors[i] if i >= 0 else PLAYER

    def ref(self, who: int) -> Ref:
        """The character of ``Ref`` id ``who`` (``PLAYER``: the lead)."""
        return self.lead if who == PLAYER else self.people[who]

    def acting_from(self, depth: int, actor: int) -> Party:
        """The party with ``actor`` acting from ``depth`` on (a turn not written yet)."""
        keep = bisect_left(self.changes, depth)
        return replace(
            self, changes=(*self.changes[:keep], depth), actors=(*self.actors[:keep], actor)
        )

    def everyone(self) -> tuple[Ref, ...]:
        """The lead, then every other character that plays or acted."""
        return (self.lead, *self.people.values())


def gathered(fold: Fold, party: Party, actor: int) -> tuple[Ref, ...]:
    """Who is present at an action of ``actor`` in the state ``fold`` holds."""
    lead_place = fold.location
    placed = actor != PLAYER and actor in fold.places
    here = fold.places[actor] if placed else lead_place
    with_lead = not placed or (
        here is not None and lead_place is not None and here.id == lead_place.id
    )
    found: list[Ref] = [party.lead, *unplaced(fold, party.members)] if with_lead else []
    if here is not None:
        found.extend(
            fold.refs[person]
            for person, place in fold.places.items()
            if place is not None and place.id == here.id and fold.statuses.get(person) != DEAD
        )
    if all(r.id != actor for r in found):
        found.append(party.ref(actor))
    return tuple(found)
