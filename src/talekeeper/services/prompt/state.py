"""The Current state section: the world as it stands at the turn (docs/world.md), within a
budget of its own.

Invariants:

- It says where the player is, who is present, what the player carries, the time and
  the open quests, a line each, only the lines that have something to say; a state with
  nothing in it is no section at all.
- It never takes more than ``STATE_TOKENS``: the last lines go first (quests, then time,
  then what is carried, then who is present), then the location's words.
- It floats with the other volatile sections in the ``cache`` layout
  (``floating.FLOATING_ORDER``), so a change of state never moves the prompt's prefix.
"""

from __future__ import annotations

from talekeeper.core.tokens import TokenCounter
from talekeeper.services.prompt.sections import Section
from talekeeper.services.world.projection import OPEN, WorldState

STATE_TOKENS = 120  # a handful of short lines: where, who, what, when


def state_lines(state: WorldState) -> list[str]:
    lines = []
    if state.location is not None:
        lines.append(f"Location: {state.location.name}")
    if state.present:
        lines.append("Present: " + ", ".join(r.name for r in state.present))
    if state.inventory:
        lines.append("Carrying: " + ", ".join(r.name for r in state.inventory))
    if state.time:
        lines.append(f"Time: {state.time}")
    quests = [q.name for q in state.quests if q.state in OPEN]
    if quests:
        lines.append("Open quests: " + "; ".join(quests))
    return lines


def state_section(state: WorldState, counter: TokenCounter) -> Section:
    lines = state_lines(state)
    while len(lines) > 1 and counter.count("\n".join(lines)) > STATE_TOKENS:
        lines.pop()
    if lines and counter.count(lines[0]) > STATE_TOKENS:
        words = lines[0].split()
        while len(words) > 1 and counter.count(" ".join(words)) > STATE_TOKENS:
            words.pop()
        lines = [" ".join(words)]
    reason = "the world as the story's events leave it on this path" if lines else ""
    return Section("current_state", "\n".join(lines), reason)
