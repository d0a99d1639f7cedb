"""Who saw what: the people present at each action of a path, derived from the world's
events, never asked of a model (docs/world.md, "Who saw what").

Invariants:

- Pure: the same (depth, fact) steps, oldest first, give the same ``Presence``. The
  steps are the path's events exactly as ``projection.project`` takes them (the caller
  passes only events of active actions on the path, none dismissed), so retry, undo, edit
  and fork keep witnesses right by construction; nothing about them is stored.
- *Present at an action* means present in the state after that action's own events:
  someone who arrives in it saw it, someone who leaves in it, or dies in it, did not. An
  action with no events has the presence of the state before it.
- ``Presence.at(depth)`` equals ``project(events down to depth).present``, people and
  order alike: the fold and its reading of who is present are projection's own (``Fold``,
  ``step``, ``present_of``), stepped once through the path (the property test in
  tests/services/world checks the two agree).
- What someone was told is their ``learned`` events among the same steps (``told_to``):
  read from the steps a turn reads, never from events beyond them (a retried reply's).
- An event's witnesses are those present at its action. A memory's witnesses are those
  present at every action of its source stretch (``throughout``), in the order they
  came. The player's character witnessed everything it was there for and is never
  listed: it is no entity.
- With a ``party`` (a shared adventure several play), who is present at an action is who
  stands where its actor stands (``party.gathered``): the host's character listed
  (``PLAYER``) where it was, and only there. Without one, nothing here changes.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import groupby
from operator import itemgetter

# Projection's fold, reused rather than copied, so what a step does is said in one place;
# ``project`` only hands back the state at the end, and folding every prefix again is
# quadratic (about 100 s for a 3,000-action path).
from talekeeper.services.world.party import Party, gathered
from talekeeper.services.world.projection import PLAYER, Fact, Fold, Ref, present_of, step
from talekeeper.storage.vocabulary import EventKind

Step = tuple[int, Fact]  # an event as the path holds it: its action's depth, and the fact


@dataclass(frozen=True)
class Presence:
    """Who was present after each depth of a path that has events (``depths`` ascending,
    ``present[i]`` the people present after the events of ``depths[i]``)."""

    depths: tuple[int, ...]
    present: tuple[tuple[Ref, ...], ...]

    def at(self, depth: int) -> tuple[Ref, ...]:
        """Who is present at the action of ``depth``: after its events, or, when it has
        none, after the deepest events above it (nobody before the first)."""
        i = bisect_right(self.depths, depth) - 1
        return self.present[i] if i >= 0 else ()

    def throughout(self, first: int, last: int) -> tuple[Ref, ...]:
        """Who was present at every action from depth ``first`` to ``last``: those present
        at ``first`` who are in every later set of the stretch, in the order they came."""
        kept = {r.id for r in self.at(first)}
        i = bisect_right(self.depths, first)
        while i < len(self.depths) and self.depths[i] <= last and kept:
            kept &= {r.id for r in self.present[i]}
            i += 1
        return tuple(r for r in self.at(first) if r.id in kept)


def told_to(steps: Iterable[Step], who: int) -> tuple[tuple[int, str], ...]:
    """What entity ``who`` (``PLAYER``: the player's character) learned along the path:
    each ``learned`` event of theirs, its action's depth and its value, oldest first."""
    return tuple(
        (depth, fact.value or "")
        for depth, fact in steps
        if fact.kind is EventKind.LEARNED
        and (fact.subject.id if fact.subject is not None else PLAYER) == who
    )


def presence(steps: Iterable[Step], party: Party | None = None) -> Presence:
    """One pass through the path's events (oldest first: by depth, then as written),
    noting who is present after the last event of each depth; with a ``party``, at the
    place of who acts there (``party.gathered``), noted too before anything (the party
    together) and at each depth where the actor changes."""
    fold = Fold()
    events = {depth: [f for _, f in group] for depth, group in groupby(steps, key=itemgetter(0))}
    marks = sorted({*events, *party.changes, -1}) if party is not None else list(events)
    sets: list[tuple[Ref, ...]] = []
    for depth in marks:
        for fact in events.get(depth, ()):
            step(fold, fact)
        sets.append(
            present_of(fold) if party is None else gathered(fold, party, party.actor_at(depth))
        )
    return Presence(tuple(marks), tuple(sets))
