"""The Current state section: the world as it stands at the turn (docs/world.md), within a
budget of its own.

Invariants:

- It says where the player is, who is present, what the player carries, the time and
  the open quests, a line each, only the lines that have something to say; a state with
  nothing in it is no section at all. Where several play a shared adventure, the
  player's lines name the host's character, and each other player character has a line
  for where they stand when not with it and one for what they carry (docs/sharing.md).
- It never takes more than its budget (``budgets.CURRENT_STATE``: a share of the prompt,
  ``STATE_TOKENS`` at most): the last lines go first (quests, then time, then the other
  player characters', then what is carried, then who is present), then the location's
  words.
- It floats with the other volatile sections in the ``cache`` layout
  (``floating.FLOATING_ORDER``), so a change of state never moves the prompt's prefix.
"""

from __future__ import annotations

from talekeeper.core.tokens import TokenCounter
from talekeeper.services.prompt.budgets import CURRENT_STATE, left_out_reason
from talekeeper.services.prompt.sections import Section
from talekeeper.services.world.projection import OPEN, WorldState

STATE_TOKENS = CURRENT_STATE.ceiling  # a handful of short lines: where, who, what, when


def state_lines(state: WorldState) -> list[str]:
    """The section's lines; where several play (``state.lead``: the host's character) each
    says whose it is, and each other player character has lines of their own."""
    lines, lead = [], state.lead
    where, present, carrying = (
        (f"{lead} is at", f"Present with {lead}", f"{lead} carries")
        if lead
        else ("Location", "Present", "Carrying")
    )
    if state.location is not None:
        lines.append(f"{where}: {state.location.name}")
    if state.present:
        lines.append(f"{present}: " + ", ".join(r.name for r in state.present))
    if state.inventory:
        lines.append(f"{carrying}: " + ", ".join(r.name for r in state.inventory))
    lines.extend(_party_lines(state))
    if state.time:
        lines.append(f"Time: {state.time}")
    quests = [q.name for q in state.quests if q.state in OPEN]
    if quests:
        lines.append("Open quests: " + "; ".join(quests))
    return lines


def _party_lines(state: WorldState) -> list[str]:
    """Where each other player character stands when not with the host's (those with it
    are present), and what each carries."""
    lines = []
    for member in state.party:
        name = member.who.name
        if not member.here:
            place = member.place.name if member.place is not None else "somewhere unknown"
            lines.append(f"{name} is at: {place}")
        if member.carrying:
            lines.append(f"{name} carries: " + ", ".join(r.name for r in member.carrying))
    return lines


def state_section(state: WorldState, counter: TokenCounter, budget: int = STATE_TOKENS) -> Section:
    """The section within ``budget`` tokens; its reason names the lines the budget left out."""
    lines = state_lines(state)
    shown = list(lines)
    while len(shown) > 1 and counter.count("\n".join(shown)) > budget:
        shown.pop()
    if shown and counter.count(shown[0]) > budget:
        words = shown[0].split()
        while len(words) > 1 and counter.count(" ".join(words)) > budget:
            words.pop()
        shown = [" ".join(words)]
    if not shown:
        return Section("current_state", "", "", budget=budget)
    reason = "the world as the story's events leave it on this path"
    left = [line.split(":", 1)[0] for line in lines[len(shown) :]]
    return Section(
        "current_state", "\n".join(shown), left_out_reason(reason, left, budget), budget=budget
    )
