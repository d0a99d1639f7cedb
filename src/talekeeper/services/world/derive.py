"""Events derived from the story's text, written on the action that states them.

Invariants:

- Every action written to the story (the player's, a reply, a retry's new take, the
  opening) is read by the rules (``rules.derive``) in the unit that writes it, and its
  events are written on its own node with origin ``rules``: the turn costs no model call
  for them.
- An edit reads the action again: its derived events (dismissed or not) are replaced by
  what the new text states; the player's own events on it stay.
- A name the rules found that no entity can carry (no letter or digit, too long) is left
  out, never an error: the story's text is the player's, not a request to refuse.
"""

from __future__ import annotations

from talekeeper.core.errors import InvalidInput
from talekeeper.services.story.tree import Story
from talekeeper.services.world import rules
from talekeeper.services.world.events import ROLES, entity_for
from talekeeper.storage.models import Action, WorldEntity, WorldEvent
from talekeeper.storage.repositories.world import WorldRepository
from talekeeper.storage.vocabulary import EntityKind, EventKind, EventOrigin


def _named(story: Story, kind: EntityKind | None, name: str | None) -> WorldEntity | None:
    if kind is None or name is None:
        return None
    return entity_for(story, kind, name, "name")


def record(story: Story, row: Action) -> int:
    """Write the rules' events of ``row``; how many."""
    world = WorldRepository(story.session)
    written = 0
    for found in rules.derive(row.type, row.text):
        roles = ROLES[found.kind]
        try:
            subject = _named(story, roles.subject, found.subject)
            thing = _named(story, roles.object, found.object)
            target = None
            value = found.value
            if found.kind is EventKind.GAVE:
                target, value = _named(story, EntityKind.PERSON, found.value), None
        except InvalidInput:
            continue
        world.add_event(
            WorldEvent(
                adventure_id=row.adventure_id,
                action_id=row.id,
                branch_id=row.branch_id,
                depth=row.depth,
                kind=found.kind,
                subject_id=subject.id if subject else None,
                object_id=thing.id if thing else None,
                target_id=target.id if target else None,
                value=value,
                origin=EventOrigin.RULES,
                evidence=found.evidence,
            )
        )
        written += 1
    return written


def rederive(story: Story, row: Action) -> int:
    """After an edit: ``row``'s derived events replaced by what its text states now."""
    WorldRepository(story.session).delete_derived(row.id)
    return record(story, row)
