"""Round-robin turns in a shared adventure (docs/sharing.md, "Round-robin").

Invariants:

- Only while the adventure's ``turn_order`` is ``round_robin`` and at least two people
  play it (its host and a player or co-host). Viewers play no one.
- One action each per round: a player may act again only once every other player has
  acted since their own last action. An action waiting for its turn (a live ticket)
  counts as acted (so does any turn of theirs still waiting: a ticket does not say what
  it is). An action written before sharing, with no author, is the host's.
- The rule reads the current path's newest ``LOOKBACK`` player actions: a player whose
  last action lies further back may act.
- Only actions count: a continue or a retry is not a player's action, and is never
  refused by this rule.
"""

from __future__ import annotations

from talekeeper.core.errors import Conflict
from talekeeper.services.common.rendering import is_player
from talekeeper.services.story import queue
from talekeeper.services.story.sharing import people_playing
from talekeeper.services.story.tree import Story
from talekeeper.storage.vocabulary import TurnOrder

LOOKBACK = 200  # rows of the path read back for a player's last action


def check(story: Story, asker: int) -> None:
    """Refuse ``asker``'s action (409, naming whom it waits for) when the round is not
    theirs; nothing happens outside round-robin play."""
    adventure = story.adventure
    if adventure.turn_order != TurnOrder.ROUND_ROBIN:
        return
    names = people_playing(story.session, adventure)
    if not names:
        return
    since = _acted_since(story, asker)
    if since is None:
        return
    missing = [name for uid, name in names.items() if uid != asker and uid not in since]
    if missing:
        raise Conflict(
            f"This adventure takes turns round-robin: wait for {_listed(missing)} to act "
            "before you act again."
        )


def _acted_since(story: Story, asker: int) -> set[int] | None:
    """Who acted after ``asker``'s last action (waiting actions included); None when
    ``asker`` has not acted in the rows read."""
    host = story.adventure.user_id
    waiting = queue.askers(story.session, story.adventure.id)
    if asker in waiting:  # a turn of theirs waits: only the turns after it came since
        return set(waiting[waiting.index(asker) + 1 :])
    after = set(waiting)
    for row in story.repo.newest(story.lineage(), LOOKBACK):
        if not is_player(row.type):
            continue
        author = row.author_id or host
        if author == asker:
            return after
        after.add(author)
    return None


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
