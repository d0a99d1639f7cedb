"""Playing a generated adventure through the real engine, as the web app would.

A ``Player`` holds one real ``Runtime`` (a migrated SQLite file in a temporary
data dir, the memory worker started on the running loop) configured with the
loopback model double (``talekeeper_testkit.double``) as the narrator, the
``extractive`` summary writer and one embedder. Invariants:

- Every turn goes through ``TurnRunner.begin``/``run`` (the player's action
  saved, retrieval, the context, the double's streamed reply, the save with its
  Insights snapshot and the background job); after each, ``memory.idle()``
  waits for the real memory, summary, embedding and eviction passes, so the
  bank is what production would hold at that point of the story.
- Undo and fork go through ``Story.undo``/``Story.fork`` in their own
  transactions (one per undo, as the web routes do), so the memory system hears
  of them through its ``story_changed`` seam.
- The narrator's reply is the generator's: the double is scripted with it just
  before the turn, and the saved text is checked against it, as is the depth of
  every planted fact (the generator's depths are the engine's).
- Nothing here ranks anything: at a probe, ``probe.measure`` runs first (a dry
  run and the rankings), then the probe is played as a normal turn.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from benchmarks.recall.generator import Adventure, Fork, Probe, Turn, Undo

from talekeeper.bootstrap import Runtime
from talekeeper.providers.base import Provider
from talekeeper.services import adventures
from talekeeper.services.memory.service import MemorySystem
from talekeeper.services.models import ModelSet
from talekeeper.services.tree import Story
from talekeeper.settings import load_settings
from talekeeper.storage.db import session_scope
from talekeeper_testkit.double import ModelDouble

# Half the default (4,096 keeps ~44 actions of this prose): the raw history then holds
# ~15-25 actions, well inside the generator's window, so a probed fact has surely left it.
CONTEXT_TOKENS = 2048
EMBED_BATCH = 32


@dataclass(frozen=True)
class Embedder:
    key: str
    model: str  # the embedding_model setting
    label: str


EMBEDDERS = {
    "double": Embedder("double", "double-embed", "loopback double (hashed words, 64 dims)"),
    "embedded": Embedder("embedded", "embedded", "embedded all-MiniLM-L6-v2 (int8, 384 dims)"),
}


@dataclass(frozen=True)
class PathAction:
    id: int
    depth: int
    type: str
    text: str


@dataclass
class Player:
    rt: Runtime
    double: ModelDouble
    models: ModelSet
    uid: int
    embedder: Embedder
    vectors: dict[int, np.ndarray] = field(default_factory=dict)  # message vectors by action id
    # When a list: each probe's ranking inputs are kept there (``dense.frames``, for ``tune``).
    frames: list[Any] | None = None

    @property
    def memory(self) -> MemorySystem:
        assert isinstance(self.rt.memory, MemorySystem)
        return self.rt.memory

    @property
    def provider(self) -> Provider:
        """The embedder's provider, called directly: the benchmark's own vectors (message
        chunks, the narration query) leave no AI call record."""
        assert self.models.embedding is not None
        return self.models.embedding.provider

    async def embed(self, texts: list[str]) -> list[np.ndarray]:
        assert self.models.embedding is not None
        out: list[np.ndarray] = []
        for start in range(0, len(texts), EMBED_BATCH):
            batch = texts[start : start + EMBED_BATCH]
            result = await self.provider.embed(batch, self.models.embedding.model)
            out += [np.asarray(v, dtype=np.float32) for v in result.vectors]
        return out


@asynccontextmanager
async def player(embedder: Embedder, double: ModelDouble) -> AsyncIterator[Player]:
    with tempfile.TemporaryDirectory(prefix="talekeeper-recall-") as root:
        settings = load_settings(
            {
                "TALEKEEPER_DATA_DIR": str(Path(root) / "data"),
                "TALEKEEPER_ENDPOINT_URL": double.url,
                "TALEKEEPER_MODEL": "double-narrator",
                "TALEKEEPER_SUMMARY_MODEL": "extractive",
                "TALEKEEPER_EMBEDDING_MODEL": embedder.model,
                "TALEKEEPER_CONTEXT_TOKENS": str(CONTEXT_TOKENS),
            }
        )
        rt = Runtime.build(settings)
        try:
            await rt.start()
            uid = rt.local_user_id()
            yield Player(rt, double, rt.models_for_user(uid), uid, embedder)
        finally:
            await rt.aclose()


def create_adventure(p: Player, adv: Adventure) -> tuple[int, PathAction]:
    data = {
        "title": adv.title,
        "opening": adv.opening,
        "persona": {"name": adv.cast.protagonist, "pronouns": "they/them"},
    }
    with session_scope(p.rt.sessions) as session:
        story = adventures.create(session, p.uid, data, p.rt.memory)
        for name in adv.cast.companions:  # the companions are the cast, as in a scenario
            card = {"name": name, "type": "character", "keywords": [name]}
            adventures.add_card(session, story.adventure, card | {"entry": f"{name}, a companion."})
        session.flush()
        head = story.head()
        assert head is not None
        return story.adventure.id, PathAction(head.id, head.depth, head.type, head.text)


async def play_turn(p: Player, adventure_id: int, turn: Turn) -> dict[str, Any]:
    p.double.script(turn.reply)
    kind, text = turn.player
    pending = await asyncio.to_thread(p.rt.turns.begin, adventure_id, p.uid, kind, text, p.models)
    reply: dict[str, Any] | None = None
    async for event in p.rt.turns.run(pending, p.models):
        if event.kind == "error":
            raise RuntimeError(f"turn failed: {event.data}")
        if event.kind == "reply":
            reply = event.data
    assert reply is not None
    if reply["reply"]["text"] != turn.reply.strip():
        raise RuntimeError(
            "the double's reply is out of step with the script: "
            f"{reply['reply']['text'][-200:]!r} against {turn.reply.strip()[-200:]!r}"
        )
    return reply


def _undo(p: Player, adventure_id: int) -> None:
    with session_scope(p.rt.sessions) as session:
        Story.load(session, adventure_id, p.uid, p.rt.memory).undo()


def _fork(p: Player, adventure_id: int, action_id: int) -> None:
    with session_scope(p.rt.sessions) as session:
        Story.load(session, adventure_id, p.uid, p.rt.memory).fork(action_id, "Fork")


Measure = Callable[[Player, Adventure, int, dict[int, PathAction], Probe], Any]
Leave = Callable[[Player, Adventure, int, str], Any]


async def play(p: Player, adv: Adventure, measure: Measure, leaving: Leave) -> list[Any]:
    """Play ``adv``; at each probe call ``measure`` first; before the undo and the fork
    call ``leaving`` (what the bank holds of the fact about to leave the path)."""
    adventure_id, opening = await asyncio.to_thread(create_adventure, p, adv)
    path = {0: opening}
    probes = {probe.op: probe for probe in adv.probes}
    out: list[Any] = []
    for index, op in enumerate(adv.ops):
        if isinstance(op, Turn):
            if index in probes:
                out.append(await measure(p, adv, adventure_id, path, probes[index]))
            reply = await play_turn(p, adventure_id, op)
            for view in (reply["action"], reply["reply"]):
                path[view["depth"]] = PathAction(
                    view["id"], view["depth"], view["type"], view["text"]
                )
            if op.plants is not None:
                planted = path[adv.planted[op.plants]]
                assert adv.facts[op.plants].sentence in planted.text, "planted at the wrong depth"
        elif isinstance(op, Undo):
            out.append(await leaving(p, adv, adventure_id, "undone"))
            for _ in range(op.actions):
                await asyncio.to_thread(_undo, p, adventure_id)
                del path[max(path)]
        else:
            assert isinstance(op, Fork)
            out.append(await leaving(p, adv, adventure_id, "forked"))
            await asyncio.to_thread(_fork, p, adventure_id, path[op.depth].id)
            for depth in [d for d in path if d > op.depth]:
                del path[depth]
        await p.memory.idle()
    return out
