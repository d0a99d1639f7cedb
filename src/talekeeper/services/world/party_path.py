"""The party of a shared adventure along its current path, read in the caller's unit of
work (``party`` says what it is and what it means; docs/sharing.md).

Invariants:

- Writes nothing: a few small reads (who plays, each member character's entity, who
  acted where on the path), and only who plays when at most one plays (no party).
- A member's character is the person of the world named as their persona (by key), a
  member since removed by the persona their actions were written as.
"""

from __future__ import annotations

from talekeeper.services.common.rendering import PLAYER_TYPES
from talekeeper.services.story import sharing
from talekeeper.services.story.tree import Story
from talekeeper.services.world.names import key_of
from talekeeper.services.world.party import Party
from talekeeper.services.world.projection import PLAYER, Ref
from talekeeper.storage.repositories.world import WorldRepository
from talekeeper.storage.vocabulary import EntityKind


def party_of(story: Story, max_depth: int | None = None, turns: bool = True) -> Party | None:
    """The adventure's party along the current path (down to ``max_depth``), or None when
    at most one plays it; without ``turns``, who acts where is not read (the state's
    present people need only who plays)."""
    playing = sharing.people_playing(story.session, story.adventure)
    if len(playing) < 2:
        return None
    host, adventure_id = story.adventure.user_id, story.adventure.id
    repo = WorldRepository(story.session)

    def character(uid: int, name: str) -> Ref:
        row = repo.entity(adventure_id, EntityKind.PERSON, key_of(name))
        if row is None:
            return Ref(-uid, name, EntityKind.PERSON)  # not named by the story yet
        return Ref(row.id, row.name, EntityKind.PERSON)

    by_user = {uid: character(uid, name) for uid, name in playing.items() if uid != host}
    changes: list[int] = []
    actors: list[int] = []
    acted = repo.path_authors(story.lineage(), PLAYER_TYPES, max_depth) if turns else []
    for depth, author, name in acted:
        if author is not None and author != host and author not in by_user:
            by_user[author] = character(author, name or "")  # a member since removed
        actor = PLAYER if author is None or author == host else by_user[author].id
        if not actors or actors[-1] != actor:
            changes.append(depth)
            actors.append(actor)
    # (two members who chose one name play one person of the world: listed once)
    members = tuple({by_user[uid].id: by_user[uid] for uid in playing if uid != host}.values())
    people = {r.id: r for r in by_user.values()}
    lead = Ref(PLAYER, playing[host], EntityKind.PERSON)
    return Party(lead, members, tuple(changes), tuple(actors), people)


def cast_of(party: Party | None) -> tuple[tuple[Ref, ...], str | None]:
    """What ``projection.project`` takes of a party: the other player characters (listed
    present with the player until the story places them) and the host's character's
    name; none, and None, for one player."""
    return (party.members, party.lead.name) if party is not None else ((), None)
