"""Health, the connection test and the endpoint's model list: what works, what does not,
and how fast.

None of them raises for a misbehaving model server: each check reports ``ok`` (or the
list) with its latency, or the provider's own actionable message. Only the database
check decides whether the app is up at all.

Each outcome is its own frozen dataclass (a reply, a failure, an embedding, no embedder),
so a result carries only what that outcome has; ``ok`` is derived from the outcome, never
set apart from it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from talekeeper.core.errors import TalekeeperError
from talekeeper.providers.base import CompletionRequest, Message, Provider
from talekeeper.services.endpoints.ai_calls import LoggedModel
from talekeeper.services.endpoints.models import ModelSet

TEST_PROMPT = "Reply with one short sentence that begins a fantasy story."
TEST_REPLY_TOKENS = 24  # enough for a few words of real text, short enough to answer fast
TEST_EMBED_TEXT = "The lighthouse keeper hid the brass key under the third step."
NO_ENDPOINT = (
    "No endpoint URL is set, so only the in-process models can be used. Enter the base URL "
    "of an OpenAI-compatible server (e.g. http://127.0.0.1:11434/v1 for Ollama) to pick "
    "from its models."
)
EMPTY_REPLY = "the model answered with empty text"


@dataclass(frozen=True)
class Reachability:
    """One model's reachability: ``error`` is None exactly when ``ok``."""

    model: str
    provider: str
    ok: bool
    latency_ms: float
    error: str | None = None


@dataclass(frozen=True)
class ModelList:
    """An endpoint's model names, or why they could not be read (``models`` then empty);
    no latency when there was no endpoint to ask."""

    models: tuple[str, ...]
    error: str | None
    latency_ms: float | None


@dataclass(frozen=True)
class CheckFailed:
    """A test call that raised: the provider's own message."""

    model: str
    error: str
    latency_ms: float

    @property
    def ok(self) -> bool:
        return False


@dataclass(frozen=True)
class NarratorReply:
    """The narrator answered; blank text counts as a failure, with its own error."""

    model: str
    text: str
    latency_ms: float
    tokens_out: int | None  # as the server counted them; None when it did not say

    @property
    def ok(self) -> bool:
        return bool(self.text.strip())

    @property
    def error(self) -> str | None:
        return None if self.ok else EMPTY_REPLY


@dataclass(frozen=True)
class Embedded:
    """One text embedded: ``ok`` when the vector has any dimensions."""

    model: str
    dimensions: int
    latency_ms: float

    @property
    def ok(self) -> bool:
        return self.dimensions > 0


@dataclass(frozen=True)
class EmbeddingOff:
    """No embedding model is configured: nothing to test, and nothing wrong."""

    model: str = "none"
    note: str = "the Memory Bank is off"

    @property
    def ok(self) -> bool:
        return True


@dataclass(frozen=True)
class ConnectionTest:
    narrator: NarratorReply | CheckFailed
    embedding: Embedded | CheckFailed | EmbeddingOff

    @property
    def ok(self) -> bool:
        return self.narrator.ok and self.embedding.ok


def _elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


async def check_reachable(model: LoggedModel) -> Reachability:
    """Cheap reachability: list the provider's models; note whether ours is among them."""
    started = time.perf_counter()
    name, provider = model.model, model.provider_name
    try:
        offered = await model.provider.list_models()
    except TalekeeperError as exc:
        return Reachability(name, provider, False, _elapsed_ms(started), exc.message)
    latency = _elapsed_ms(started)
    if name not in offered:
        missing = f"{provider} does not offer {name!r}; it offers: " + (
            ", ".join(offered) or "(none)"
        )
        return Reachability(name, provider, False, latency, missing)
    return Reachability(name, provider, True, latency)


async def endpoint_models(provider: Provider | None) -> ModelList:
    """The names an endpoint offers, sorted and without repeats, or why they could not be
    read."""
    if provider is None:
        return ModelList((), NO_ENDPOINT, None)
    started = time.perf_counter()
    try:
        offered = await provider.list_models()
    except TalekeeperError as exc:
        return ModelList((), exc.message, _elapsed_ms(started))
    names = tuple(sorted(set(offered), key=str.casefold))
    return ModelList(names, None, _elapsed_ms(started))


async def test_connection(models: ModelSet) -> ConnectionTest:
    """A short real generation and one embedding, each timed; failures reported, not raised."""
    narrator = models.narrator
    reply: NarratorReply | CheckFailed
    started = time.perf_counter()
    try:
        result = await narrator.complete(_test_request(models), kind="test")
        reply = NarratorReply(narrator.model, result.text, _elapsed_ms(started), result.tokens_out)
    except TalekeeperError as exc:
        reply = CheckFailed(narrator.model, exc.message, _elapsed_ms(started))
    if models.embedding is None:
        return ConnectionTest(reply, EmbeddingOff())
    return ConnectionTest(reply, await _test_embedding(models.embedding))


def _test_request(models: ModelSet) -> CompletionRequest:
    if models.mode == "completion":
        return CompletionRequest(
            model=models.narrator.model,
            mode="completion",
            prompt=f"{TEST_PROMPT}\n",
            max_tokens=TEST_REPLY_TOKENS,
            temperature=models.temperature,
        )
    return CompletionRequest(
        model=models.narrator.model,
        messages=(Message("user", TEST_PROMPT),),
        max_tokens=TEST_REPLY_TOKENS,
        temperature=models.temperature,
    )


async def _test_embedding(model: LoggedModel) -> Embedded | CheckFailed:
    started = time.perf_counter()
    try:
        result = await model.embed([TEST_EMBED_TEXT], kind="test")
    except TalekeeperError as exc:
        return CheckFailed(model.model, exc.message, _elapsed_ms(started))
    dims = len(result.vectors[0]) if result.vectors else 0
    return Embedded(model.model, dims, _elapsed_ms(started))
