"""``/world`` in the terminal game: the world as it stands, and the player's own events
(docs/world.md), through the same services as the JSON API.

- ``/world`` prints the state at the head (a line for each thing known) and the newest
  events of the path with their ids and origins.
- ``/world set KIND [subject=NAME] [object=NAME] [value=TEXT]`` adds a player's event on
  the head; a value with spaces is quoted (``object="the brass key"``).
- ``/world remove ID`` removes a player's event, or dismisses a derived one.

A malformed line is one sentence that says what to write, as every command's refusal.
"""

from __future__ import annotations

import shlex

from talekeeper.core.errors import InvalidInput
from talekeeper.services.common.vocabulary import EventKind
from talekeeper.services.story.tree import Story
from talekeeper.services.world import events
from talekeeper.services.world.events import GivenEvent

USAGE = (
    "Usage: /world, /world set KIND [subject=NAME] [object=NAME] [value=TEXT] "
    '(quote a name with spaces: object="the brass key"), or /world remove ID.'
)
SHOWN_EVENTS = 8  # the newest events /world lists
ROLES = ("subject", "object", "value")


def state_lines(story: Story) -> list[str]:
    """The state at the head, then the path's newest events."""
    view = events.world_at(story)
    lines = []
    if view.location is not None:
        lines.append(f"Location: {view.location.name}")
    if view.present:
        lines.append("Present: " + ", ".join(r.name for r in view.present))
    lines.append("Carrying: " + (", ".join(r.name for r in view.inventory) or "nothing"))
    if view.time is not None:
        lines.append(f"Time: {view.time.text}")
    for quest in view.quests:
        lines.append(f"Quest: {quest.name} ({quest.state})")
    newest = events.path_events(story)[-SHOWN_EVENTS:]
    if newest:
        lines.append("Newest events:")
    for e in newest:
        roles = " ".join(
            f"{name}={value!r}"
            for name, value in (("subject", e.subject), ("object", e.object), ("value", e.value))
            if value is not None
        )
        lines.append(f"  #{e.id} {e.kind.value} {roles} ({e.origin.value}, action {e.action_id})")
    return lines


def parse_event(arg: str) -> GivenEvent:
    """``KIND [subject=NAME] [object=NAME] [value=TEXT]`` as a player's event."""
    try:
        words = shlex.split(arg)
    except ValueError:
        raise InvalidInput(USAGE) from None
    if not words:
        raise InvalidInput(USAGE)
    try:
        kind = EventKind(words[0].lower())
    except ValueError:
        raise InvalidInput(
            f"There is no event kind {words[0]!r}; the kinds are: "
            + ", ".join(k.value for k in EventKind)
            + "."
        ) from None
    roles: dict[str, str] = {}
    for word in words[1:]:
        name, sep, value = word.partition("=")
        if not sep or name not in ROLES or name in roles:
            raise InvalidInput(USAGE)
        roles[name] = value
    return GivenEvent(kind, roles.get("subject"), roles.get("object"), roles.get("value"))
