"""The benchmarks' fake models that are not the double, and the rows they would have written.

- ``ZeroProvider`` answers at once: the fixed ``REPLY`` (a typical narration's length, its
  usage counted with the real cl100k counter), the same unit vector for every text. Its
  turns cost everything a turn costs but the model.
- ``zero_models``: a user's ``ModelSet`` with every model a ``ZeroProvider`` behind a real
  ``LoggedModel``, so the AI call record is written as in production.
- ``unit_vector`` and ``memory_row``: a Memory Bank for a bulk insert, without a model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import numpy as np

from talekeeper.bootstrap import Runtime
from talekeeper.core.tokens import BpeCounter, TokenCounter
from talekeeper.providers.base import Chunk, Completion, CompletionRequest, Embeddings, ProviderInfo
from talekeeper.services.endpoints.ai_calls import LoggedModel
from talekeeper.services.endpoints.models import ModelSet
from talekeeper.services.memory.authority import classify
from talekeeper.services.memory.cache import pack
from talekeeper.services.memory.terms import term_set

Row = dict[str, Any]
EMBED_DIM = 384  # all-MiniLM-L6-v2's, the shipped embedder
# About 130 tokens: the story the turns extend stays like the one a benchmark inserted.
REPLY = (
    "The tide pulls at the pilings as the lantern gutters, and for a moment the whole "
    "harbor holds its breath. Somewhere below the pier a bell answers yours, slow and "
    "patient, as if it had been waiting all night for someone to ring first. Old Maren "
    "sets down her net without a word. The fog thickens along the breakwater until the "
    "cliff lamps are only smudges of gold, and the gulls fall quiet on the ledger-house "
    "roof. When the bell sounds again it is closer, and under it you hear oars: careful, "
    "unhurried strokes, the rhythm of someone who knows exactly where the rocks lie."
)


class ZeroProvider:
    """A provider that answers at once: a fixed reply, fixed vectors, real token counts."""

    info = ProviderInfo(name="zero")

    def __init__(self) -> None:
        self.counter = BpeCounter()
        self.reply_tokens = self.counter.count(REPLY)
        self.vector = [1.0 / EMBED_DIM**0.5] * EMBED_DIM

    def _completion(self, request: CompletionRequest) -> Completion:
        # A server reports its own usage; the prompt count is the model's work, not ours.
        return Completion(REPLY, request.model, "stop", None, self.reply_tokens)

    async def complete(self, request: CompletionRequest) -> Completion:
        return self._completion(request)

    async def stream(self, request: CompletionRequest) -> AsyncIterator[Chunk]:
        yield Chunk(REPLY)
        yield Chunk("", done=self._completion(request))

    async def embed(self, texts: list[str], model: str) -> Embeddings:
        return Embeddings([list(self.vector) for _ in texts], model, sum(map(len, texts)) // 4)

    async def list_models(self) -> list[str]:
        return ["zero"]

    def token_counter(self, model: str) -> TokenCounter:
        return self.counter

    async def aclose(self) -> None:
        return None


def zero_models(rt: Runtime, uid: int) -> ModelSet:
    """The user's models as ``Runtime.models_for_user`` gives them, every model a
    ``ZeroProvider`` behind its ``LoggedModel``."""
    provider = ZeroProvider()

    def logged(model: str) -> LoggedModel:
        return LoggedModel(provider, model, rt.record_call, user_id=uid)

    models = rt.models_for_user(uid)
    return replace(models, narrator=logged("zero"), summary=None, embedding=logged("zero-embed"))


def unit_vector(rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal(EMBED_DIM).astype(np.float32)
    return v / np.float32(np.linalg.norm(v))


def memory_row(text: str, vector: np.ndarray, source: tuple[int, int], **columns: Any) -> Row:
    """A ``memories`` row over the actions ``source`` (first, last), saved at the last, with
    the authority and terms the memory pass gives ``text``; ``columns`` are the rest."""
    return {
        "depth": source[1],
        "source_start": source[0],
        "source_end": source[1],
        "text": text,
        "authority": classify(text),
        "terms": " ".join(sorted(term_set(text))),
        "vector": pack(vector.tolist()),
        **columns,
    }
