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
from talekeeper.services.world.events import Node, match_names, write_event
from talekeeper.storage.models import Action
from talekeeper.storage.repositories.world import WorldRepository
from talekeeper.storage.vocabulary import EventOrigin


def record(story: Story, row: Action) -> int:
    """Write the rules' events of ``row``, on its own node; how many."""
    at = Node(row.id, row.branch_id, row.depth)
    written = 0
    for found in rules.derive(row.type, row.text):
        try:
            named, value = match_names(story, found.kind, found.subject, found.object, found.value)
        except InvalidInput:
            continue
        write_event(story, at, found.kind, named, value, EventOrigin.RULES, found.evidence)
        written += 1
    return written


def rederive(story: Story, row: Action) -> int:
    """After an edit: ``row``'s derived events replaced by what its text states now."""
    WorldRepository(story.session).delete_derived(row.id)
    return record(story, row)
