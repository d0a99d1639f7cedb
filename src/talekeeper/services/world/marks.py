"""The player's marks on one of the world's events, in the caller's unit of work
(docs/world.md): removing it, and making it a secret of the characters it names.

Invariants:

- An event is found by its id among the player's own adventures; another user's event,
  like one that does not exist, is not found (404), whatever it is.
- Removing a player's event deletes it; removing a derived one dismisses it (kept as
  evidence, never counted again).
- ``known_by`` (``secrets.clean_known_by``: a list of names, ``[]`` for a secret the
  player's character keeps alone, None for none) is checked before anything changes, and
  any event may be marked, derived or the player's, dismissed or not: marking changes
  nothing the fold reads, so the state at every action stays as it was.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from talekeeper.core.errors import NotFound
from talekeeper.services.story.access import owned
from talekeeper.services.world import secrets
from talekeeper.services.world.events import EventView, Named, event_view_of
from talekeeper.storage.models import WorldEntity, WorldEvent
from talekeeper.storage.repositories.world import WorldRepository
from talekeeper.storage.vocabulary import EventOrigin


def event_row(session: Session, user_id: int, event_id: int) -> WorldEvent:
    """The event ``event_id`` of one of the user's adventures, or not found."""
    row = WorldRepository(session).event(event_id)
    return owned(session, row, user_id, NotFound(f"There is no world event {event_id}."))


def remove_event(session: Session, user_id: int, event_id: int) -> None:
    """Delete a player's event; dismiss a derived one."""
    row = event_row(session, user_id, event_id)
    if row.origin == EventOrigin.PLAYER:
        WorldRepository(session).delete_event(row)
    else:
        row.dismissed = True
    session.flush()


def mark_event(session: Session, user_id: int, event_id: int, known_by: object) -> EventView:
    """The event made a secret of the characters ``known_by`` names (None: no secret)."""
    row = event_row(session, user_id, event_id)
    row.known_by = secrets.dumps(secrets.clean_known_by(known_by))
    session.flush()

    def entity(entity_id: int | None) -> WorldEntity | None:
        return None if entity_id is None else session.get(WorldEntity, entity_id)

    named = Named(entity(row.subject_id), entity(row.object_id), entity(row.target_id))
    return event_view_of(row, named)
