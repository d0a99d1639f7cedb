"""Playing a generated story through the real engine, then asking every question as a dry
run in each witness mode.

The player and its turns are the kit's (``benchmarks.kit.runtime.player``,
``benchmarks.kit.play.play_turn``): ``TurnRunner.begin``/``run``, the double scripted with
each narration, the saved text checked against it; after every turn the memory worker's
passes run to idle, as between a player's turns. Invariants:

- Questions are dry runs (``TurnRunner.dry_run``, what ``POST .../insights/dry-run``
  answers): nothing is written, so every question meets the same story and the order of
  questions and modes cannot change a figure.
- The mode is switched as ``PATCH /api/adventures/{id}`` switches it
  (``adventures.update``), between passes over all questions.
- A ``story`` question is also planned (``TurnRunner.plan``) for its whole prompt text,
  as the narrator would get it, to compare it byte for byte across modes.
"""

from __future__ import annotations

import asyncio

from benchmarks.kit.play import create_adventure, play_turn
from benchmarks.kit.runtime import Player
from benchmarks.knowing.generator import Fact, KnowingStory, Question
from benchmarks.knowing.measure import MODES, Observation, channels

from talekeeper.services.prompt.build import request
from talekeeper.services.prompt.prefix import prompt_text
from talekeeper.services.story import adventures
from talekeeper.services.story.turns import Pending
from talekeeper.storage.db import session_scope
from talekeeper.storage.models import Adventure


async def play_story(p: Player, story: KnowingStory) -> int:
    """The story played to its end; the adventure's id."""
    adventure_id, _ = await asyncio.to_thread(
        create_adventure, p, f"Who knows ({story.seed})", story.opening, story.protagonist
    )
    for turn in story.turns:
        await play_turn(p, adventure_id, turn)
        await p.memory.idle()
    return adventure_id


def set_mode(p: Player, adventure_id: int, mode: str) -> None:
    with session_scope(p.rt.sessions) as session:
        adventure = session.get(Adventure, adventure_id)
        assert adventure is not None
        adventures.update(session, adventure, {"witness_mode": mode})


async def _story_prompt(p: Player, adventure_id: int, text: str) -> tuple[str, str | None]:
    """The whole prompt a ``story`` action would send, and who it addressed."""
    plan = await p.rt.turns.plan(
        Pending(adventure_id, p.uid), p.models, hypothetical=("story", text)
    )
    addressed = plan.witness.addressed if plan.witness else None
    return prompt_text(request(plan.built, p.models)), addressed


async def ask(
    p: Player, adventure_id: int, seed: int, fact: Fact, q: Question, mode: str
) -> Observation:
    snap = await p.rt.turns.dry_run(adventure_id, p.uid, p.models, q.type, q.text)
    found = channels(snap.sections, fact.phrase, q.who)
    history = next((s.text for s in snap.sections if s.name == "history"), "")
    addressed = snap.witness.addressed if snap.witness else None
    prompt = ""
    if q.type == "story":
        prompt, addressed = await _story_prompt(p, adventure_id, q.text)
    return Observation(
        seed,
        q.fact,
        q.kind,
        mode,
        q.who,
        addressed,
        found,
        fact.phrase in history.lower(),
        prompt,
        channels(snap.sections, fact.place, q.who),
    )


async def ask_all(
    p: Player, adventure_id: int, story: KnowingStory, modes: tuple[str, ...] = MODES
) -> list[Observation]:
    out: list[Observation] = []
    for mode in modes:
        await asyncio.to_thread(set_mode, p, adventure_id, mode)
        for q in story.questions:
            out.append(await ask(p, adventure_id, story.seed, story.facts[q.fact], q, mode))
    return out
