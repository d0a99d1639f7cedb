"""The embedded default, for real: SmolLM2 on llama.cpp and MiniLM on onnxruntime."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from tests.conftest import LOCAL, make_settings, threads_setting

from talekeeper.bootstrap import Runtime
from talekeeper.core.errors import ConfigurationError
from talekeeper.providers.base import CompletionRequest, Message
from talekeeper.providers.embedded import (
    EMBEDDING_DIMS,
    EXAMPLE_TURNS,
    EmbeddedProvider,
    with_example,
)
from talekeeper.settings import load_settings
from talekeeper.web.app import create_app

pytestmark = pytest.mark.model

REQUEST = CompletionRequest(
    model="embedded",
    messages=(Message("system", "You narrate a story."), Message("user", "> You enter the inn.")),
    max_tokens=24,
)


def test_nothing_loads_until_first_use_and_the_example_turns_are_in_the_prompt() -> None:
    provider = EmbeddedProvider(threads=threads_setting())
    assert provider.loaded() == {"narrator": False, "embedder": False}
    messages = with_example(REQUEST)
    worked = ["user", "assistant"] * len(EXAMPLE_TURNS)
    assert len(EXAMPLE_TURNS) >= 2  # a `do` and a `say`, answered (docs/voice.md)
    assert [m.role for m in messages] == ["system", *worked, "user"]
    assert messages[2].content == EXAMPLE_TURNS[0][1] and messages[-1] == REQUEST.messages[-1]
    assert provider.info.placeholder is True


def test_the_embedded_narrator_streams_real_text_and_counts_its_tokens() -> None:
    provider = EmbeddedProvider(threads=threads_setting())

    async def go() -> tuple[str, str]:
        parts, final = [], ""
        async for chunk in provider.stream(REQUEST):
            parts.append(chunk.text)
            if chunk.done:
                final = chunk.done.text
        return "".join(parts), final

    joined, final = asyncio.run(go())
    assert joined == final and len(final.split()) >= 3
    counter = provider.token_counter("embedded")
    assert 0 < counter.count(final) <= 24
    assert counter.head("one two three four", 2) != "one two three four"


def test_the_embedded_embedder_gives_normalised_384_vectors_that_mean_something() -> None:
    provider = EmbeddedProvider(threads=threads_setting())
    texts = [
        "The red dragon sleeps in the cave.",
        "A red dragon is sleeping inside a cave.",
        "Quarterly tax forms for the accountant.",
    ]
    vectors = np.array(asyncio.run(provider.embed(texts, "embedded")).vectors)
    assert vectors.shape == (3, EMBEDDING_DIMS)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-4)
    sims = vectors @ vectors.T
    assert sims[0, 1] > 0.8 > 0.3 > sims[0, 2]


def test_a_fresh_install_is_green_and_test_connection_generates_text(tmp_path: Path) -> None:
    with TestClient(create_app(make_settings(tmp_path)), base_url=LOCAL) as client:
        health = client.get("/api/health").json()
        assert health["status"] == "ok" and health["models"]["narrator"] == "embedded"
        assert health["placeholder_narrator"] is True and health["notes"]
        body = client.post("/api/settings/test-connection").json()
        assert body["ok"] is True, body
        assert len(body["narrator"]["text"].split()) >= 2
        assert body["embedding"]["dimensions"] == EMBEDDING_DIMS


def test_a_prompt_longer_than_the_context_is_a_provider_error_not_a_crash() -> None:
    from talekeeper.core.errors import ProviderError

    provider = EmbeddedProvider(n_ctx=256, threads=threads_setting())
    long = CompletionRequest(
        model="embedded",
        messages=(Message("user", "The waves roll in. " * 200),),
        max_tokens=8,
    )

    async def go() -> None:
        async for _chunk in provider.stream(long):
            pass

    with pytest.raises(ProviderError, match="embedded narrator failed"):
        asyncio.run(go())
    with pytest.raises(ProviderError, match="TALEKEEPER_CONTEXT_TOKENS"):
        asyncio.run(provider.complete(long))


def test_the_embedded_narrator_does_not_loop_on_one_sentence() -> None:
    """Greedy decoding of this prompt repeats "It's a massive, ancient structure..." to the
    end of the reply without the repeat penalty (measured); with it, no sentence repeats."""
    import re
    from collections import Counter

    opening = (
        "You reach Gullreach at dusk with salt in your teeth and a tin of brine-oil strapped to "
        "your back. The village is dark. Every lamp along the harbour wall has gone out. Old "
        'Maren waits for you at the foot of the stone steps. "You\'re late, apprentice," she '
        "says."
    )
    system = (
        "Write in second person, present tense. Keep each passage to one or two short "
        "paragraphs of concrete, sensory prose with a thread of quiet dread and stubborn hope."
    )
    request = CompletionRequest(
        model="embedded",
        messages=(
            Message("system", system),
            Message("user", "[Story start]"),
            Message("assistant", opening),
            Message("user", "> You look up at the Great Lantern."),
        ),
        max_tokens=200,
        temperature=0.0,  # greedy: the same text every run
    )
    text = asyncio.run(EmbeddedProvider(threads=threads_setting()).complete(request)).text
    sentences = [s.strip().lower() for s in re.split(r"[.!?]+", text) if len(s.strip()) > 20]
    repeats = Counter(sentences).most_common(1)[0][1] if sentences else 0
    assert len(sentences) >= 2 and repeats == 1, text


@pytest.mark.parametrize("threads", ["1", "0"])
def test_the_threads_setting_reaches_the_narrator_and_the_embedder(
    tmp_path: Path, threads: str
) -> None:
    """TALEKEEPER_THREADS gives both models their CPU threads; 0 means one per CPU."""
    runtime = Runtime.build(make_settings(tmp_path, threads=threads))
    try:
        provider = runtime.embedded
        expected = int(threads) or (os.cpu_count() or 1)
        assert provider.narrator.get().n_threads == expected
        assert provider.vocab.get().n_threads == expected
        options = provider.embedder.get()._session.get_session_options()
        assert options.intra_op_num_threads == expected
    finally:
        asyncio.run(runtime.aclose())


def test_a_threads_setting_below_zero_is_refused_naming_the_setting() -> None:
    with pytest.raises(ConfigurationError) as refused:
        load_settings({"TALEKEEPER_THREADS": "-2"})
    assert "TALEKEEPER_THREADS" in refused.value.message
