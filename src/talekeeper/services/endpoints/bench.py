"""Provider benchmark: load time, prompt and generation speed, embedding throughput.

Figures come from real calls through the same ``LoggedModel`` path a turn
uses. Prompt speed is measured with a long prompt and a one-token reply;
generation speed subtracts that prompt time from a run that generates
``GEN_TOKENS`` tokens on a short prompt.
"""

from __future__ import annotations

import os
import platform
import time
from dataclasses import dataclass
from statistics import median

from talekeeper.providers.base import CompletionRequest, Message
from talekeeper.providers.embedded_models import llama_build
from talekeeper.services.endpoints.models import ModelSet

PROMPT_WORDS = 300  # a prompt long enough that its processing dominates one-token replies
GEN_TOKENS = 64
EMBED_TEXTS = 64
ROUNDS = 3  # medians of three, so one hiccup does not set a figure

_SENTENCE = (
    "The caravan crossed the salt flats at dawn, and the guide counted the water skins twice "
    "because the old map promised a well that nobody had seen in years."
)


def machine_description() -> str:
    """The machine a figure was measured on, as every benchmark's report names it."""
    return f"{platform.machine()} · {os.cpu_count()} cores · Python {platform.python_version()}"


def embedded_notes(build: str, features: list[str]) -> tuple[str, ...]:
    return (
        "",
        f"The embedded narrator ran llama.cpp's {build} build (CPU features: "
        f"{', '.join(features) or 'unknown'}; `make install LLAMA_BUILD=portable|native` "
        "chooses it); the chat prompt also carries the embedded narrator's worked example "
        'turn, which is processed but not counted in the prompt size above. "Load + first '
        'call" includes loading the 98 MB GGUF.',
    )


@dataclass
class ProviderBench:
    narrator: str
    embedder: str
    first_call_s: float
    prompt_tokens_per_s: float
    generated_tokens_per_s: float
    embeddings_per_s: float | None
    prompt_tokens: int
    generated_tokens: int
    build: tuple[str, list[str]] = ("unknown", [])  # the embedded narrator's llama.cpp build

    def markdown(self, machine: str) -> str:
        embed = f"{self.embeddings_per_s:.1f}" if self.embeddings_per_s is not None else "—"
        return "\n".join(
            [
                f"Narrator `{self.narrator}`, embedder `{self.embedder}`, on {machine}. "
                f"Medians of {ROUNDS} runs (`talekeeper bench provider`).",
                "",
                "| figure | value |",
                "|---|---|",
                f"| load + first call | {self.first_call_s:.2f} s |",
                f"| prompt processing | {self.prompt_tokens_per_s:.0f} tokens/s "
                f"({self.prompt_tokens}-token prompt) |",
                f"| generation | {self.generated_tokens_per_s:.0f} tokens/s "
                f"({self.generated_tokens} tokens) |",
                f"| embeddings | {embed} texts/s (batches of {EMBED_TEXTS} sentences) |",
                *(embedded_notes(*self.build) if self.narrator == "embedded" else ()),
            ]
        )


def _request(models: ModelSet, text: str, max_tokens: int) -> CompletionRequest:
    if models.mode == "completion":
        return CompletionRequest(
            model=models.narrator.model, mode="completion", prompt=text, max_tokens=max_tokens
        )
    return CompletionRequest(
        model=models.narrator.model, messages=(Message("user", text),), max_tokens=max_tokens
    )


async def bench_provider(models: ModelSet) -> ProviderBench:
    narrator = models.narrator
    counter = narrator.provider.token_counter(narrator.model)
    started = time.perf_counter()
    await narrator.complete(_request(models, "Say hello.", 1), kind="test")
    first_call = time.perf_counter() - started

    long_prompt = " ".join([_SENTENCE] * (PROMPT_WORDS // 28 + 1))
    prompt_tokens = counter.count(long_prompt)
    prompt_times, gen_rates, generated = [], [], 0
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        await narrator.complete(_request(models, long_prompt, 1), kind="test")
        prompt_times.append(time.perf_counter() - t0)
        short = "Tell a long story about a caravan crossing a desert."
        t0 = time.perf_counter()
        reply = await narrator.complete(_request(models, short, GEN_TOKENS), kind="test")
        elapsed = time.perf_counter() - t0
        generated = reply.tokens_out or counter.count(reply.text)
        short_prompt_s = median(prompt_times) * counter.count(short) / max(prompt_tokens, 1)
        gen_rates.append(generated / max(elapsed - short_prompt_s, 1e-6))

    embed_rate = None
    if models.embedding is not None:
        texts = [f"{_SENTENCE} ({i})" for i in range(EMBED_TEXTS)]
        await models.embedding.embed(texts[:1], kind="test")  # load before timing
        rates = []
        for _ in range(ROUNDS):
            t0 = time.perf_counter()
            await models.embedding.embed(texts, kind="test")
            rates.append(EMBED_TEXTS / (time.perf_counter() - t0))
        embed_rate = median(rates)

    return ProviderBench(
        narrator=narrator.model,
        embedder=models.embedding.model if models.embedding else "none",
        first_call_s=first_call,
        prompt_tokens_per_s=prompt_tokens / median(prompt_times),
        generated_tokens_per_s=median(gen_rates),
        embeddings_per_s=embed_rate,
        prompt_tokens=prompt_tokens,
        generated_tokens=generated,
        build=llama_build() if narrator.model == "embedded" else ("unknown", []),
    )
