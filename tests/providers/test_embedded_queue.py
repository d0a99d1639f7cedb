"""The embedded narrator's queue: generations run one at a time, in the order asked, on the
provider's own thread; turns waiting their turn hold no thread of the event loop's default
executor (which every ``asyncio.to_thread`` in the app shares), and a waiting turn whose
caller leaves never runs.

``GatedLlama`` (``tests/kit/gated_llama.py``) stands in for llama-cpp-python's ``Llama``
(the one thing the provider lets a caller choose): it streams a short reply in llama.cpp's
event shape, each generation held until the test opens its gate. One test runs the same
queue on the real SmolLM2.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from tests.conftest import threads_setting
from tests.kit.gated_llama import REPLY, GatedLlama, default_pool_size

from talekeeper.core.errors import ProviderError
from talekeeper.providers.base import CompletionRequest, Message
from talekeeper.providers.embedded import EmbeddedProvider


def ask(label: str, mode: str = "chat") -> CompletionRequest:
    if mode == "chat":
        return CompletionRequest(model="embedded", messages=(Message("user", label),))
    return CompletionRequest(model="embedded", mode="completion", prompt=label)


async def streamed(provider: EmbeddedProvider, label: str) -> str:
    return "".join([chunk.text async for chunk in provider.stream(ask(label))])


def test_waiting_generations_leave_the_default_executor_free() -> None:
    llama = GatedLlama()
    provider = EmbeddedProvider(load_narrator=lambda: llama)
    waiting = max(8, default_pool_size() + 2)  # more turns than the default pool has threads

    async def go() -> tuple[float, list[str], str]:
        turns = [asyncio.create_task(streamed(provider, f"turn {i}")) for i in range(waiting)]
        plain = asyncio.create_task(provider.complete(ask("plain", "completion")))
        try:
            await asyncio.sleep(0.3)  # every turn has asked; the first holds the narrator
            started = time.perf_counter()
            await asyncio.wait_for(asyncio.to_thread(time.sleep, 0.01), timeout=5)
            elapsed = time.perf_counter() - started
        finally:
            llama.gate.set()
        texts = await asyncio.gather(*turns)
        return elapsed, texts, (await plain).text

    elapsed, texts, plain = asyncio.run(go())
    assert elapsed < 0.5, f"to_thread work waited {elapsed:.2f} s behind queued generations"
    assert texts == ["".join(REPLY)] * waiting and plain == "".join(REPLY)
    assert llama.order == [f"turn {i}" for i in range(waiting)] + ["plain"]
    assert llama.most_at_once == 1


def test_a_waiting_turn_whose_caller_leaves_never_runs() -> None:
    llama = GatedLlama()
    provider = EmbeddedProvider(load_narrator=lambda: llama)

    async def go() -> list[str]:
        first = asyncio.create_task(streamed(provider, "first"))
        left = asyncio.create_task(streamed(provider, "left"))
        dropped = asyncio.create_task(provider.complete(ask("dropped")))
        last = asyncio.create_task(streamed(provider, "last"))
        await asyncio.sleep(0.2)
        left.cancel()
        dropped.cancel()
        await asyncio.sleep(0.05)
        llama.gate.set()
        return [await first, await last]

    assert asyncio.run(go()) == ["".join(REPLY)] * 2
    assert llama.order == ["first", "last"]


def test_aclose_drops_waiting_generations_with_a_sentence_and_a_later_one_runs() -> None:
    llama = GatedLlama()
    provider = EmbeddedProvider(load_narrator=lambda: llama)

    async def go() -> tuple[str, list[BaseException | str], str]:
        running = asyncio.create_task(streamed(provider, "running"))
        waiting = [
            asyncio.create_task(streamed(provider, "waiting")),
            asyncio.create_task(provider.complete(ask("waiting too"))),
        ]
        await asyncio.sleep(0.2)
        await provider.aclose()
        dropped = await asyncio.gather(*waiting, return_exceptions=True)
        llama.gate.set()
        return await running, dropped, await streamed(provider, "after")

    running, dropped, after = asyncio.run(go())
    assert running == after == "".join(REPLY)
    assert all(isinstance(d, ProviderError) and "shut down" in d.message for d in dropped)
    assert llama.order == ["running", "after"]


@pytest.mark.model
def test_queued_real_generations_keep_the_default_executor_free() -> None:
    provider = EmbeddedProvider(threads=threads_setting())
    request = CompletionRequest(
        model="embedded",
        messages=(Message("system", "You narrate a story."), Message("user", "> You wait.")),
        max_tokens=8,  # the queue is the point, not the prose
    )
    waiting = max(8, default_pool_size() + 2)

    async def turn() -> str:
        return "".join([chunk.text async for chunk in provider.stream(request)])

    async def go() -> tuple[float, float, list[str]]:
        await provider.complete(request)  # the model loads before anything is timed
        started = time.perf_counter()
        await provider.complete(request)
        one = time.perf_counter() - started
        turns = [asyncio.create_task(turn()) for _ in range(waiting)]
        await asyncio.sleep(0.02)  # every turn has asked
        started = time.perf_counter()
        await asyncio.to_thread(time.sleep, 0.001)
        return time.perf_counter() - started, one, await asyncio.gather(*turns)

    delay, one, texts = asyncio.run(go())
    assert len(texts) == waiting and all(text.strip() for text in texts)
    # Behind a queue holding the default threads it would wait for a generation to end.
    assert delay < one / 3, f"to_thread took {delay:.3f} s; one generation takes {one:.3f} s"
