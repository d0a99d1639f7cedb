"""A real ``Runtime`` on a migrated SQLite file in a temporary folder, for a benchmark.

``player(embedder, double)`` yields a ``Player``: the runtime (``Runtime.build``
migrates the new database, ``start`` starts the memory worker on the running loop)
configured with the loopback model double as the narrator (``double-narrator``), the
``summary`` writer given (the ``extractive`` writer by default, so the memories are
the product's own and need no model) and one of ``EMBEDDERS``. Invariants:

- The folder, its database and every file the runtime wrote are gone on exit,
  and the runtime is closed first (its worker stopped, its engine disposed).
- ``Player.models`` is what a turn of the local player uses
  (``Runtime.models_for_user``), so what a benchmark measures is what a player gets.
- ``Player.embed`` calls the embedder's provider directly, in batches: the
  benchmark's own vectors leave no AI call record to be counted as the product's.
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from talekeeper.bootstrap import Runtime
from talekeeper.providers.base import Provider
from talekeeper.services.endpoints.models import ModelSet
from talekeeper.services.memory.service import MemorySystem
from talekeeper.settings import load_settings
from talekeeper_testkit.double import ModelDouble

# Half the default (4,096 keeps ~44 actions of the generated prose): the raw history then
# holds ~15-25 actions, so a fact asked about long after has surely left it.
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


@dataclass
class Player:
    rt: Runtime
    double: ModelDouble
    models: ModelSet
    uid: int
    embedder: Embedder

    @property
    def memory(self) -> MemorySystem:
        assert isinstance(self.rt.memory, MemorySystem)
        return self.rt.memory

    @property
    def provider(self) -> Provider:
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
async def player(
    embedder: Embedder,
    double: ModelDouble,
    *,
    context_tokens: int = CONTEXT_TOKENS,
    summary: str = "extractive",
    extra: dict[str, str] | None = None,
) -> AsyncIterator[Player]:
    """A started runtime on a fresh database; ``extra`` adds or overrides settings."""
    with tempfile.TemporaryDirectory(prefix="talekeeper-bench-") as root:
        settings = load_settings(
            {
                "TALEKEEPER_DATA_DIR": str(Path(root) / "data"),
                "TALEKEEPER_ENDPOINT_URL": double.url,
                "TALEKEEPER_MODEL": "double-narrator",
                "TALEKEEPER_SUMMARY_MODEL": summary,
                "TALEKEEPER_EMBEDDING_MODEL": embedder.model,
                "TALEKEEPER_CONTEXT_TOKENS": str(context_tokens),
                **(extra or {}),
            }
        )
        rt = Runtime.build(settings)
        try:
            await rt.start()
            uid = rt.local_user_id()
            yield Player(rt, double, rt.models_for_user(uid), uid, embedder)
        finally:
            await rt.aclose()
