"""``/cards`` in the terminal game: the adventure's story cards, and the lore clerk's card
proposals (docs/world.md, "The lore clerk"), through the same services as the JSON API.

- ``/cards`` lists the story cards, one line each.
- ``/cards proposals`` lists the open proposals the current path supports
  (``world.proposals.listed``): each one's id, name, type, keys and draft entry (an
  update: the card it adds to and its lines, marked "+"), and its evidence, each sentence
  with the ``#ID`` of its action (as ``/show`` numbers actions). None is one line that
  says what makes one.
- ``/cards accept N`` makes proposal N a card as drafted
  (``story.adventures.accept_proposal``) and names the card; ``/cards dismiss N``
  dismisses it; ``/cards reopen N`` makes a dismissed one open again.

Invariants: each command is one unit of work on the player's story (``Terminal.on_story``),
so a proposal of another adventure is "no card proposal N". A refusal (N not a number,
no such proposal, not open, no longer supported by the path) is the service's own one-line
message, raised before the unit of work commits: nothing changes.
"""

from __future__ import annotations

from collections.abc import Callable

from talekeeper.cli.common import number_arg
from talekeeper.core.errors import InvalidInput
from talekeeper.services.cards.rules import CardView
from talekeeper.services.common.vocabulary import ProposalKind
from talekeeper.services.story import adventures
from talekeeper.services.story.tree import Story
from talekeeper.services.world import proposals
from talekeeper.services.world.proposals import ProposalView

USAGE = (
    "Usage: /cards, /cards proposals, /cards accept N, /cards dismiss N or /cards reopen N "
    "(N: a proposal's number, as /cards proposals lists them)."
)
NONE_PROPOSED = (
    "No card proposals: a name the story uses in three actions of this path, with no "
    "card of its own, is proposed as one after the turn."
)


def run(story: Story, arg: str) -> list[str]:
    """What ``/cards ARG`` prints, having done what it asks."""
    verb, _, rest = arg.partition(" ")
    if not verb:
        return card_lines(adventures.cards(story.session, story.adventure))
    if verb == "proposals" and not rest.strip():
        return proposal_lines(proposals.listed(story))
    act = _ACTS.get(verb)
    if act is None:
        raise InvalidInput(USAGE)
    return [act(story, number_arg(rest, f"/cards {verb} N"))]


def card_lines(cards: list[CardView]) -> list[str]:
    if not cards:
        return ["(no story cards yet)"]
    return [
        f"  #{c.id} {c.name} ({c.type}): {', '.join(c.keywords)}"
        + (" [always on]" if c.always_on else "")
        for c in cards
    ]


def proposal_lines(listed: list[ProposalView]) -> list[str]:
    if not listed:
        return [NONE_PROPOSED]
    lines = ["Card proposals (/cards accept N, /cards dismiss N):"]
    for p in listed:
        if p.kind == ProposalKind.UPDATE:  # lines after the card's entry, its text kept
            lines.append(f"  proposal {p.id}: add to card #{p.card_id} {p.name}")
            lines.append(f"    + {p.entry}")
        else:
            lines.append(f"  proposal {p.id}: {p.name} ({p.type}), keys: {', '.join(p.keys)}")
            lines.append(f"    draft: {p.entry}")
        lines.extend(f"    from #{e.action_id}: {e.text}" for e in p.evidence)
    return lines


def _accept(story: Story, proposal_id: int) -> str:
    card = adventures.accept_proposal(story, proposal_id, {})  # the draft as it is
    return f"(proposal {proposal_id} accepted: card #{card.id}, {card.name})"


def _dismiss(story: Story, proposal_id: int) -> str:
    return f"(proposal {proposal_id} dismissed: {proposals.dismiss(story, proposal_id).name})"


def _reopen(story: Story, proposal_id: int) -> str:
    return f"(proposal {proposal_id} reopened: {proposals.reopen(story, proposal_id).name})"


_ACTS: dict[str, Callable[[Story, int], str]] = {
    "accept": _accept,
    "dismiss": _dismiss,
    "reopen": _reopen,
}
