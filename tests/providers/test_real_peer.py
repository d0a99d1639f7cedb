"""A real peer: llama-cpp-python's own OpenAI-compatible server, spoken to by our provider."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest

from talekeeper.providers.base import CompletionRequest, Message
from talekeeper.providers.embedded_models import narrator_path
from talekeeper.providers.openai_compat import OpenAICompatProvider

pytestmark = pytest.mark.model

ALIAS = "smollm2"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def peer_url() -> Iterator[str]:
    port = _free_port()
    process = subprocess.Popen(
        [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(narrator_path()), "--model_alias", ALIAS,
            "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/models", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.3)
        else:
            pytest.fail("llama_cpp.server did not start within 60 s")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def _run(url: str, work):  # type: ignore[no-untyped-def]
    async def go():  # type: ignore[no-untyped-def]
        async with httpx.AsyncClient() as client:
            return await work(OpenAICompatProvider(client, url, timeout=60))

    return asyncio.run(go())


CHAT = CompletionRequest(
    model=ALIAS, messages=(Message("user", "Describe a quiet harbour in one sentence."),),
    max_tokens=24, temperature=0.2,
)  # fmt: skip


def test_model_listing(peer_url: str) -> None:
    assert ALIAS in _run(peer_url, lambda p: p.list_models())


def test_chat_not_streamed(peer_url: str) -> None:
    result = _run(peer_url, lambda p: p.complete(CHAT))
    assert len(result.text.split()) >= 2 and result.tokens_out and result.tokens_out <= 24


def test_chat_streamed(peer_url: str) -> None:
    async def stream(p: OpenAICompatProvider) -> tuple[list[str], str]:
        parts, final = [], ""
        async for chunk in p.stream(CHAT):
            if chunk.done:
                final = chunk.done.text
            else:
                parts.append(chunk.text)
        return parts, final

    parts, final = _run(peer_url, stream)
    assert len(parts) > 1 and "".join(parts) == final and final.strip()


def test_completion(peer_url: str) -> None:
    request = CompletionRequest(
        model=ALIAS, mode="completion", prompt="The harbour was quiet because", max_tokens=16
    )
    assert _run(peer_url, lambda p: p.complete(request)).text.strip()
