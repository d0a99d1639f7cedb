"""Playing a world-state story through the real engine, and reading the world after each turn.

The player and its turns are the kit's (``benchmarks.kit.runtime.player``,
``benchmarks.kit.play.play_turn``: ``TurnRunner.begin``/``run``, the double scripted with
the turn's reply, the saved text checked against it). So the world is derived as a player
gets it: the opening, each player action and each reply read by the rules in the unit
that saves it, written as events, and folded by the projection. Invariants:

- After every turn the state is read at the head as the World tab and
  ``GET /api/adventures/{id}/world`` read it (``events.world_at``); the time events of
  the turn's own actions, and whether the fold applied them, come from the path's events
  (``events.path_events``) and the fold's ``ignored`` (``events.state_through``).
- The model calls are the double's recorded requests from the adventure's creation to
  the memory worker's idle after its last turn: the narrator's (model
  ``double-narrator``, one a turn), every other chat or completion request (extra), and
  the embedding requests apart.
"""

from __future__ import annotations

import asyncio
import dataclasses

from benchmarks.kit.play import create_adventure, play_turn
from benchmarks.kit.runtime import Player
from benchmarks.state.generator import StateStory
from benchmarks.state.measure import Observed, Resolver, Score, score_turn

from talekeeper.services.story.tree import Story
from talekeeper.services.world import events
from talekeeper.storage.db import session_scope
from talekeeper.storage.vocabulary import EventKind

NARRATOR = "double-narrator"
COMPLETIONS = ("/chat/completions", "/completions")


def observe(p: Player, adventure_id: int, action_ids: set[int]) -> Observed:
    """The world at the head; ``action_ids``: the turn's own actions (for its time)."""
    with session_scope(p.rt.sessions) as session:
        story = Story.load(session, adventure_id, p.uid, p.rt.memory)
        view = events.world_at(story)
        ignored = set(events.state_through(story, None).ignored)
        times = [
            e.id
            for e in events.path_events(story)
            if e.kind == EventKind.TIME and e.action_id in action_ids
        ]
        return Observed(
            location=view.location.name if view.location else None,
            present=tuple(r.name for r in view.present),
            inventory=tuple(r.name for r in view.inventory),
            time_moved=any(t not in ignored for t in times),
            time_refused=any(t in ignored for t in times),
        )


def count_calls(p: Player, since: int, score: Score) -> None:
    """The double's requests from index ``since`` on, into ``score``'s call counts."""
    for request in p.double.requests[since:]:
        model = request.body.get("model") if isinstance(request.body, dict) else None
        if request.path.endswith(COMPLETIONS):
            if model == NARRATOR:
                score.narrator_calls += 1
            else:
                score.other_calls += 1
        elif request.path.endswith("/embeddings"):
            score.embedding_calls += 1


async def play(p: Player, story: StateStory) -> Score:
    """Play ``story``; its score, with every turn where the product and truth differ."""
    since = len(p.double.requests)
    adventure_id, _ = await asyncio.to_thread(
        create_adventure, p, story.title, story.opening, story.protagonist
    )
    resolver = Resolver.of(story)
    score = Score()
    for index, turn in enumerate(story.turns):
        saved = await play_turn(p, adventure_id, turn.turn)
        seen = await asyncio.to_thread(observe, p, adventure_id, {v.id for v in saved})
        for miss in score_turn(score, resolver, turn.truth, seen, (story.key, index + 1)):
            kind, text = turn.turn.player
            score.misses.append(
                dataclasses.replace(miss, action=f"{kind}: {text}", reply=turn.turn.reply)
            )
    await p.memory.idle()
    count_calls(p, since, score)
    return score
