"""Play turns through the real engine, as the web app does.

- ``create_adventure`` makes the adventure as the web route does
  (``adventures.create``), with a story card per companion, as a scenario gives them.
- ``play_turn`` goes through ``TurnRunner.begin``/``run``: the player's action saved,
  retrieval, the context, the double's streamed reply, the save with its Insights
  snapshot and the background job. The double is scripted with the turn's reply and
  the saved text is checked against it (a benchmark whose script and story drift apart
  stops, instead of measuring the wrong story).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass

from benchmarks.kit.runtime import Player

from talekeeper.services.story import adventures
from talekeeper.services.story.view import ActionView
from talekeeper.storage.db import session_scope


@dataclass(frozen=True)
class PathAction:
    id: int
    depth: int
    type: str
    text: str

    @classmethod
    def of(cls, view: ActionView) -> PathAction:
        return cls(view.id, view.depth, view.type, view.text)


@dataclass(frozen=True)
class Turn:
    player: tuple[str, str]  # (kind, text): "do", "say", "story" or "continue"
    reply: str  # the narrator's reply, scripted on the double


def create_adventure(
    p: Player, title: str, opening: str, protagonist: str, companions: Iterable[str] = ()
) -> tuple[int, PathAction]:
    """A new adventure of the local player; its id and its opening."""
    data = {
        "title": title,
        "opening": opening,
        "persona": {"name": protagonist, "pronouns": "they/them"},
    }
    with session_scope(p.rt.sessions) as session:
        story = adventures.create(session, p.uid, data, p.rt.memory)
        for name in companions:
            card = {"name": name, "type": "character", "keywords": [name]}
            adventures.add_card(session, story.adventure, card | {"entry": f"{name}, a companion."})
        session.flush()
        head = story.head()
        assert head is not None
        return story.adventure.id, PathAction(head.id, head.depth, head.type, head.text)


async def play_turn(p: Player, adventure_id: int, turn: Turn) -> list[ActionView]:
    """One turn; what it saved: the player's action (when the turn has one), then the reply."""
    p.double.script(turn.reply)
    kind, text = turn.player
    pending = await asyncio.to_thread(p.rt.turns.begin, adventure_id, p.uid, kind, text, p.models)
    reply: ActionView | None = None
    async for event in p.rt.turns.run(pending, p.models):
        if event.kind == "error":
            raise RuntimeError(f"turn failed: {event.data}")
        if event.kind == "reply":
            reply = event.data["reply"]
    assert reply is not None
    if reply.text != turn.reply.strip():
        raise RuntimeError(
            "the double's reply is out of step with the script: "
            f"{reply.text[-200:]!r} against {turn.reply.strip()[-200:]!r}"
        )
    return [reply] if pending.action is None else [pending.action, reply]
