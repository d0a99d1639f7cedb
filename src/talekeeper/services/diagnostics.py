"""Health, the connection test and the endpoint's model list: what works, what does not,
and how fast.

None of them raises for a misbehaving model server: each check reports ``ok`` (or the
list) with its latency, or the provider's own actionable message. Only the database
check decides whether the app is up at all.
"""

from __future__ import annotations

import time
from typing import Any

from talekeeper.core.errors import TalekeeperError
from talekeeper.providers.base import CompletionRequest, Message, Provider
from talekeeper.services.ai_calls import LoggedModel
from talekeeper.services.models import ModelSet

TEST_PROMPT = "Reply with one short sentence that begins a fantasy story."
TEST_REPLY_TOKENS = 24  # enough for a few words of real text, short enough to answer fast
TEST_EMBED_TEXT = "The lighthouse keeper hid the brass key under the third step."
NO_ENDPOINT = (
    "No endpoint URL is set, so only the in-process models can be used. Enter the base URL "
    "of an OpenAI-compatible server (e.g. http://127.0.0.1:11434/v1 for Ollama) to pick "
    "from its models."
)


def _elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)


async def check_reachable(model: LoggedModel) -> dict[str, Any]:
    """Cheap reachability: list the provider's models; note whether ours is among them."""
    started = time.perf_counter()
    report: dict[str, Any] = {"model": model.model, "provider": model.provider_name}
    try:
        offered = await model.provider.list_models()
    except TalekeeperError as exc:
        return report | {"ok": False, "error": exc.message, "latency_ms": _elapsed_ms(started)}
    report |= {"ok": True, "latency_ms": _elapsed_ms(started)}
    if model.model not in offered:
        report |= {
            "ok": False,
            "error": f"{model.provider_name} does not offer {model.model!r}; it offers: "
            + (", ".join(offered) or "(none)"),
        }
    return report


async def endpoint_models(provider: Provider | None) -> dict[str, Any]:
    """The names an endpoint offers, sorted and without repeats, or why they could not be
    read: ``{"models": [...], "error": None | message, "latency_ms": ...}``."""
    if provider is None:
        return {"models": [], "error": NO_ENDPOINT, "latency_ms": None}
    started = time.perf_counter()
    try:
        offered = await provider.list_models()
    except TalekeeperError as exc:
        return {"models": [], "error": exc.message, "latency_ms": _elapsed_ms(started)}
    names = sorted(set(offered), key=str.casefold)
    return {"models": names, "error": None, "latency_ms": _elapsed_ms(started)}


async def test_connection(models: ModelSet) -> dict[str, Any]:
    """A short real generation and one embedding, each timed; failures reported, not raised."""
    narrator = models.narrator
    report: dict[str, Any] = {"narrator": {"model": narrator.model}}
    started = time.perf_counter()
    try:
        request = _test_request(models)
        result = await narrator.complete(request, kind="test")
        report["narrator"] |= {
            "ok": bool(result.text.strip()),
            "text": result.text,
            "latency_ms": _elapsed_ms(started),
            "tokens_out": result.tokens_out,
        }
        if not result.text.strip():
            report["narrator"]["error"] = "the model answered with empty text"
    except TalekeeperError as exc:
        report["narrator"] |= {
            "ok": False,
            "error": exc.message,
            "latency_ms": _elapsed_ms(started),
        }
    if models.embedding is None:
        report["embedding"] = {"ok": True, "model": "none", "note": "the Memory Bank is off"}
    else:
        report["embedding"] = await _test_embedding(models.embedding)
    report["ok"] = bool(report["narrator"]["ok"] and report["embedding"]["ok"])
    return report


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


async def _test_embedding(model: LoggedModel) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        result = await model.embed([TEST_EMBED_TEXT], kind="test")
    except TalekeeperError as exc:
        return {
            "ok": False,
            "model": model.model,
            "error": exc.message,
            "latency_ms": _elapsed_ms(started),
        }
    dims = len(result.vectors[0]) if result.vectors else 0
    return {
        "ok": dims > 0,
        "model": model.model,
        "dimensions": dims,
        "latency_ms": _elapsed_ms(started),
    }
